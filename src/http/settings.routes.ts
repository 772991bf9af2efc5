// The signed-in user's settings (browser session only):
//   GET  /settings                         account and API tokens (name, created, last used)
//   POST /settings/tokens                  create a token: the answer shows it once (no-store)
//   POST /settings/tokens/:id/revoke       revoke one of the caller's tokens
// A bearer token cannot reach these pages: a stolen token must not be able to mint more tokens
// or revoke the owner's others. Forms carry the CSRF token in the `_csrf` field. The guards sit on
// these routes only: /settings/retrieval (retrieval.routes.ts) has its own.
import { Router, urlencoded, type Request, type Response } from 'express'
import * as Schema from 'effect/Schema'
import { createApiTokenOnce, listApiTokens, MAX_TOKEN_LABEL_CHARS, revokeApiTokens, UserError } from '../effects/auth/users.ts'
import { AccountSettingsPage, SETTINGS_SECTIONS, type AccountSettingsProps } from '../../views/pages/settings.tsx'
import { NOTICE_CODES, noticeText } from '../../views/partials/notices.ts'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { requireAuth, requireCsrf, requireSession } from './authenticate.ts'
import { badRequest, HttpError } from './http-errors.ts'
import { decodeBody, decodeQuery } from './decode-request.ts'
import { INVISIBLE, quotedName } from '../effects/workspace/name-display.ts'
import { NUL_MESSAGE } from './json-body.ts'
import { storageUsedBytes } from '../effects/workspace/storage-limits.ts'

const SettingsQuery = Schema.Struct({ notice: Schema.optional(Schema.Literals(NOTICE_CODES)) })
const FormNonce = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'expected the form\'s one-time value' }))
const CreateTokenForm = Schema.Struct({ label: Schema.optional(Schema.String.check(Schema.isMaxLength(MAX_TOKEN_LABEL_CHARS))), _once: Schema.optional(FormNonce) })
const TokenId = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'expected a token id' }))

export function settingsRoutes(ctx: AppContext): Router {
  const router = Router()
  const guard = [requireAuth(), requireSession('settings need a browser session; API tokens cannot manage tokens'), urlencoded({ extended: false, limit: '16kb' }), requireCsrf()]
  const nav = siteNav({ retrieval: ctx.retrieval !== undefined })
  const sections = [...SETTINGS_SECTIONS, ...nav.map((link) => ({ id: 'retrieval', ...link }))]

  async function page(req: Request, res: Response, extra: Partial<AccountSettingsProps> = {}, status = 200) {
    const { user, csrfToken } = req.auth!
    const [tokens, usedBytes] = await Promise.all([listApiTokens(ctx.db, { userId: user.id, includeRevoked: false }), storageUsedBytes(ctx.db, user.id)])
    const storage = { usedBytes, limitMb: ctx.config.userStorageMb }
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
  return router
}
