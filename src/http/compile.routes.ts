// Compile jobs over HTTP (SPEC §6, §7, §8).
//   JSON (bearer token, or cookie + CSRF)          HTML for htmx (cookie + CSRF)
//   POST /api/v1/knowledge-agent/compile          GET  /workspace/compile/form?uri=   the compile form
//   GET  /api/v1/knowledge-agent/jobs             POST /workspace/compile             queue (answer: job + refusals)
//   GET  /api/v1/knowledge-agent/jobs/stream      POST /workspace/compile/skills      save one of the caller's skills
//   GET  /api/v1/knowledge-agent/jobs/:id         GET  /tasks                          the task center
//   POST /api/v1/knowledge-agent/jobs/:id/cancel  GET  /tasks/stream                   live rows (SSE)
//   POST /api/v1/knowledge-agent/jobs/:id/retry   POST /tasks/:id/cancel | /retry      a row
// Both live streams are one loop (`streamJobs`, job-streams.ts) with two projections (JSON events, HTML rows).
import { type Request, type Response, Router, urlencoded } from 'express'
import * as Schema from 'effect/Schema'
import type { User } from '../effects/auth/users.ts'
import { MAX_CALL_BUDGET, MAX_TIMEOUT_SECONDS } from '../effects/compile/compile-config.ts'
import type { JobListFilter } from '../effects/compile/compile-jobs-store.ts'
import { type CompileFeature, type CompileParams, MIN_TIMEOUT_SECONDS } from '../effects/compile/compile-service.ts'
import { renderSkillFile, SKILL_NAME_PATTERN, userSkillSegments } from '../effects/compile/skills.ts'
import type { JobStatus } from '../effects/db/schema.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { getNode, listChildren, putFile, type WorkspaceNode } from '../effects/workspace/store.ts'
import { formatKbUri, parseKbUri, pathToSegments } from '../effects/workspace/uri.ts'
import { TasksPage, JOB_STATUS_FILTERS } from '../../views/pages/tasks.tsx'
import { CompileError, CompileForm, type CompileFileEntry, CompileResult, SkillField } from '../../views/partials/compile-form.tsx'
import { JobRow, JobRowNotice } from '../../views/partials/compile-jobs.tsx'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { credentialStillLive, requireAuth, requireCsrf } from './authenticate.ts'
import { admitCompileRequest, createStreamCap } from './compile-limits.ts'
import { decodeBody, decodeQuery, QueryInt } from './decode-request.ts'
import { fragmentErrorHandler, redirectHtmxToSignIn } from './fragment-errors.ts'
import { badRequest, HttpError } from './http-errors.ts'
import type { SseWriter } from './sse.ts'
import { jsonBody } from './json-body.ts'
import { htmlJobProjector, jsonJobProjector, type JobStreamProjector, streamJobs } from './job-streams.ts'

export const API_PREFIX = '/api/v1/knowledge-agent'
const MAX_REQUEST_URIS = 256
const JOB_PAGE = 50
const FORM_LISTING = 500

export type { CompileFeature }

const Uri = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))
const Short = Schema.String.check(Schema.isMaxLength(200))

export const CompileRequest = Schema.Struct({
  uris: Schema.Array(Uri).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_REQUEST_URIS)),
  channel: Schema.Literals(['llm', 'cli']),
  model_id: Schema.optionalKey(Short),
  profile_id: Schema.optionalKey(Short),
  reasoning_level: Schema.optionalKey(Short),
  call_budget: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_CALL_BUDGET }))),
  timeout_seconds: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: MIN_TIMEOUT_SECONDS, maximum: MAX_TIMEOUT_SECONDS }))),
  artifact_parent_uri: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4096))),
  skill: Schema.optionalKey(Short),
})

const FormString = Schema.String.check(Schema.isMaxLength(4096))

const CompileForm_ = Schema.Struct({
  directory_uri: Uri,
  uris: Schema.optionalKey(Schema.Union([Uri, Schema.Array(Uri).check(Schema.isMaxLength(MAX_REQUEST_URIS))])),
  engine: Schema.String.check(Schema.isMaxLength(600)),
  reasoning_level: Schema.optionalKey(Short),
  call_budget: QueryInt({ minimum: 1, maximum: MAX_CALL_BUDGET }),
  timeout_seconds: QueryInt({ minimum: MIN_TIMEOUT_SECONDS, maximum: MAX_TIMEOUT_SECONDS }),
  artifact_parent_uri: Schema.optionalKey(FormString),
  skill: Schema.optionalKey(Short),
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

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

function jobId(req: Request): string {
  const id = String(req.params.id ?? '')
  if (!UUID.test(id)) throw new HttpError(404, 'job_not_found', `no compile job ${id.slice(0, 64)}`)
  return id
}

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

function toParams(body: typeof CompileRequest.Type): CompileParams {
  // A field the channel does not use is a mistake to say, not to drop: the job would not run as asked.
  if (body.channel === 'llm' && body.profile_id !== undefined) {
    throw badRequest('"profile_id" is for channel "cli"; with channel "llm" give model_id alone (or use channel "cli")', 'invalid_request')
  }
  return {
    uris: body.uris,
    channel: body.channel,
    modelId: body.model_id,
    profileId: body.profile_id,
    reasoningLevel: body.reasoning_level,
    callBudget: body.call_budget,
    timeoutSeconds: body.timeout_seconds,
    artifactParentUri: body.artifact_parent_uri,
    skill: body.skill,
  }
}

/** The form's engine value: `llm|<model>` or `cli|<profile>|<model>`. */
export function decodeEngine(engine: string): Pick<CompileParams, 'channel' | 'modelId' | 'profileId'> {
  const [channel, first, ...rest] = engine.split('|')
  if (channel === 'llm' && first !== undefined && rest.length === 0) return { channel: 'llm', modelId: first }
  if (channel === 'cli' && first !== undefined && rest.length > 0) return { channel: 'cli', profileId: first, modelId: rest.join('|') }
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
  return ctx.models.list().map(({ id, name, profile, contextWindow, supportsNativeToolCalling }) => ({ id, name, profile, contextWindow, supportsNativeToolCalling }))
}

export function compileRoutes(ctx: AppContext, feature: CompileFeature): Router {
  const router = Router()
  const { service } = feature
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
    const params = toParams(decodeBody(CompileRequest, req.body)) // a request that does not decode costs nothing
    await admitCompileRequest(ctx, req.auth!.user)
    const result = await service.enqueue({ caller: req.auth!.user, params })
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
    const job = await service.get({ caller: req.auth!.user, id: jobId(req) })
    if (!job) throw new HttpError(404, 'job_not_found', `no compile job ${req.params.id}`)
    res.set('Cache-Control', 'no-store').json({ job })
  })

  router.post(`${API_PREFIX}/jobs/:id/cancel`, async (req, res) => {
    const outcome = await service.cancel({ caller: req.auth!.user, id: jobId(req) })
    if (!outcome.ok) throw new HttpError(outcome.status, outcome.code, outcome.message)
    res.json({ job: outcome.job })
  })

  router.post(`${API_PREFIX}/jobs/:id/retry`, async (req, res) => {
    const id = jobId(req)
    // Only a retry that can queue work counts against the compile rate limit: asking about a job
    // that is not there (or not failed or cancelled) is answered without using it up.
    const existing = await service.get({ caller: req.auth!.user, id })
    if (existing?.status === 'failed' || existing?.status === 'cancelled') await admitCompileRequest(ctx, req.auth!.user)
    const outcome = await service.retry({ caller: req.auth!.user, id })
    if (!outcome.ok) {
      res.status(outcome.status).json({ error: { code: outcome.code, message: outcome.message, ...(outcome.job_id ? { job_id: outcome.job_id, configuration: outcome.configuration } : {}) } })
      return
    }
    res.json({ job: outcome.job })
  })

  // ── HTML for htmx ─────────────────────────────────────────────────────────────────────
  router.use(['/workspace/compile', '/tasks'], redirectHtmxToSignIn(), requireAuth(), urlencoded({ extended: false, limit: '256kb', parameterLimit: 400 }), requireCsrf())

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
    const params: CompileParams = {
      uris,
      ...decodeEngine(form.engine),
      reasoningLevel: form.reasoning_level ?? '',
      callBudget: form.call_budget,
      timeoutSeconds: form.timeout_seconds,
      artifactParentUri: form.artifact_parent_uri?.trim() || undefined,
      skill: form.skill ?? '',
    }
    if (uris.length > 0) await admitCompileRequest(ctx, req.auth!.user)
    const result = uris.length === 0 ? { jobs: [], refused: [] } : await service.enqueue({ caller: req.auth!.user, params })
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
          nav: siteNav({ retrieval: ctx.retrieval !== undefined }),
        }),
      ),
    )
  })

  router.get('/tasks/stream', async (req, res) => {
    const filter = { ...listFilter(req, req.auth!.user), offset: 0, limit: JOB_PAGE }
    await liveJobs(req, res, filter, htmlJobProjector)
  })

  const rowAction = (action: 'cancel' | 'retry') => async (req: Request, res: Response) => {
    const user = req.auth!.user
    const id = jobId(req)
    if (action === 'retry') await admitCompileRequest(ctx, user)
    const outcome = action === 'cancel' ? await service.cancel({ caller: user, id }) : await service.retry({ caller: user, id })
    if (outcome.ok) {
      res.type('html').send(await renderFragment(JobRow({ job: outcome.job })))
      return
    }
    const job = await service.get({ caller: user, id })
    if (!job) throw new HttpError(404, 'job_not_found', outcome.message)
    res.status(outcome.status).type('html').send(await renderFragment(JobRowNotice({ job, message: outcome.message })))
  }
  router.post('/tasks/:id/cancel', rowAction('cancel'))
  router.post('/tasks/:id/retry', rowAction('retry'))

  router.use(
    ['/workspace/compile', '/tasks'],
    fragmentErrorHandler(ctx.logger, ({ message }) => CompileError({ message })),
  )
  return router
}
