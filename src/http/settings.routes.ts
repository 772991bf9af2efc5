// The signed-in user's settings (browser session only):
//   GET  /settings                         account and API tokens (name, created, last used)
//   POST /settings/tokens                  create a token: the answer shows it once (no-store)
//   POST /settings/tokens/:id/revoke       revoke one of the caller's tokens
//   POST /settings/password                change the caller's password (the current one asked): the
//                                          caller's other sessions end, this one stays
//   POST /settings/sign-out-everywhere     end every session of the caller, this one included
// A bearer token cannot reach these pages: a stolen token must not be able to mint more tokens
// or revoke the owner's others. Forms carry the CSRF token in the `_csrf` field. The guards sit on
// these routes only: /settings/retrieval (retrieval.routes.ts) has its own.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import { changeOwnPassword, createApiTokenOnce, endAllSessions, listApiTokens, MAX_TOKEN_LABEL_CHARS, revokeApiTokens, UserError, WrongPassword } from '../effects/auth/users.ts'
import { hashToken } from '../effects/auth/tokens.ts'
import { beginSignInAttempt } from '../effects/auth/sign-in-throttle.ts'
import { formatWait, signInPolicy } from './auth.routes.ts'
import { AccountSettingsPage, SETTINGS_SECTIONS, type AccountSettingsProps } from '../../views/pages/settings.tsx'
import { NOTICE_CODES, noticeText } from '../../views/partials/notices.ts'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { readCookie, requireAuth, requireCsrf, requireSession, SESSION_COOKIE } from './authenticate.ts'
import { badRequest, HttpError } from './http-errors.ts'
import { decodeBody, decodeQuery } from './decode-request.ts'
import { INVISIBLE, quotedName } from '../effects/workspace/name-display.ts'
import { NUL_MESSAGE } from './json-body.ts'
import { storageUsedBytes } from '../effects/workspace/storage-limits.ts'
import { listTrash } from '../effects/workspace/trash.ts'

const SettingsQuery = Schema.Struct({ notice: Schema.optional(Schema.Literals(NOTICE_CODES)) })
const FormNonce = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'expected the form\'s one-time value' }))
const CreateTokenForm = Schema.Struct({ label: Schema.optional(Schema.String.check(Schema.isMaxLength(MAX_TOKEN_LABEL_CHARS))), _once: Schema.optional(FormNonce) })
const PasswordForm = Schema.Struct({
  current: Schema.String.check(Schema.isMaxLength(1024)),
  password: Schema.String.check(Schema.isMaxLength(2048)),
  repeat: Schema.String.check(Schema.isMaxLength(2048)),
})
const NoFields = Schema.Struct({})
const TokenId = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'expected a token id' }))

export function settingsRoutes(ctx: AppContext): Router {
  const router = Router()
  const guard = [requireAuth(), requireSession('settings need a browser session; API tokens cannot manage tokens'), formBody({ limit: '16kb' }), requireCsrf()]
  const sections = [...SETTINGS_SECTIONS, ...siteNav({ retrieval: ctx.retrieval !== undefined }).map((link) => ({ id: 'retrieval', ...link }))]

  async function page(req: Request, res: Response, extra: Partial<AccountSettingsProps> = {}, status = 200) {
    const { user, csrfToken } = req.auth!
    const nav = siteNav({ retrieval: ctx.retrieval !== undefined, admin: user.role === 'admin' })
    const [tokens, usedBytes, trash] = await Promise.all([
      listApiTokens(ctx.db, { userId: user.id, includeRevoked: false }),
      storageUsedBytes(ctx.db, user.id),
      listTrash(ctx.db, { owner: user, limit: 1 }),
    ])
    const storage = { usedBytes, limitMb: ctx.config.userStorageMb, trashBytes: trash.bytes }
    res
      .status(status)
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(await renderPage(AccountSettingsPage({ login: user.login, csrfToken, tokens, storage, nav, sections, ...extra })))
  }

  router.get('/settings', ...guard, async (req, res) => {
    const { notice } = decodeQuery(SettingsQuery, req)
    await page(req, res, notice ? { notice: noticeText({ code: notice }) } : {})
  })

  router.post('/settings/tokens', ...guard, async (req, res) => {
    const { label, _once } = decodeBody(CreateTokenForm, req.body)
    // A label is shown in the tokens table: nothing in it may hide or reverse text (as in a file name).
    if (label?.includes('\u0000')) throw badRequest(NUL_MESSAGE, 'invalid_request')
    const invisible = label === undefined ? null : INVISIBLE.exec(label)
    if (invisible) throw badRequest(`the label ${quotedName(label!)} holds an invisible or control character (U+${invisible[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}); write it without`, 'invalid_request')
    const user = req.auth!.user
    const created = await createApiTokenOnce(ctx.db, { secret: ctx.secret, userId: user.id, label, formNonce: _once })
    if (!created) {
      // The same form sent again (a reload of the page that showed the token): nothing new is made.
      return page(req, res, { notice: 'This form already created its token, which was shown once when it was made. If you did not copy it, revoke it below and create another.' })
    }
    ctx.logger.info('API token created', { login: user.login, tokenId: created.id })
    await page(req, res, { newToken: { label: label?.trim() || null, token: created.token } }, 201)
  })

  router.post('/settings/tokens/:id/revoke', ...guard, async (req, res) => {
    const id = req.params.id
    if (!Schema.is(TokenId)(id)) throw new HttpError(404, 'not_found', 'no such token')
    const user = req.auth!.user
    const revoked = await revokeApiTokens(ctx.db, { userId: user.id, tokenId: id }).catch((error: unknown) => {
      throw error instanceof UserError ? new HttpError(404, 'not_found', 'no such token') : error
    })
    ctx.logger.info('API token revoked', { login: user.login, tokenId: id })
    res.redirect(303, `/settings?notice=${revoked > 0 ? 'token_revoked' : 'token_already_revoked'}`)
  })
  router.post('/settings/password', ...guard, async (req, res) => {
    const { current, password, repeat } = decodeBody(PasswordForm, req.body)
    const user = req.auth!.user
    if (password !== repeat) return page(req, res, { error: 'The new password and its repetition differ; nothing was changed.' }, 400)
    // A wrong current password is a failed sign-in: a stolen session cannot guess the password faster than the sign-in page allows.
    const attempt = await beginSignInAttempt(ctx.db, { login: user.login, address: req.ip, now: (ctx.now ?? Date.now)(), policy: signInPolicy(ctx) })
    if (!attempt.ok) {
      const seconds = Math.ceil(attempt.retryAfterMs / 1000)
      res.set('Retry-After', String(seconds))
      return page(req, res, { error: `Too many wrong passwords for this login. Try again in ${formatWait(seconds)}; nothing was changed.` }, 429)
    }
    try {
      const keepSessionHash = hashToken({ secret: ctx.secret, token: readCookie(req, SESSION_COOKIE)! })
      const { sessionsEnded } = await changeOwnPassword(ctx.db, { userId: user.id, current, next: password, keepSessionHash })
      await attempt.succeeded()
      ctx.logger.info('password changed', { login: user.login, sessionsEnded })
      const others = sessionsEnded === 1 ? '1 other session' : `${sessionsEnded} other sessions`
      await page(req, res, { notice: `Password changed. ${others} of yours ended (other browsers and devices sign in again); this one stays signed in. Your API tokens still work.` })
    } catch (error) {
      if (!(error instanceof UserError)) throw error
      if (!(error instanceof WrongPassword)) await attempt.notChecked() // a new password refused before any check: not a guess
      await page(req, res, { error: error instanceof WrongPassword ? 'The current password is not right; nothing was changed.' : `${error.message}; nothing was changed.` }, 400)
    }
  })

  router.post('/settings/sign-out-everywhere', ...guard, async (req, res) => {
    decodeBody(NoFields, req.body)
    const user = req.auth!.user
    const ended = await endAllSessions(ctx.db, { userId: user.id })
    ctx.logger.info('signed out everywhere', { login: user.login, sessionsEnded: ended })
    res.append('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    res.redirect(303, '/login?notice=signed_out_everywhere')
  })
  return router
}
