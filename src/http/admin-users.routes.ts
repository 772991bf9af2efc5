// Administration → Users (docs/operations.md, Administration), for admins with a browser session:
//   GET  /admin                            → 303 /admin/users
//   GET  /admin/users                      every account (login, role, created, last sign-in, state, live tokens)
//   POST /admin/users                      add one (login, role, _once): its generated password shown once (201)
//   POST /admin/users/:login/password      reset (_once): a generated password shown once; sessions and tokens end
//   POST /admin/users/:login/role          role=admin|member
//   POST /admin/users/:login/disable       ends its sessions and tokens;  /enable lets it sign in again
//   GET  /admin/users/:login/delete        what deleting removes, and the form that confirms it
//   POST /admin/users/:login/delete        confirm=<login>: deletes
// Guards: signed in (else a redirect to /login, or 401 for a POST), an admin (else 403
// `admin_required`, a member's token included), a browser session (an admin's API token gets 403
// `session_required`: a stolen token must not reset passwords or make accounts), CSRF on every POST.
// The use cases are src/effects/auth/accounts.ts (the CLI's too); this only translates. Refusals
// (the last enabled admin, an unknown login, a bad login) are the page with a message. Every change
// leaves an audit line: `admin action` { by, action, target } — never a password or a token.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import * as Schema from 'effect/Schema'
import {
  accountContents,
  addAccount,
  deleteAccount,
  describeAccountContents,
  disableAccount,
  enableAccount,
  LastEnabledAdmin,
  listAccounts,
  exportFirst,
  NoSuchAccount,
  refuseIfLastEnabledAdmin,
  resetPassword,
  setRole,
} from '../effects/auth/accounts.ts'
import { UserError } from '../effects/auth/users.ts'
import { siteNav } from '../../views/layout.tsx'
import { AdminUsersPage, DeleteAccountPage, type AdminUsersProps } from '../../views/pages/admin-users.tsx'
import { renderPage } from '../../views/render.ts'
import { adminGuard } from './admin-guard.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf, requireSession, SESSION_COOKIE } from './authenticate.ts'
import { decodeBody } from './decode-request.ts'
import { plural } from '../effects/plural.ts'

const FormNonce = Schema.String.check(Schema.isPattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: "expected the form's one-time value" }))
const Role = Schema.Literals(['admin', 'member'])
const AddUserForm = Schema.Struct({ login: Schema.String.check(Schema.isMaxLength(200)), role: Role, _once: FormNonce })
const ResetForm = Schema.Struct({ _once: FormNonce })
const RoleForm = Schema.Struct({ role: Role })
const DeleteForm = Schema.Struct({ confirm: Schema.optional(Schema.String.check(Schema.isMaxLength(200))) })
const NoFields = Schema.Struct({})

/** The status a refusal is shown with. */
function refusalStatus(error: UserError): number {
  if (error instanceof NoSuchAccount) return 404
  if (error instanceof LastEnabledAdmin) return 409
  return 400
}


export function adminUsersRoutes(ctx: AppContext): Router {
  const router = Router()
  const guard = [
    ...adminGuard(),
    formBody({ limit: '16kb' }),
    requireCsrf(),
  ]
  const navOf = () => siteNav({ retrieval: ctx.retrieval !== undefined, admin: true })

  async function page(req: Request, res: Response, extra: Partial<AdminUsersProps> = {}, status = 200) {
    const { user, csrfToken } = req.auth!
    const accounts = await listAccounts(ctx.db)
    res
      .status(status)
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(await renderPage(AdminUsersPage({ login: user.login, csrfToken, nav: navOf(), accounts, ...extra })))
  }

  /** Runs an admin's change on `target`: logs it, or shows its refusal on the page. */
  async function change<T>(req: Request, res: Response, { action, target, run }: { action: string; target: string; run: () => Promise<T> }): Promise<{ done: true; value: T } | { done: false }> {
    const by = req.auth!.user.login
    try {
      const value = await run()
      ctx.logger.info('admin action', { by, action, target })
      return { done: true, value }
    } catch (error) {
      if (!(error instanceof UserError)) throw error
      ctx.logger.info('admin action refused', { by, action, target, reason: error.message })
      await page(req, res, { error: error.message }, refusalStatus(error))
      return { done: false }
    }
  }

  /** Where an admin lands after a change to their own account that took their access away. */
  function leftAdministration(req: Request, res: Response, target: string, { signedOut }: { signedOut: boolean }): boolean {
    if (target !== req.auth!.user.login) return false
    if (signedOut) res.append('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    res.redirect(303, signedOut ? '/login' : '/settings')
    return true
  }

  router.get('/admin', ...guard, (_req, res) => res.redirect(303, '/admin/users'))

  router.get('/admin/users', ...guard, async (req, res) => {
    await page(req, res)
  })

  router.post('/admin/users', ...guard, async (req, res) => {
    const { login, role, _once } = decodeBody(AddUserForm, req.body)
    const target = login.trim()
    const by = req.auth!.user
    try {
      const added = await addAccount(ctx.db, { login: target, role, form: { userId: by.id, nonce: _once } })
      if (!added) {
        // The same form sent again (a reload of the page that showed the password): nothing new is made.
        return page(req, res, { notice: 'This form already added its user, whose password was shown once when it was made. If it was not copied, reset that user\'s password below.' })
      }
      ctx.logger.info('admin action', { by: by.login, action: 'user.add', target, role: added.user.role })
      await page(
        req,
        res,
        {
          shownPassword: {
            login: target,
            password: added.password,
            lines: [
              `Added ${target} as ${added.user.role === 'admin' ? 'an admin' : 'a member'}. Their password is below: copy it now, it is shown only this once.`,
              `${target} can change it under Settings after signing in.`,
            ],
          },
        },
        201,
      )
    } catch (error) {
      if (!(error instanceof UserError)) throw error
      ctx.logger.info('admin action refused', { by: by.login, action: 'user.add', target: target.slice(0, 64), reason: error.message })
      await page(req, res, { error: error.message, draft: { login: target, role } }, refusalStatus(error))
    }
  })

  router.post('/admin/users/:login/password', ...guard, async (req, res) => {
    const { _once } = decodeBody(ResetForm, req.body)
    const target = String(req.params.login)
    const by = req.auth!.user
    const outcome = await change(req, res, {
      action: 'user.password_reset',
      target,
      run: () => resetPassword(ctx.db, { login: target, form: { userId: by.id, nonce: _once } }),
    })
    if (!outcome.done) return
    const reset = outcome.value
    if (!reset) return page(req, res, { notice: `This form already reset the password of ${target}, which was shown once. If it was not copied, reset it again.` })
    const yours = target === by.login
    await page(req, res, {
      shownPassword: {
        login: target,
        password: reset.password,
        lines: [
          `New password for ${target}: copy it now, it is shown only this once.`,
          `${plural(reset.sessions, 'browser session')} ended and ${plural(reset.tokens, 'API token')} revoked: ${yours ? 'you sign' : `${target} signs`} in again with this password${yours ? ' (this page was your last view with the old session)' : ''}.`,
        ],
      },
    })
  })

  router.post('/admin/users/:login/role', ...guard, async (req, res) => {
    const { role } = decodeBody(RoleForm, req.body)
    const target = String(req.params.login)
    const outcome = await change(req, res, { action: role === 'admin' ? 'user.promote' : 'user.demote', target, run: () => setRole(ctx.db, { login: target, role }) })
    if (!outcome.done) return
    if (role === 'member' && leftAdministration(req, res, target, { signedOut: false })) return
    await page(req, res, { notice: `${target} is now ${role === 'admin' ? 'an admin' : 'a member'}.` })
  })

  router.post('/admin/users/:login/disable', ...guard, async (req, res) => {
    decodeBody(NoFields, req.body)
    const target = String(req.params.login)
    const outcome = await change(req, res, { action: 'user.disable', target, run: () => disableAccount(ctx.db, { login: target }) })
    if (!outcome.done) return
    if (leftAdministration(req, res, target, { signedOut: true })) return
    const ended = outcome.value
    await page(req, res, { notice: `${target} is disabled: ${plural(ended.sessions, 'browser session')} ended and ${plural(ended.tokens, 'API token')} revoked. Signing in is refused until the account is enabled.` })
  })

  router.post('/admin/users/:login/enable', ...guard, async (req, res) => {
    decodeBody(NoFields, req.body)
    const target = String(req.params.login)
    const outcome = await change(req, res, { action: 'user.enable', target, run: () => enableAccount(ctx.db, { login: target }) })
    if (!outcome.done) return
    await page(req, res, { notice: `${target} is enabled: they can sign in again (no session or API token comes back).` })
  })

  async function confirmation(req: Request, res: Response, target: string, { error, status = 200 }: { error?: string; status?: number } = {}) {
    const { user, csrfToken } = req.auth!
    try {
      await refuseIfLastEnabledAdmin(ctx.db, { login: target })
      const contents = describeAccountContents(await accountContents(ctx.db, { login: target }))
      res
        .status(status)
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(await renderPage(DeleteAccountPage({ login: user.login, csrfToken, nav: navOf(), target, contents, noExport: exportFirst(target), error })))
    } catch (refusal) {
      if (!(refusal instanceof UserError)) throw refusal
      await page(req, res, { error: refusal.message }, refusalStatus(refusal))
    }
  }

  router.get('/admin/users/:login/delete', ...guard, async (req, res) => {
    await confirmation(req, res, String(req.params.login))
  })

  router.post('/admin/users/:login/delete', ...guard, async (req, res) => {
    const { confirm } = decodeBody(DeleteForm, req.body)
    const target = String(req.params.login)
    if (confirm?.trim() !== target) return confirmation(req, res, target, { error: `Nothing was deleted: type "${target}" to confirm.`, status: 400 })
    const outcome = await change(req, res, { action: 'user.delete', target, run: () => deleteAccount(ctx.db, { login: target }) })
    if (!outcome.done) return
    if (leftAdministration(req, res, target, { signedOut: true })) return
    await page(req, res, { notice: `${target} is deleted, with everything the account owned.` })
  })

  return router
}
