// Administration → Retrieval defaults (issue 36), for administrators only:
//   GET  /admin/retrieval   each server-wide value in force, where it comes from, a form to change it
//   POST /admin/retrieval   form: key, action=set (with value) | unset → 303 back; a refused value: 400, the page with why
// The values and their validation are retrieval-server-settings.ts's (`changeServerSetting`, the
// same use case as `knowagent retrieval set|unset`): stored once in PostgreSQL and NOTIFYed, so a
// change applies at once in every process. Mounted whether or not the feature runs (the page says
// so). A session needs the CSRF token on every post; an administrator's API token may post too.
import { type Request, type Response, Router } from 'express'
import { formBody } from './body-limit.ts'
import {
  changeServerSetting,
  decodeServerSettings,
  MAX_CHAT_TIMEOUT_MS,
  MIN_CHAT_TIMEOUT_MS,
  readServerSettingsDocument,
  SERVER_SETTING_KEYS,
  type ServerSettingKey,
  type ServerSettingsDocument,
  viewServerSettings,
} from '../effects/retrieval/retrieval-server-settings.ts'
import { siteNav } from '../../views/layout.tsx'
import { ADMIN_RETRIEVAL_PATH, type AdminRetrievalSetting, AdminRetrievalPage } from '../../views/pages/admin-retrieval.tsx'
import { renderPage } from '../../views/render.ts'
import { adminGuard } from './admin-guard.ts'
import { HttpError } from './http-errors.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { redirectHtmxToSignIn } from './fragment-errors.ts'

const LABELS: Record<ServerSettingKey, { label: string; hint: string; noneText: string; numeric?: boolean }> = {
  workspaceId: {
    label: 'Default workspace id',
    hint: 'The Bailian workspace of every user who has not set their own (a user’s own workspace id wins over this one, and this one over the config file).',
    noneText: 'none',
  },
  endpointHost: {
    label: 'Endpoint host',
    hint: 'A host name or an http(s) URL; {workspaceId} is replaced by the workspace id, and no scheme means https.',
    noneText: 'none',
  },
  agentVersion: {
    label: 'Agent version',
    hint: 'The agent_version sent on search and chat (e.g. beta for a draft): 1–64 characters without spaces.',
    noneText: 'none (the published version)',
  },
  chatTimeoutMs: {
    label: 'Chat time limit (ms)',
    hint: `The time limit of one kb_chat call, in milliseconds: ${MIN_CHAT_TIMEOUT_MS}–${MAX_CHAT_TIMEOUT_MS}.`,
    noneText: 'none',
    numeric: true,
  },
}

const NOTICES: Record<string, string> = {
  saved: 'Saved: every server uses it from its next call.',
  unset: 'Back to the config file’s value: every server uses it from its next call.',
}

export function adminRetrievalRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(ADMIN_RETRIEVAL_PATH, redirectHtmxToSignIn(), ...adminGuard(), formBody({ limit: '16kb' }), requireCsrf())

  const render = async (
    req: Request,
    res: Response,
    { status = 200, notice, refused }: { status?: number; notice?: string | undefined; refused?: { key: ServerSettingKey; value: string; message: string } } = {},
  ) => {
    // The database's document, not this process's copy: the page shows what every process is told to use.
    const stored = decodeServerSettings(await readServerSettingsDocument(ctx.db))
    const document: ServerSettingsDocument = stored.ok ? stored.value : {}
    const settings: AdminRetrievalSetting[] = viewServerSettings(ctx.config.retrievalBailian, document).map((view) => {
      const text = LABELS[view.key]
      return {
        key: view.key,
        label: text.label,
        hint: text.hint,
        noneText: text.noneText,
        value: view.value === undefined ? '' : String(view.value),
        source: view.source,
        configValue: view.configValue === undefined ? '' : String(view.configValue),
        inputMode: text.numeric ? 'numeric' : undefined,
        refused: refused?.key === view.key ? { value: refused.value, message: refused.message } : undefined,
      }
    })
    const user = req.auth!.user
    res
      .status(status)
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(
        await renderPage(
          AdminRetrievalPage({
            login: user.login,
            csrfToken: req.auth!.csrfToken,
            nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: true }),
            settings,
            featureOn: ctx.config.retrievalBailian.enabled,
            storedProblem: stored.ok ? undefined : stored.message,
            notice,
            error: refused ? `${LABELS[refused.key].label} was not changed: ${refused.message}.` : undefined,
          }),
        ),
      )
  }

  router.get(ADMIN_RETRIEVAL_PATH, async (req, res) => {
    await render(req, res, { notice: typeof req.query.notice === 'string' ? NOTICES[req.query.notice] : undefined })
  })

  router.post(ADMIN_RETRIEVAL_PATH, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>
    const key = SERVER_SETTING_KEYS.find((name) => name === body.key)
    const action = body.action === 'unset' ? 'unset' : 'set'
    // A form field's surrounding spaces are the browser's or the clipboard's, not the value's.
    const value = typeof body.value === 'string' ? body.value.trim() : ''
    if (key === undefined) throw new HttpError(400, 'invalid_setting', `expected key to be one of ${SERVER_SETTING_KEYS.join(', ')}`)
    const written = await changeServerSetting(ctx.db, action === 'set' ? { key, action, value } : { key, action })
    if (!written.ok) return render(req, res, { status: 400, refused: { key, value, message: written.message } })
    ctx.logger.info('admin action', { by: req.auth!.user.login, action: `retrieval.${action}`, target: key, ...(action === 'set' ? { value: written.value[key] } : {}) })
    res.redirect(303, `${ADMIN_RETRIEVAL_PATH}?notice=${action === 'set' ? 'saved' : 'unset'}`)
  })

  return router
}
