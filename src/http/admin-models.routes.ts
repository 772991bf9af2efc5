// Admin → Model connections (issue 36), for administrators only (a member gets 403
// `admin_required`, a visitor the sign-in page or 401):
//   GET  /admin/models                              the page (JSON with Accept: application/json)
//   POST /admin/models/connections                  add (name, base_url, api_key, api_key_env, headers)
//   POST /admin/models/connections/:id              edit (blank api_key / headers keep the stored ones; remove_api_key, remove_headers)
//   POST /admin/models/connections/:id/delete       delete
//   POST /admin/models/connections/:id/test         Test: GET /models + a one-token chat, in words
//   POST /admin/models/connections/:id/models       the models to offer (model_<i>_*, add_model)
//   POST /admin/models/default                      the server's default model (default_model; empty: the first offered)
// Forms (CSRF token) redirect back with a notice; a JSON or token client gets JSON. Each change is
// one audit log line. The key is write-only: no answer, page or log line ever holds it.
import { Router, type Request, type Response } from 'express'
import { formBody } from './body-limit.ts'
import { InvalidConnection, type ModelConnections, type ModelRowInput } from '../effects/llm/model-connections.ts'
import { toModelInfo } from '../effects/llm/model-config.ts'
import { siteNav } from '../../views/layout.tsx'
import { ADMIN_MODELS_PATH, AdminModelsPage, type OfferedModel } from '../../views/pages/admin-models.tsx'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { adminGuard } from './admin-guard.ts'
import { requireCsrf } from './authenticate.ts'
import { wantsJson } from './error-handler.ts'
import { redirectHtmxToSignIn } from './fragment-errors.ts'
import { jsonBody } from './json-body.ts'
import type { ConnectionTestLine } from '../effects/llm/connection-test.ts'

const NOTICES: Record<string, string> = {
  added: 'The connection was added. Press Test to list its models.',
  saved: 'The connection was saved.',
  deleted: 'The connection was deleted; its models are no longer offered.',
  models: 'The models were saved; every user sees the change on their next page load.',
  default: 'The default model was saved.',
}

type Body = Record<string, unknown>

const text = (body: Body, name: string): string | undefined => (typeof body[name] === 'string' ? (body[name] as string) : undefined)
const flag = (body: Body, name: string): boolean => body[name] === 'on' || body[name] === true || body[name] === 'true'

/** The model rows of the form (`model_<i>_*`) or of a JSON body (`models: [...]`). */
function modelRowsOf(body: Body): ModelRowInput[] {
  if (Array.isArray(body['models'])) {
    return (body['models'] as Body[]).flatMap((row) =>
      typeof row === 'object' && row !== null && typeof row['provider_model'] === 'string'
        ? [
            {
              providerModel: row['provider_model'] as string,
              enabled: flag(row, 'enabled'),
              displayName: text(row, 'display_name') ?? (row['provider_model'] as string),
              contextWindow: (row['context_window'] as number | string | undefined) ?? '',
              maxOutputTokens: (row['max_output_tokens'] as number | string | undefined) ?? '',
              supportsNativeToolCalling: flag(row, 'tools'),
              remove: flag(row, 'remove'),
            },
          ]
        : [],
    )
  }
  const count = Math.min(Number(text(body, 'model_count') ?? 0) || 0, 1000)
  const rows: ModelRowInput[] = []
  for (let index = 0; index < count; index += 1) {
    const providerModel = text(body, `model_${index}_provider`)
    if (providerModel === undefined) continue
    rows.push({
      providerModel,
      enabled: flag(body, `model_${index}_enabled`),
      displayName: text(body, `model_${index}_name`) ?? providerModel,
      contextWindow: text(body, `model_${index}_window`) ?? '',
      maxOutputTokens: text(body, `model_${index}_reserve`) ?? '',
      supportsNativeToolCalling: flag(body, `model_${index}_tools`),
      remove: flag(body, `model_${index}_remove`),
    })
  }
  return rows
}

export function adminModelsRoutes(ctx: AppContext, connections: ModelConnections): Router {
  const router = Router()
  router.use(
    ADMIN_MODELS_PATH,
    redirectHtmxToSignIn(),
    ...adminGuard(),
    formBody({ limit: '256kb', parameterLimit: 10_000 }),
    ...jsonBody({ limit: '256kb' }),
    requireCsrf(),
  )

  const audit = (req: Request, action: string, target: string) => ctx.logger.info('admin action', { by: req.auth!.user.login, action, target })

  const state = async () => {
    const configIds = connections.registry.configModelIds
    const offered: OfferedModel[] = ctx.models.list().map((model) => ({ ...model, source: configIds.has(model.id) ? 'config' : model.id === 'local' ? 'built-in' : 'connection' }))
    return {
      offered,
      defaultModelId: ctx.models.defaultModelId(),
      chosenDefault: await connections.defaultModelId(),
      configModels: (ctx.config.file.models ?? []).map((config) => toModelInfo(config)),
      connections: await connections.list(),
    }
  }

  const render = async (
    req: Request,
    res: Response,
    { status = 200, notice, error, testResult }: { status?: number; notice?: string | undefined; error?: string | undefined; testResult?: { connectionId: string; lines: ReadonlyArray<ConnectionTestLine> } } = {},
  ) => {
    const user = req.auth!.user
    res
      .status(status)
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(
        await renderPage(
          AdminModelsPage({
            login: user.login,
            csrfToken: req.auth!.csrfToken,
            nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: true }),
            ...(await state()),
            testResult,
            notice,
            error,
          }),
        ),
      )
  }

  /** Redirect back with a notice (a form), or the state as JSON (a JSON / token client). */
  const done = async (req: Request, res: Response, notice: keyof typeof NOTICES, extra: Record<string, unknown> = {}, anchor = '') => {
    if (wantsJson(req)) return void res.json({ ok: true, ...extra, ...(await jsonState()) })
    res.redirect(303, `${ADMIN_MODELS_PATH}?notice=${notice}${anchor}`)
  }

  /** Safe: never a key or a header value (ConnectionView holds neither). */
  const jsonState = async () => {
    const current = await state()
    return {
      models: current.offered.map(({ id, name, profile, source, contextWindow, maxOutputTokens, supportsNativeToolCalling }) => ({ id, name, profile, source, contextWindow, maxOutputTokens, supportsNativeToolCalling })),
      default_model_id: current.defaultModelId,
      chosen_default_model_id: current.chosenDefault ?? null,
      connections: current.connections,
    }
  }

  /** An InvalidConnection: the page again with the message (400), or the error handler's JSON. */
  const refused = async (req: Request, res: Response, error: unknown) => {
    if (!(error instanceof InvalidConnection) || wantsJson(req)) throw error
    await render(req, res, { status: 400, error: error.message })
  }

  router.get(ADMIN_MODELS_PATH, async (req, res) => {
    if (wantsJson(req)) return void res.set('Cache-Control', 'no-store').json(await jsonState())
    const notice = typeof req.query.notice === 'string' ? NOTICES[req.query.notice] : undefined
    await render(req, res, { notice })
  })

  router.post(`${ADMIN_MODELS_PATH}/connections`, async (req, res) => {
    const body = (req.body ?? {}) as Body
    try {
      const added = await connections.add({
        name: text(body, 'name') ?? '',
        baseUrl: text(body, 'base_url') ?? '',
        apiKey: text(body, 'api_key'),
        apiKeyEnv: text(body, 'api_key_env'),
        headers: text(body, 'headers'),
      })
      audit(req, 'model_connection.add', added.name)
      await done(req, res, 'added', { id: added.id }, `#connection-${added.id}`)
    } catch (error) {
      await refused(req, res, error)
    }
  })

  router.post(`${ADMIN_MODELS_PATH}/connections/:id`, async (req, res) => {
    const body = (req.body ?? {}) as Body
    try {
      const saved = await connections.update(String(req.params['id']), {
        name: text(body, 'name') ?? '',
        baseUrl: text(body, 'base_url') ?? '',
        apiKey: text(body, 'api_key'),
        removeApiKey: flag(body, 'remove_api_key'),
        apiKeyEnv: text(body, 'api_key_env'),
        headers: text(body, 'headers'),
        removeHeaders: flag(body, 'remove_headers'),
      })
      audit(req, 'model_connection.edit', saved.name)
      await done(req, res, 'saved', {}, `#connection-${String(req.params['id'])}`)
    } catch (error) {
      await refused(req, res, error)
    }
  })

  router.post(`${ADMIN_MODELS_PATH}/connections/:id/delete`, async (req, res) => {
    const removed = await connections.remove(String(req.params['id']))
    audit(req, 'model_connection.delete', removed.name)
    await done(req, res, 'deleted')
  })

  router.post(`${ADMIN_MODELS_PATH}/connections/:id/test`, async (req, res) => {
    const id = String(req.params['id'])
    const tested = await connections.test(id)
    audit(req, 'model_connection.test', tested.name)
    if (wantsJson(req)) {
      return void res.set('Cache-Control', 'no-store').json({ ok: tested.report.lines.every((line) => line.ok), lines: tested.report.lines, models_reported: tested.report.reported?.length ?? null })
    }
    await render(req, res, { testResult: { connectionId: id, lines: tested.report.lines } })
  })

  router.post(`${ADMIN_MODELS_PATH}/connections/:id/models`, async (req, res) => {
    const body = (req.body ?? {}) as Body
    const id = String(req.params['id'])
    try {
      const saved = await connections.saveModels(id, modelRowsOf(body), text(body, 'add_model'))
      audit(req, 'model_connection.models', saved.name)
      await done(req, res, 'models', {}, `#connection-${id}`)
    } catch (error) {
      await refused(req, res, error)
    }
  })

  router.post(`${ADMIN_MODELS_PATH}/default`, async (req, res) => {
    const body = (req.body ?? {}) as Body
    try {
      const chosen = text(body, 'default_model')?.trim() || undefined
      await connections.setDefaultModel(chosen)
      audit(req, 'model.default', chosen ?? '(first offered)')
      await done(req, res, 'default')
    } catch (error) {
      await refused(req, res, error)
    }
  })

  return router
}
