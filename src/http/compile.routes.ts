// Compile jobs over HTTP (SPEC §6, §7, §8).
//   JSON (bearer token, or cookie + CSRF)          HTML for htmx (cookie + CSRF)
//   POST /api/v1/knowledge-agent/compile          GET  /workspace/compile/form?uri=   the compile form
//   GET  /api/v1/knowledge-agent/jobs             POST /workspace/compile             queue (answer: job + refusals)
//   GET  /api/v1/knowledge-agent/jobs/stream      POST /workspace/compile/skills      save one of the caller's skills
//   GET  /api/v1/knowledge-agent/jobs/:id         GET  /tasks                          the task center
//   POST /api/v1/knowledge-agent/jobs/:id/cancel  GET  /tasks/stream                   live rows (SSE)
//   POST /api/v1/knowledge-agent/jobs/:id/retry   POST /tasks/:id/cancel | /retry      a row
// Both live streams are one loop (`streamJobs`, job-streams.ts) with two projections (JSON events, HTML rows).
// Queue, cancel and retry are the feature's one use case (compile-requests.ts: it decodes, admits and
// does the work); both faces here only translate a request into its input and project its answer or
// its error (a JSON body, an htmx fragment).
import { type Request, type Response, Router } from 'express'
import { formBody } from './body-limit.ts'
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { MAX_CALL_BUDGET, MAX_REQUEST_URIS, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS } from '../effects/compile/compile-config.ts'
import { type CompileRequestError, JobNotFound } from '../effects/compile/compile-errors.ts'
import type { CompileJobView, JobListFilter } from '../effects/compile/compile-jobs-store.ts'
import { QueueRequest } from '../effects/compile/compile-requests.ts'
import type { CompileFeature } from '../effects/compile/compile-service.ts'
import { renderSkillFile, SKILL_NAME_PATTERN, userSkillSegments } from '../effects/compile/skills.ts'
import type { JobStatus } from '../effects/db/schema.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { getNode, putFile, type WorkspaceNode } from '../effects/workspace/store.ts'
import { listChildren } from '../effects/workspace/folder-listing.ts'
import { formatKbUri, parseKbUri, pathToSegments } from '../effects/workspace/uri.ts'
import { TasksPage, JOB_STATUS_FILTERS } from '../../views/pages/tasks.tsx'
import { CompileError, CompileForm, type CompileFileEntry, CompileResult, SkillField } from '../../views/partials/compile-form.tsx'
import { JobRow, JobRowNotice } from '../../views/partials/compile-jobs.tsx'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { credentialStillLive, requireAuth, requireCsrf } from './authenticate.ts'
import { createStreamCap } from './compile-limits.ts'
import { bodyFields, decodeBody, decodeQuery, QueryInt } from './decode-request.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { badRequest } from './http-errors.ts'
import type { SseWriter } from './sse.ts'
import { jsonBody } from './json-body.ts'
import { htmlJobProjector, jsonJobProjector, type JobStreamProjector, streamJobs } from './job-streams.ts'

export const API_PREFIX = '/api/v1/knowledge-agent'
const JOB_PAGE = 50
const FORM_LISTING = 500

export type { CompileFeature }

const Uri = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))

const FormString = Schema.String.check(Schema.isMaxLength(4096))

const CompileForm_ = Schema.Struct({
  directory_uri: Uri,
  uris: Schema.optionalKey(Schema.Union([Uri, Schema.Array(Uri).check(Schema.isMaxLength(MAX_REQUEST_URIS))])), // none picked is allowed here
  engine: Schema.String.check(Schema.isMaxLength(600)),
  reasoning_level: QueueRequest.fields.reasoning_level,
  call_budget: QueryInt({ minimum: 1, maximum: MAX_CALL_BUDGET }),
  timeout_seconds: QueryInt({ minimum: MIN_TIMEOUT_SECONDS, maximum: MAX_TIMEOUT_SECONDS }),
  artifact_parent_uri: Schema.optionalKey(FormString),
  skill: QueueRequest.fields.skill,
  skill_name: Schema.optionalKey(FormString),
  skill_description: Schema.optionalKey(FormString),
  skill_audience: Schema.optionalKey(FormString),
  skill_language: Schema.optionalKey(FormString),
  skill_keep: Schema.optionalKey(FormString),
})

const SkillForm = Schema.Struct({
  skill_name: Schema.String.check(Schema.isPattern(SKILL_NAME_PATTERN, { message: 'a skill name is 1–64 lowercase letters, digits or "-"' })),
  skill_description: Schema.String.check(Schema.isMinLength(1, { message: 'describe the skill in a few words' }), Schema.isMaxLength(500)),
  skill_audience: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(300))),
  skill_language: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100))),
  skill_keep: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(500))),
})

const QueryText = Schema.String.check(Schema.isMaxLength(4096))
const FormQuery = Schema.Struct({ uri: Uri })

/** The job list's query (API, task center and both live streams), decoded like every other query: bad numbers are 400 `invalid_request`. */
const JobsQuery = (limitMax: number) =>
  Schema.Struct({
    directory: Schema.optionalKey(QueryText),
    status: Schema.optionalKey(QueryText),
    offset: Schema.optionalKey(QueryInt({ minimum: 0, maximum: 1_000_000 })),
    limit: Schema.optionalKey(QueryInt({ minimum: 1, maximum: limitMax })),
  })

const jobIdOf = (req: Request): string => String(req.params.id ?? '')

/** The directory filter as the canonical URI jobs carry (`kb://me/x` → `kb://users/<login>/x/`). */
function directoryFilter(user: User, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined
  const path = parseKbUri({ uri: raw, callerLogin: user.login })
  return formatKbUri({ login: path.login, segments: path.segments, directory: true })
}

function statusFilter(raw: string | undefined): JobStatus[] | undefined {
  if (raw === undefined || raw === '') return undefined
  const statuses = raw.split(',').map((value) => value.trim())
  const unknown = statuses.find((value) => !(JOB_STATUS_FILTERS as ReadonlyArray<string>).includes(value))
  if (unknown !== undefined) throw badRequest(`unknown status "${unknown.slice(0, 40)}"; use ${JOB_STATUS_FILTERS.join(', ')}`, 'invalid_status')
  return statuses as JobStatus[]
}

function listFilter(req: Request, user: User, limitMax = 100): JobListFilter {
  const query = decodeQuery(JobsQuery(limitMax), req)
  return {
    directoryUri: directoryFilter(user, query.directory),
    statuses: statusFilter(query.status),
    offset: query.offset ?? 0,
    limit: query.limit ?? 20,
  }
}

/** The form's engine value (`llm|<model>` or `cli|<profile>|<model>`) in a queue request's words. */
export function decodeEngine(engine: string): Pick<QueueRequest, 'channel' | 'model_id' | 'profile_id'> {
  const [channel, first, ...rest] = engine.split('|')
  if (channel === 'llm' && first !== undefined && rest.length === 0) return { channel: 'llm', model_id: first }
  if (channel === 'cli' && first !== undefined && rest.length > 0) return { channel: 'cli', profile_id: first, model_id: rest.join('|') }
  throw badRequest('choose an engine and model from the list', 'invalid_engine')
}

// ── the form ─────────────────────────────────────────────────────────────────────────────
async function formEntries(ctx: AppContext, user: User, directory: WorkspaceNode): Promise<CompileFileEntry[]> {
  const page = await listChildren(ctx.db, { owner: user, parent: directory, offset: 0, limit: FORM_LISTING })
  const files = page.entries.filter((node) => node.kind === 'file')
  if (files.length === 0) return []
  const rows = await ctx.db.selectFrom('nodes').select(['id', 'generated']).where('id', 'in', files.map((node) => node.id)).execute()
  const generated = new Map(rows.map((row) => [row.id, row.generated]))
  return files.map((node) => ({ name: node.name, uri: node.uri, size: node.size, generated: generated.get(node.id) ?? null }))
}

async function directoryNode(ctx: AppContext, user: User, uri: string): Promise<WorkspaceNode> {
  const { node } = await resolveNode(ctx.db, { caller: user, uri })
  return node.kind === 'directory' ? node : getNode(ctx.db, user, pathToSegments(node.path).slice(0, -1))
}

function modelOptions(ctx: AppContext) {
  return ctx.models.list().map(({ id, name, profile, contextWindow, supportsNativeToolCalling, supportsReasoningEffort }) => ({ id, name, profile, contextWindow, supportsNativeToolCalling, supportsReasoningEffort }))
}

export function compileRoutes(ctx: AppContext, feature: CompileFeature): Router {
  const router = Router()
  const { service, requests } = feature
  const streams = createStreamCap()
  const liveJobs = async (req: Request, res: Response, filter: JobListFilter, project: (sse: SseWriter) => JobStreamProjector) => {
    const user = req.auth!.user
    const release = streams.hold(user.id)
    try {
      await streamJobs(ctx, { res, user, filter, feature, project, stillAuthorized: () => credentialStillLive(ctx, req) })
    } finally {
      release()
    }
  }

  // ── JSON API ──────────────────────────────────────────────────────────────────────────
  router.use([`${API_PREFIX}/compile`, `${API_PREFIX}/jobs`], requireAuth(), ...jsonBody({ limit: '1mb', strict: false }), requireCsrf())

  router.post(`${API_PREFIX}/compile`, async (req, res) => {
    const result = await Effect.runPromise(requests.queue({ caller: req.auth!.user, now: ctx.now, request: bodyFields(req.body) }))
    res.status(result.jobs.some((job) => job.created) ? 201 : 200).json(result)
  })

  router.get(`${API_PREFIX}/jobs`, async (req, res) => {
    const filter = listFilter(req, req.auth!.user)
    const { jobs, total } = await service.list({ caller: req.auth!.user, filter })
    res.set('Cache-Control', 'no-store').json({ jobs, total, offset: filter.offset, next_offset: filter.offset + jobs.length < total ? filter.offset + jobs.length : null })
  })

  router.get(`${API_PREFIX}/jobs/stream`, async (req, res) => {
    const filter = listFilter(req, req.auth!.user)
    await liveJobs(req, res, filter, jsonJobProjector)
  })

  router.get(`${API_PREFIX}/jobs/:id`, async (req, res) => {
    const job = await service.get({ caller: req.auth!.user, id: jobIdOf(req) })
    if (!job) throw new JobNotFound({ id: jobIdOf(req) })
    res.set('Cache-Control', 'no-store').json({ job })
  })

  // A refusal is the error handler's answer: `{ error: { code, message } }` with its status (and a conflict's `job_id`, `configuration`).
  router.post(`${API_PREFIX}/jobs/:id/cancel`, async (req, res) => {
    res.json({ job: await Effect.runPromise(requests.cancel({ caller: req.auth!.user, id: jobIdOf(req) })) })
  })

  router.post(`${API_PREFIX}/jobs/:id/retry`, async (req, res) => {
    res.json({ job: await Effect.runPromise(requests.retry({ caller: req.auth!.user, now: ctx.now, id: jobIdOf(req) })) })
  })

  // ── HTML for htmx ─────────────────────────────────────────────────────────────────────
  router.use(['/workspace/compile', '/tasks'], redirectHtmxToSignIn(), requireAuth(), formBody({ limit: '256kb', parameterLimit: 400 }), requireCsrf())

  router.get('/workspace/compile/form', async (req, res) => {
    const user = req.auth!.user
    const { uri } = decodeQuery(FormQuery, req)
    const directory = await directoryNode(ctx, user, uri)
    const [files, options, jobs] = await Promise.all([
      formEntries(ctx, user, directory),
      service.options({ caller: user }),
      service.list({ caller: user, filter: { directoryUri: directory.uri, offset: 0, limit: 10 } }),
    ])
    res.type('html').send(await renderFragment(CompileForm({ directoryUri: directory.uri, files, models: modelOptions(ctx), options, jobs: jobs.jobs })))
  })

  router.post('/workspace/compile', async (req, res) => {
    const form = decodeBody(CompileForm_, req.body)
    const uris = form.uris === undefined ? [] : typeof form.uris === 'string' ? [form.uris] : form.uris
    const engine = decodeEngine(form.engine)
    const artifactParent = form.artifact_parent_uri?.trim()
    // The form's blank reasoning level and skill mean none (the API's absent ones mean the defaults).
    const request: QueueRequest = {
      uris,
      ...engine,
      reasoning_level: form.reasoning_level ?? '',
      call_budget: form.call_budget,
      timeout_seconds: form.timeout_seconds,
      ...(artifactParent ? { artifact_parent_uri: artifactParent } : {}),
      skill: form.skill ?? '',
    }
    // No file picked is no request: nothing to queue, nothing counted.
    const result = uris.length === 0 ? { jobs: [], refused: [] } : await Effect.runPromise(requests.queue({ caller: req.auth!.user, now: ctx.now, request }))
    res.type('html').send(await renderFragment(CompileResult(result)))
  })

  router.post('/workspace/compile/skills', async (req, res) => {
    const user = req.auth!.user
    const form = decodeBody(SkillForm, Object.fromEntries(Object.entries(req.body as Record<string, unknown>).filter(([key]) => key.startsWith('skill_'))))
    const text = renderSkillFile({
      name: form.skill_name,
      description: form.skill_description,
      audience: form.skill_audience ?? '',
      language: form.skill_language ?? '',
      keep: form.skill_keep ?? '',
    })
    const bytes = new TextEncoder().encode(text)
    await putFile(ctx.db, { owner: user, segments: userSkillSegments(form.skill_name), bytes, parsed: { ok: true, mime: 'text/markdown', text } })
    const options = await service.options({ caller: user })
    res.type('html').send(await renderFragment(SkillField({ options, selected: `user:${form.skill_name}`, notice: `Saved your skill "${form.skill_name}".` })))
  })

  router.get('/tasks', async (req, res) => {
    const user = req.auth!.user
    const filter = { ...listFilter(req, user), offset: 0, limit: JOB_PAGE }
    const { jobs, total } = await service.list({ caller: user, filter })
    const query = new URLSearchParams()
    if (filter.directoryUri) query.set('directory', filter.directoryUri)
    if (filter.statuses) query.set('status', filter.statuses.join(','))
    res.type('html').send(
      await renderPage(
        TasksPage({
          login: user.login,
          csrfToken: req.auth!.csrfToken,
          jobs,
          total,
          directory: filter.directoryUri,
          status: filter.statuses?.join(','),
          streamUrl: `/tasks/stream${query.size > 0 ? `?${query}` : ''}`,
          nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: req.auth?.user.role === 'admin' }),
        }),
      ),
    )
  })

  router.get('/tasks/stream', async (req, res) => {
    const filter = { ...listFilter(req, req.auth!.user), offset: 0, limit: JOB_PAGE }
    await liveJobs(req, res, filter, htmlJobProjector)
  })

  const rowAction = (action: 'cancel' | 'retry') => async (req: Request, res: Response) => {
    const ask = { caller: req.auth!.user, now: ctx.now, id: jobIdOf(req) }
    const run: Effect.Effect<CompileJobView, CompileRequestError> = action === 'cancel' ? requests.cancel(ask) : requests.retry(ask)
    const outcome = await Effect.runPromise(Effect.result(run))
    if (outcome._tag === 'Success') {
      res.type('html').send(await renderFragment(JobRow({ job: outcome.success })))
      return
    }
    // A refusal about the job is said in its row; no such job, or too many requests, is the fragment error handler's.
    const error = outcome.failure
    if (error._tag === 'JobNotFound' || error._tag === 'CompileRateLimited') throw error
    const job = await service.get({ caller: ask.caller, id: ask.id })
    if (!job) throw new JobNotFound({ id: ask.id })
    res.status(error.status).type('html').send(await renderFragment(JobRowNotice({ job, message: error.message })))
  }
  router.post('/tasks/:id/cancel', rowAction('cancel'))
  router.post('/tasks/:id/retry', rowAction('retry'))

  router.use(
    ['/workspace/compile', '/tasks'],
    fragmentErrorHandler(ctx.logger, ({ message }) => CompileError({ message })),
  )
  return router
}
