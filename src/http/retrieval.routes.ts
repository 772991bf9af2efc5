// Settings → Retrieval services (SPEC §9), mounted only when the feature is on:
//   GET  /settings/retrieval           the page
//   POST /settings/retrieval           save (form: api_key, remove_api_key, workspace_id,
//                                      default_retrieve_agent_id, default_chat_agent_id) → 303 back
//   POST /settings/retrieval/refresh   force a catalog refresh → the diagnostics fragment (htmx) or 303 back
// Cookie session with CSRF on every post. The API key is write-only: no response ever holds it.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import type { Scene } from '../effects/retrieval/bailian-client.ts'
import { BailianMissingCredentials } from '../effects/retrieval/bailian-errors.ts'
import { type BailianSettingsSnapshot, connectionOf, InvalidSettings } from '../effects/retrieval/bailian-settings.ts'
import { sortByRecency } from '../effects/retrieval/catalog-message.ts'
import type { RetrievalFeature } from '../effects/retrieval/retrieval-feature.ts'
import { describeSource, type EditableKey } from '../effects/retrieval/retrieval-settings.ts'
import { RETRIEVAL_SETTINGS_PATH, siteNav } from '../../views/layout.tsx'
import { CacheSection, type CacheView, RetrievalSettingsPage, type SettingField } from '../../views/pages/retrieval-settings.tsx'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf, requireSession } from './authenticate.ts'
import { redirectHtmxToSignIn } from './fragment-errors.ts'


const NOTICES: Record<string, string> = {
  saved: 'Saved.',
  'key-removed': 'Your stored API key was removed.',
  refreshed: 'The list of services was refreshed.',
  'refresh-failed': 'The refresh failed; the last error is shown under Service cache.',
}

const FIELDS: ReadonlyArray<{ name: SettingField['name']; key: EditableKey; label: string; hint: string; scene?: Scene }> = [
  { name: 'workspace_id', key: 'workspaceId', label: 'Workspace id', hint: 'The subdomain of your Bailian endpoints, shown in the Bailian console.' },
  {
    name: 'default_retrieve_agent_id',
    key: 'defaultRetrieveAgentId',
    label: 'Default retrieval service (kb_search)',
    hint: 'Optional: the model is then shown only this service for searches.',
    scene: 'search',
  },
  {
    name: 'default_chat_agent_id',
    key: 'defaultChatAgentId',
    label: 'Default chat service (kb_chat)',
    hint: 'Optional: the model is then shown only this service for questions.',
    scene: 'chat',
  },
]

export function retrievalRoutes(ctx: AppContext, feature: RetrievalFeature): Router {
  const router = Router()
  router.use(RETRIEVAL_SETTINGS_PATH, redirectHtmxToSignIn(), requireAuth(), requireSession('the retrieval settings need a browser session; API tokens cannot read or change them'), formBody({ limit: '16kb' }), requireCsrf())

  const cacheView = async (userId: string, snapshot: BailianSettingsSnapshot, message?: CacheView['message']): Promise<{ view: CacheView; services: Record<Scene, Array<{ id: string; name: string }>> }> => {
    const none = { search: [], chat: [] }
    const connection = connectionOf(snapshot)
    if (connection instanceof BailianMissingCredentials) {
      return {
        view: {
          workspaceId: undefined,
          unavailable: `Set ${connection.missing === 'apiKey' ? 'an API key' : 'a workspace id'} to see the services of your workspace.`,
          fetchedAt: undefined,
          scenes: [],
          lastError: undefined,
          lastErrorAt: undefined,
          message,
        },
        services: none,
      }
    }
    const status = await feature.cache.read(connection.workspaceId)
    const fingerprint = feature.cache.fingerprint(connection.apiKey)
    const readable = status.document !== undefined && status.readers.has(fingerprint)
    // A refusal of this user's own key is not recorded on the shared document: only they see it.
    const refusal = feature.refresher.keyRefusal({ workspaceId: connection.workspaceId, userId, fingerprint })
    const shownError =
      refusal !== undefined && (status.lastErrorAt === undefined || refusal.at >= status.lastErrorAt)
        ? { lastError: `your API key was refused: ${refusal.message}`, lastErrorAt: refusal.at }
        : { lastError: status.lastError, lastErrorAt: status.lastErrorAt }
    const document = readable ? status.document : undefined
    const services = (scene: Scene) =>
      sortByRecency(document?.entries.filter((entry) => entry.scene === scene) ?? []).map((entry) => ({ id: entry.agentId, name: entry.agentName || '(unnamed)' }))
    return {
      view: {
        workspaceId: connection.workspaceId,
        fetchedAt: document?.fetchedAt,
        scenes: document
          ? [
              { label: 'Retrieval services', ...document.scenes.search },
              { label: 'Chat services', ...document.scenes.chat },
            ]
          : [],
        ...shownError,
        message,
      },
      services: { search: services('search'), chat: services('chat') },
    }
  }

  const renderSettings = async (req: Request, res: Response, { status = 200, error, notice }: { status?: number; error?: string; notice?: string } = {}) => {
    const user = req.auth!.user
    const snapshot = await feature.settings.resolve(user.id)
    const { view, services } = await cacheView(user.id, snapshot)
    const apiKey = snapshot.settings.apiKey.source
    const fields: SettingField[] = FIELDS.map((field) => {
      const resolved = snapshot.settings[field.key]
      return {
        name: field.name,
        label: field.label,
        value: resolved.value ?? '',
        source: describeSource(resolved.source, field.key),
        fromUser: resolved.source === 'user',
        hint: field.hint,
        options: field.scene ? services[field.scene] : undefined,
      }
    })
    res
      .status(status)
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(
        await renderPage(
          RetrievalSettingsPage({
            login: user.login,
            csrfToken: req.auth!.csrfToken,
            nav: siteNav({ retrieval: true, admin: req.auth?.user.role === 'admin' }),
            apiKeyStatus: apiKey === 'credential-store' ? 'configured' : apiKey === 'environment' ? 'environment' : 'unset',
            apiKeyUnreadable: snapshot.unreadableCredentials.includes('DASHSCOPE_API_KEY'),
            fields,
            cache: view,
            notice,
            error,
          }),
        ),
      )
  }

  router.get(RETRIEVAL_SETTINGS_PATH, async (req, res) => {
    const notice = typeof req.query.notice === 'string' ? NOTICES[req.query.notice] : undefined
    await renderSettings(req, res, { notice })
  })

  router.post(RETRIEVAL_SETTINGS_PATH, async (req, res) => {
    const user = req.auth!.user
    const body = (req.body ?? {}) as Record<string, unknown>
    const text = (name: string): string | undefined => (typeof body[name] === 'string' ? (body[name] as string) : undefined)
    try {
      const submitted: Partial<Record<EditableKey, string | undefined>> = {}
      for (const field of FIELDS) {
        const value = text(field.name)
        if (value !== undefined) submitted[field.key] = value
      }
      await feature.settings.saveSettings(user.id, submitted)
      const apiKey = text('api_key') ?? ''
      let notice = 'saved'
      if (apiKey.trim() !== '') await feature.settings.setApiKey(user.id, apiKey)
      else if (text('remove_api_key') === 'on') {
        await feature.settings.removeApiKey(user.id)
        notice = 'key-removed'
      }
      res.redirect(303, `${RETRIEVAL_SETTINGS_PATH}?notice=${notice}`)
    } catch (error) {
      if (!(error instanceof InvalidSettings)) throw error
      await renderSettings(req, res, { status: 400, error: error.message })
    }
  })

  router.post(`${RETRIEVAL_SETTINGS_PATH}/refresh`, async (req, res) => {
    const user = req.auth!.user
    const snapshot = await feature.settings.resolve(user.id)
    const connection = connectionOf(snapshot)
    let message: CacheView['message']
    if (connection instanceof BailianMissingCredentials) {
      message = { kind: 'error', text: connection.message }
    } else {
      const outcome = await feature.refresher.refresh({ userId: user.id, workspaceId: connection.workspaceId, reason: 'force' })
      message = outcome.ok ? { kind: 'ok', text: 'Refreshed just now.' } : { kind: 'error', text: `The refresh failed: ${outcome.message}` }
    }
    if (req.get('hx-request') !== 'true') {
      return res.redirect(303, `${RETRIEVAL_SETTINGS_PATH}?notice=${message.kind === 'ok' ? 'refreshed' : 'refresh-failed'}`)
    }
    const { view } = await cacheView(user.id, snapshot, message)
    res.type('html').set('Cache-Control', 'no-store').send(await renderFragment(CacheSection({ cache: view, csrfToken: req.auth!.csrfToken })))
  })

  return router
}
