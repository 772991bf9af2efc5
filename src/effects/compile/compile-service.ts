// Queueing, cancelling and retrying compile jobs for a caller (SPEC §8), and what the form and
// `GET options` show. A request names up to 32 raw files of one directory and this batch's
// parameters; each file is queued in one new job, joins an existing job with the identical
// configuration, or is refused with a reason. The configuration is resolved once and copied into
// the job (the snapshot); the server's configuration is never changed by a job.
import type { Kysely } from 'kysely'
import { randomUUID } from 'node:crypto'
import type { DB } from '../db/schema.ts'
import type { ModelRegistry } from '../llm/model-registry.ts'
import { resolveNode } from '../workspace/resolve.ts'
import type { Owner, WorkspaceNode } from '../workspace/store.ts'
import { getNode } from '../workspace/store.ts'
import { MAX_URI_LENGTH, pathToSegments } from '../workspace/uri.ts'
import {
  type CliProfile,
  type CliProfileInfo,
  type CompileDefaults,
  MAX_CALL_BUDGET,
  MAX_TIMEOUT_SECONDS,
  REASONING_LEVELS,
  toCliProfileInfo,
} from './compile-config.ts'
import {
  activeJobsForFiles,
  cancelCompileJob,
  type CompileJobView,
  findCompileJob,
  insertCompileJob,
  type JobListFilter,
  listCompileJobs,
  requeueCompileJob,
} from './compile-jobs-store.ts'
import { cancelQueueJob, type QueueHandle, sendCompileJob } from './compile-queue.ts'
import { type CompileSnapshot, decodeSnapshot, type PublicConfiguration, sameConfiguration, SNAPSHOT_VERSION, toPublicConfiguration } from './compile-snapshot.ts'
import { listUserSkills, resolveSkill, type Skill, USER_SKILLS_DIR } from './skills.ts'

export const MAX_COMPILE_FILES = 32
export const MIN_TIMEOUT_SECONDS = 30

export type RefusalCode =
  | 'not_visible'
  | 'not_raw'
  | 'generated_artifact'
  | 'over_limit'
  | 'duplicate'
  | 'other_directory'
  | 'conflicting_active_job'
  | 'unknown_model'
  | 'unknown_profile'
  | 'model_not_allowed'
  | 'reasoning_not_allowed'
  | 'unknown_skill'
  | 'invalid_parent'
  | 'invalid_configuration'

export interface Refusal {
  readonly uri: string
  readonly code: RefusalCode
  readonly message: string
  /** `conflicting_active_job`: the job that holds the file, and how it was configured. */
  readonly job_id?: string | undefined
  readonly configuration?: PublicConfiguration | undefined
}

export interface CompileParams {
  readonly uris: ReadonlyArray<string>
  readonly channel: 'llm' | 'cli'
  readonly modelId?: string | undefined
  readonly profileId?: string | undefined
  readonly reasoningLevel?: string | undefined
  readonly callBudget?: number | undefined
  readonly timeoutSeconds?: number | undefined
  readonly artifactParentUri?: string | undefined
  /** A bundled skill's name, or `user:<name>` for one of the caller's own. */
  readonly skill?: string | undefined
}

export interface EnqueueResult {
  /** Jobs created by this request, then existing identical jobs the request joined. */
  readonly jobs: ReadonlyArray<CompileJobView & { readonly created: boolean }>
  /** Where each queued URI went. */
  readonly queued: ReadonlyArray<{ readonly uri: string; readonly job_id: string; readonly created: boolean }>
  readonly refused: ReadonlyArray<Refusal>
}

export type RetryResult =
  | { readonly ok: true; readonly job: CompileJobView }
  | { readonly ok: false; readonly status: 404 | 409; readonly code: string; readonly message: string; readonly job_id?: string | undefined; readonly configuration?: PublicConfiguration | undefined }

export interface CompileOptions {
  readonly cli_profiles: ReadonlyArray<CliProfileInfo>
  readonly reasoning_levels: ReadonlyArray<string>
  readonly skills: ReadonlyArray<{ readonly ref: string; readonly name: string; readonly description: string; readonly source: 'bundled' | 'user' }>
  readonly defaults: {
    readonly channel: 'llm'
    readonly model_id: string
    readonly reasoning_level: string
    readonly call_budget: number
    readonly timeout_seconds: number
    readonly max_attempts: number
    readonly max_files: number
    readonly skill: string | null
  }
  readonly limits: { readonly max_files: number; readonly max_call_budget: number; readonly min_timeout_seconds: number; readonly max_timeout_seconds: number }
}

export interface CompileService {
  readonly enqueue: (args: { caller: Owner; params: CompileParams }) => Promise<EnqueueResult>
  readonly cancel: (args: { caller: Owner; id: string }) => Promise<{ ok: true; job: CompileJobView } | { ok: false; status: 404 | 409; code: string; message: string }>
  readonly retry: (args: { caller: Owner; id: string }) => Promise<RetryResult>
  readonly get: (args: { caller: Owner; id: string }) => Promise<CompileJobView | undefined>
  readonly list: (args: { caller: Owner; filter: JobListFilter }) => Promise<{ jobs: CompileJobView[]; total: number }>
  /** What the form and `GET options` offer: never a command line. */
  readonly options: (args: { caller: Owner }) => Promise<CompileOptions>
  readonly defaults: CompileDefaults
}

export interface CompileServiceOptions {
  readonly db: Kysely<DB>
  readonly queue: QueueHandle
  readonly models: ModelRegistry
  readonly cliProfiles: ReadonlyArray<CliProfile>
  readonly defaults: CompileDefaults
  readonly bundledSkills: ReadonlyArray<Skill>
}

const DEFAULT_SKILL = 'wiki-default'

type Resolved = { ok: true; snapshotBase: Omit<CompileSnapshot, 'source' | 'artifactParent'>; parent: WorkspaceNode | undefined } | { ok: false; code: RefusalCode; message: string }

async function resolveConfiguration(options: CompileServiceOptions, caller: Owner, params: CompileParams): Promise<Resolved> {
  const { defaults } = options
  let modelId: string
  let profileId: string | null = null
  let reasoningLevel: string
  if (params.channel === 'llm') {
    modelId = params.modelId ?? defaults.modelId
    const known = options.models.list().some((model) => model.id === modelId)
    if (!known) return { ok: false, code: 'unknown_model', message: `unknown model "${modelId}"; GET options lists the models` }
    reasoningLevel = params.reasoningLevel ?? defaults.reasoningLevel
    if (!(REASONING_LEVELS as ReadonlyArray<string>).includes(reasoningLevel)) {
      return { ok: false, code: 'reasoning_not_allowed', message: `reasoning level "${reasoningLevel}" is not one of ${REASONING_LEVELS.join(', ')}` }
    }
  } else {
    const profile = options.cliProfiles.find((candidate) => candidate.id === params.profileId)
    if (!profile) return { ok: false, code: 'unknown_profile', message: `unknown CLI profile "${params.profileId ?? ''}"; GET options lists the profiles` }
    profileId = profile.id
    modelId = params.modelId ?? profile.models[0]
    if (!profile.models.includes(modelId)) return { ok: false, code: 'model_not_allowed', message: `CLI profile "${profile.id}" does not allow model "${modelId}"` }
    const levels = profile.reasoningLevels ?? []
    reasoningLevel = params.reasoningLevel ?? (levels.includes(defaults.reasoningLevel) ? defaults.reasoningLevel : (levels[0] ?? ''))
    if (levels.length === 0 ? reasoningLevel !== '' : !levels.includes(reasoningLevel)) {
      return {
        ok: false,
        code: 'reasoning_not_allowed',
        message: levels.length === 0 ? `CLI profile "${profile.id}" takes no reasoning level` : `CLI profile "${profile.id}" allows the reasoning levels ${levels.join(', ')}`,
      }
    }
  }
  const skillRef = params.skill === undefined ? DEFAULT_SKILL : params.skill
  let skill: CompileSnapshot['skill'] = null
  if (skillRef !== '') {
    const found = await resolveSkill(options.db, { owner: caller, ref: skillRef, bundled: options.bundledSkills })
    if (!found && params.skill !== undefined) return { ok: false, code: 'unknown_skill', message: `no compile skill "${skillRef}" (yours are "user:<name>")` }
    skill = found ? { ref: found.ref, name: found.name, description: found.description, body: found.body, sha256: found.sha256 } : null
  }
  let parent: WorkspaceNode | undefined
  if (params.artifactParentUri !== undefined && params.artifactParentUri !== '') {
    try {
      parent = (await resolveNode(options.db, { caller, uri: params.artifactParentUri })).node
    } catch (error) {
      return { ok: false, code: 'invalid_parent', message: `artifact parent: ${(error as Error).message}` }
    }
    if (parent.kind !== 'directory') return { ok: false, code: 'invalid_parent', message: `artifact parent ${parent.uri} is a file; choose a directory` }
    if (pathToSegments(parent.path)[0] === USER_SKILLS_DIR) return { ok: false, code: 'invalid_parent', message: 'artifacts cannot be written among your skills' }
  }
  return {
    ok: true,
    parent,
    snapshotBase: {
      version: SNAPSHOT_VERSION,
      channel: params.channel,
      modelId,
      profileId,
      reasoningLevel,
      callBudget: Math.min(MAX_CALL_BUDGET, params.callBudget ?? defaults.callBudget),
      timeoutSeconds: Math.min(MAX_TIMEOUT_SECONDS, Math.max(MIN_TIMEOUT_SECONDS, params.timeoutSeconds ?? defaults.timeoutSeconds)),
      maxAttempts: defaults.maxAttempts,
      skill,
    },
  }
}

interface Candidate {
  readonly uri: string
  readonly node: WorkspaceNode
}

/** Sorts the request's URIs into candidates (one directory's raw files) and refusals. */
async function screenUris(options: CompileServiceOptions, caller: Owner, uris: ReadonlyArray<string>): Promise<{ candidates: Candidate[]; directory: WorkspaceNode | undefined; refused: Refusal[] }> {
  const refused: Refusal[] = []
  const candidates: Candidate[] = []
  const seen = new Set<string>()
  let directory: WorkspaceNode | undefined
  for (const [index, uri] of uris.entries()) {
    if (index >= MAX_COMPILE_FILES) {
      refused.push({ uri, code: 'over_limit', message: `a compile request takes at most ${MAX_COMPILE_FILES} files` })
      continue
    }
    let node: WorkspaceNode
    try {
      node = (await resolveNode(options.db, { caller, uri })).node
    } catch (error) {
      refused.push({ uri, code: 'not_visible', message: (error as Error).message })
      continue
    }
    if (seen.has(node.id)) {
      refused.push({ uri, code: 'duplicate', message: `${node.uri} is already in this request` })
      continue
    }
    seen.add(node.id)
    const segments = pathToSegments(node.path)
    if (node.kind !== 'file') {
      refused.push({ uri, code: 'not_raw', message: `${node.uri} is a directory; pick the files in it` })
      continue
    }
    if (segments[0] === USER_SKILLS_DIR) {
      refused.push({ uri, code: 'not_raw', message: `${node.uri} is a compile skill, not a raw file` })
      continue
    }
    const row = await options.db.selectFrom('nodes').select('generated').where('id', '=', node.id).executeTakeFirstOrThrow()
    if (row.generated !== null) {
      refused.push({ uri, code: 'generated_artifact', message: `${node.uri} was written by a compile job (${row.generated}); compile the raw files instead` })
      continue
    }
    const parent = await getNode(options.db, caller, segments.slice(0, -1))
    if (directory === undefined) directory = parent
    if (parent.id !== directory.id) {
      refused.push({ uri, code: 'other_directory', message: `${node.uri} is not in ${directory.uri}; a request compiles the files of one directory` })
      continue
    }
    candidates.push({ uri: node.uri, node })
  }
  return { candidates, directory, refused }
}

/** Why `snapshot` could not be stored as a job's configuration, or undefined when it can. */
function unstorableSnapshot(snapshot: CompileSnapshot): string | undefined {
  for (const [what, uri] of [['the source directory', snapshot.source.uri], ['the artifact directory', snapshot.artifactParent.uri]] as const) {
    if (uri.length > MAX_URI_LENGTH) return `the URI of ${what} is ${uri.length} characters, over ${MAX_URI_LENGTH}: move or rename it to compile its files`
  }
  try {
    decodeSnapshot(JSON.parse(JSON.stringify(snapshot)))
    return undefined
  } catch (error) {
    return `the job's configuration is invalid: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`
  }
}

export function makeCompileService(options: CompileServiceOptions): CompileService {
  const { db, queue } = options

  const enqueue: CompileService['enqueue'] = async ({ caller, params }) => {
    const resolved = await resolveConfiguration(options, caller, params)
    if (!resolved.ok) {
      return { jobs: [], queued: [], refused: params.uris.map((uri) => ({ uri, code: resolved.code, message: resolved.message })) }
    }
    const screened = await screenUris(options, caller, params.uris)
    const refused = [...screened.refused]
    if (screened.candidates.length === 0 || screened.directory === undefined) return { jobs: [], queued: [], refused }
    const directory = screened.directory
    const parent = resolved.parent ?? directory
    const snapshot: CompileSnapshot = {
      ...resolved.snapshotBase,
      source: { uri: directory.uri, path: directory.path },
      artifactParent: { uri: parent.uri, path: parent.path, id: parent.id },
    }
    // Checked as every attempt will read it back (a URI over the limit once left a job queued forever).
    const unstorable = unstorableSnapshot(snapshot)
    if (unstorable) return { jobs: [], queued: [], refused: [...refused, ...screened.candidates.map((candidate) => ({ uri: candidate.uri, code: 'invalid_configuration' as const, message: unstorable }))] }
    const jobId = randomUUID()
    const outcome = await db.transaction().execute(async (trx) => {
      // Lock the files (in one order, so two requests cannot deadlock): concurrent requests for
      // the same file serialise here, and the second sees the first's job.
      const ids = screened.candidates.map((candidate) => candidate.node.id).sort()
      await trx.selectFrom('nodes').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
      const active = await activeJobsForFiles(trx, ids)
      const queued: Array<{ uri: string; job_id: string; created: boolean }> = []
      const fresh: Candidate[] = []
      for (const candidate of screened.candidates) {
        const holder = active.find((entry) => entry.nodeId === candidate.node.id)
        if (!holder) fresh.push(candidate)
        else if (holder.snapshot && sameConfiguration(holder.snapshot, snapshot)) queued.push({ uri: candidate.uri, job_id: holder.jobId, created: false })
        else {
          refused.push({
            uri: candidate.uri,
            code: 'conflicting_active_job',
            message: `job ${holder.jobId} is already compiling ${candidate.uri} with a different configuration; cancel it or wait for it`,
            job_id: holder.jobId,
            configuration: holder.snapshot ? toPublicConfiguration(holder.snapshot) : undefined,
          })
        }
      }
      if (fresh.length > 0) {
        const queueJobId = randomUUID()
        await sendCompileJob(queue, trx, { jobId, queueJobId, maxAttempts: snapshot.maxAttempts, timeoutSeconds: snapshot.timeoutSeconds })
        await insertCompileJob(trx, {
          id: jobId,
          owner: caller,
          directory: { nodeId: directory.id, uri: directory.uri },
          files: fresh.map((candidate) => ({ nodeId: candidate.node.id, uri: candidate.uri })),
          snapshot,
          queueJobId,
        })
        for (const candidate of fresh) queued.push({ uri: candidate.uri, job_id: jobId, created: true })
      }
      // The jobs as this request left them, read in its transaction: a worker may claim a new job the moment it commits.
      const jobs = []
      for (const id of new Set(queued.map((entry) => entry.job_id))) {
        const stored = await findCompileJob(trx, { id, ownerId: caller.id })
        if (stored) jobs.push({ ...stored.view, created: id === jobId })
      }
      return { queued, jobs }
    })
    const jobs = [...outcome.jobs].sort((a, b) => Number(b.created) - Number(a.created))
    return { jobs, queued: outcome.queued, refused }
  }

  const cancel: CompileService['cancel'] = async ({ caller, id }) => {
    const stored = await findCompileJob(db, { id, ownerId: caller.id })
    if (!stored) return { ok: false, status: 404, code: 'job_not_found', message: `no compile job ${id}` }
    const { cancelled, status } = await cancelCompileJob(db, { id, ownerId: caller.id })
    if (!cancelled) return { ok: false, status: 409, code: 'job_finished', message: `job ${id} is ${status ?? 'gone'}; only a queued or running job can be cancelled` }
    if (stored.queueJobId) await cancelQueueJob(queue, stored.queueJobId).catch(() => {}) // the row is what counts; a running worker hears the NOTIFY
    return { ok: true, job: (await findCompileJob(db, { id, ownerId: caller.id }))!.view }
  }

  const retry: CompileService['retry'] = async ({ caller, id }) => {
    const stored = await findCompileJob(db, { id, ownerId: caller.id })
    if (!stored) return { ok: false, status: 404, code: 'job_not_found', message: `no compile job ${id}` }
    if (stored.view.status !== 'failed' && stored.view.status !== 'cancelled') {
      return { ok: false, status: 409, code: 'job_not_retryable', message: `job ${id} is ${stored.view.status}; only a failed or cancelled job can be retried` }
    }
    if (!stored.snapshot) return { ok: false, status: 409, code: 'invalid_snapshot', message: `job ${id} has no readable configuration snapshot` }
    const snapshot = stored.snapshot
    // The answer is the job as this request left it (queued), read in its transaction: a worker may claim it the moment it commits.
    return await db.transaction().execute(async (trx): Promise<RetryResult> => {
      const ids = stored.fileRefs.flatMap((file) => (file.nodeId ? [file.nodeId] : [])).sort()
      if (ids.length > 0) await trx.selectFrom('nodes').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
      const holder = (await activeJobsForFiles(trx, ids)).find((entry) => entry.jobId !== id)
      if (holder) {
        return {
          ok: false,
          status: 409,
          code: 'conflicting_active_job',
          message: `job ${holder.jobId} is compiling some of these files now; retry when it has finished`,
          job_id: holder.jobId,
          configuration: holder.snapshot ? toPublicConfiguration(holder.snapshot) : undefined,
        }
      }
      const queueJobId = randomUUID()
      if (!(await requeueCompileJob(trx, { id, ownerId: caller.id, queueJobId }))) {
        return { ok: false, status: 409, code: 'job_not_retryable', message: `job ${id} changed meanwhile; reload and try again` }
      }
      await sendCompileJob(queue, trx, { jobId: id, queueJobId, maxAttempts: snapshot.maxAttempts, timeoutSeconds: snapshot.timeoutSeconds })
      return { ok: true, job: (await findCompileJob(trx, { id, ownerId: caller.id }))!.view }
    })
  }

  return {
    enqueue,
    cancel,
    retry,
    get: async ({ caller, id }) => (await findCompileJob(db, { id, ownerId: caller.id }))?.view,
    list: ({ caller, filter }) => listCompileJobs(db, caller, filter),
    options: async ({ caller }) => {
      const user = await listUserSkills(db, caller)
      const skills = [...options.bundledSkills, ...user.skills].map(({ ref, name, description, source }) => ({ ref, name, description, source }))
      return {
        cli_profiles: options.cliProfiles.map(toCliProfileInfo),
        reasoning_levels: REASONING_LEVELS,
        skills,
        defaults: {
          channel: 'llm',
          model_id: options.defaults.modelId,
          reasoning_level: options.defaults.reasoningLevel,
          call_budget: options.defaults.callBudget,
          timeout_seconds: options.defaults.timeoutSeconds,
          max_attempts: options.defaults.maxAttempts,
          max_files: MAX_COMPILE_FILES,
          skill: options.bundledSkills.some((skill) => skill.ref === DEFAULT_SKILL) ? DEFAULT_SKILL : null,
        },
        limits: { max_files: MAX_COMPILE_FILES, max_call_budget: MAX_CALL_BUDGET, min_timeout_seconds: MIN_TIMEOUT_SECONDS, max_timeout_seconds: MAX_TIMEOUT_SECONDS },
      }
    },
    defaults: options.defaults,
  }
}

/** What the HTTP layer needs of the compile feature (AppContext.compile). */
export interface CompileFeature {
  readonly service: CompileService
  readonly events: import('./job-events.ts').JobEvents
}
