// The compile feature's one use case (SPEC §8): what a person asks of it — queue files, cancel a
// job, retry a job — whichever face asks (the JSON API, the compile form, the task center; a CLI
// command or an MCP tool would be one more face). Each request is decoded here, admitted here (the
// per-person rate limit: a queue request that decodes, and a retry that will queue work again —
// never a retry of a job that is not there, or not failed or cancelled), and done in one
// transaction. It fails with the tagged errors of compile-errors.ts, which carry their public code
// and HTTP status; the faces only translate a request in and project the answer out.
//
// A queue request names up to 32 raw files of one directory and this batch's parameters; each file
// is queued in one new job, joins an existing job with the identical configuration, or is refused
// with a reason (compile-refusals.ts). The configuration is resolved once and copied into the job
// (the snapshot); the server's configuration is never changed by a job.
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { randomUUID } from 'node:crypto'
import { describeDecodeError } from '../describe-decode-error.ts'
import { createRateLimiter } from '../limits/rate-limiter.ts'
import type { Owner } from '../db/schema.ts'
import { MAX_CALL_BUDGET, MAX_REQUEST_URIS, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS } from './compile-config.ts'
import {
  CompileRateLimited,
  ConflictingActiveJob,
  InvalidCompileRequest,
  JobFinished,
  JobNotFound,
  JobNotRetryable,
  TooManyActiveJobs,
  UnreadableJobConfiguration,
} from './compile-errors.ts'
import { activeJobsForFiles, cancelCompileJob, type CompileJobView, findCompileJob, insertCompileJob, lockAndCountActiveJobs, requeueCompileJob, type StoredCompileJob } from './compile-jobs-store.ts'
import { cancelQueueJob, type QueueHandle, sendCompileJob } from './compile-queue.ts'
import { type AskedConfiguration, type Candidate, type Refusal, type RefusalContext, resolveConfiguration, screenUris, unstorableSnapshot } from './compile-refusals.ts'
import { type CompileSnapshot, sameConfiguration, toPublicConfiguration } from './compile-snapshot.ts'

const RATE_WINDOW_MS = 60_000
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const Uri = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))
const Short = Schema.String.check(Schema.isMaxLength(200))

/** A queue request in its public words (`POST compile`'s body, docs/api.md); the compile form's fields say the same. */
export const QueueRequest = Schema.Struct({
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
export type QueueRequest = typeof QueueRequest.Type

/** A decoded queue request: the files, and the configuration they are asked to be compiled with. */
export interface CompileParams extends AskedConfiguration {
  readonly uris: ReadonlyArray<string>
}

export interface QueueResult {
  /** Jobs created by this request, then existing identical jobs the request joined. */
  readonly jobs: ReadonlyArray<CompileJobView & { readonly created: boolean }>
  /** Where each queued URI went. */
  readonly queued: ReadonlyArray<{ readonly uri: string; readonly job_id: string; readonly created: boolean }>
  readonly refused: ReadonlyArray<Refusal>
}

/** Who asks, and the clock their compile requests are counted with (tests move it; default `Date.now`). */
export interface CompileAsker {
  readonly caller: Owner
  readonly now?: (() => number) | undefined
}

export interface CompileRequests {
  /** Queues the files `request` names (`POST compile`'s body: decoded here). */
  readonly queue: (args: CompileAsker & { readonly request: unknown }) => Effect.Effect<QueueResult, InvalidCompileRequest | CompileRateLimited>
  /** Cancels a queued or running job: nothing of it is published any more. */
  readonly cancel: (args: CompileAsker & { readonly id: string }) => Effect.Effect<CompileJobView, JobNotFound | JobFinished>
  /** Queues a failed or cancelled job again, with its snapshot and a fresh set of attempts. */
  readonly retry: (
    args: CompileAsker & { readonly id: string },
  ) => Effect.Effect<CompileJobView, JobNotFound | JobNotRetryable | CompileRateLimited | UnreadableJobConfiguration | ConflictingActiveJob | TooManyActiveJobs>
}

export interface CompileRequestsOptions extends RefusalContext {
  readonly queue: QueueHandle
  /** `limits.compileRequestsPerMinute`: compile requests one person may make in any 60 s, across every process. */
  readonly requestsPerMinute: number
}

/** A queue request decoded, in our words; a field its channel does not use is refused, not dropped (the job would not run as asked). */
export function decodeQueueRequest(request: unknown): Effect.Effect<CompileParams, InvalidCompileRequest> {
  return Schema.decodeUnknownEffect(QueueRequest)(request, { errors: 'all', onExcessProperty: 'error' }).pipe(
    Effect.mapError((error) => new InvalidCompileRequest({ reason: `invalid request: ${describeDecodeError(error)}` })),
    Effect.flatMap((body) =>
      body.channel === 'llm' && body.profile_id !== undefined
        ? Effect.fail(new InvalidCompileRequest({ reason: '"profile_id" is for channel "cli"; with channel "llm" give model_id alone (or use channel "cli")' }))
        : Effect.succeed({
            uris: body.uris,
            channel: body.channel,
            modelId: body.model_id,
            profileId: body.profile_id,
            reasoningLevel: body.reasoning_level,
            callBudget: body.call_budget,
            timeoutSeconds: body.timeout_seconds,
            artifactParentUri: body.artifact_parent_uri,
            skill: body.skill,
          }),
    ),
  )
}

/** Whether `id` can name a job at all (a UUID); anything else is no job of anyone's. */
export function isJobId(id: string): boolean {
  return JOB_ID.test(id)
}


async function enqueue(options: CompileRequestsOptions, caller: Owner, params: CompileParams): Promise<QueueResult> {
  const { db, queue } = options
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
    // First the caller's count of active jobs (one request of theirs at a time past this point)…
    const active = await lockAndCountActiveJobs(trx, caller.id)
    // …then the files (in one order, so two requests cannot deadlock): concurrent requests for
    // the same file serialise here, and the second sees the first's job.
    const ids = screened.candidates.map((candidate) => candidate.node.id).sort()
    await trx.selectFrom('nodes').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
    const holders = await activeJobsForFiles(trx, ids)
    const queued: Array<{ uri: string; job_id: string; created: boolean }> = []
    const fresh: Candidate[] = []
    for (const candidate of screened.candidates) {
      const holder = holders.find((entry) => entry.nodeId === candidate.node.id)
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
    const limit = queue.settings.maxActiveJobsPerUser
    if (fresh.length > 0 && active >= limit) {
      const message = `you have ${active} compile jobs queued or running, the most one person may have (${limit}); wait for some to finish or cancel them`
      for (const candidate of fresh.splice(0)) refused.push({ uri: candidate.uri, code: 'too_many_active_jobs', message })
    }
    if (fresh.length > 0) {
      const queueJobId = randomUUID()
      await sendCompileJob(queue, trx, { jobId, ownerId: caller.id, queueJobId, maxAttempts: snapshot.maxAttempts, timeoutSeconds: snapshot.timeoutSeconds })
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

export function makeCompileRequests(options: CompileRequestsOptions): CompileRequests {
  const { db, queue: queueHandle, requestsPerMinute: limit } = options

  /** Takes one of the caller's compile requests of the last 60 s, counted in PostgreSQL (every server process shares them). */
  const admit = ({ caller, now }: CompileAsker): Effect.Effect<void, CompileRateLimited> =>
    Effect.promise(() => createRateLimiter({ db, limit, windowMs: RATE_WINDOW_MS, now }).take(`compile:${caller.id}`)).pipe(
      Effect.flatMap((waitMs) => (waitMs === 0 ? Effect.void : Effect.fail(new CompileRateLimited({ limit, retryAfterSeconds: Math.ceil(waitMs / 1000) })))),
    )

  const readJob = (caller: Owner, id: string) => Effect.promise(() => findCompileJob(db, { id, ownerId: caller.id }))
  /** The caller's job `id` names (decoded: anything but a UUID names none). */
  const ownJob = (caller: Owner, id: string): Effect.Effect<StoredCompileJob, JobNotFound> =>
    Effect.gen(function* () {
      const stored = isJobId(id) ? yield* readJob(caller, id) : undefined
      return stored ?? (yield* new JobNotFound({ id }))
    })

  const queue: CompileRequests['queue'] = ({ caller, now, request }) =>
    Effect.gen(function* () {
      const params = yield* decodeQueueRequest(request) // a request that does not decode costs nothing
      yield* admit({ caller, now })
      return yield* Effect.promise(() => enqueue(options, caller, params))
    })

  const cancel: CompileRequests['cancel'] = ({ caller, id }) =>
    Effect.gen(function* () {
      const stored = yield* ownJob(caller, id)
      const jobId = stored.view.id
      const { cancelled, status } = yield* Effect.promise(() => cancelCompileJob(db, { id: jobId, ownerId: caller.id }))
      if (!cancelled) return yield* new JobFinished({ id: jobId, jobStatus: status })
      const queueJobId = stored.queueJobId
      if (queueJobId) yield* Effect.promise(() => cancelQueueJob(queueHandle, queueJobId).catch(() => {})) // the row is what counts; a running worker hears the NOTIFY
      return (yield* readJob(caller, jobId))!.view
    })

  const retry: CompileRequests['retry'] = ({ caller, now, id }) =>
    Effect.gen(function* () {
      const stored = yield* ownJob(caller, id)
      const jobId = stored.view.id
      if (stored.view.status !== 'failed' && stored.view.status !== 'cancelled') return yield* new JobNotRetryable({ id: jobId, jobStatus: stored.view.status })
      // Only a retry that can queue work counts against the rate limit: asking about a job that is not
      // there (or not failed or cancelled) is answered without using it up.
      yield* admit({ caller, now })
      const snapshot = stored.snapshot
      if (!snapshot) return yield* new UnreadableJobConfiguration({ id: jobId })
      // The answer is the job as this request left it (queued), read in its transaction: a worker may claim it the moment it commits.
      const outcome = yield* Effect.promise(() =>
        db.transaction().execute(async (trx): Promise<CompileJobView | ConflictingActiveJob | JobNotRetryable | TooManyActiveJobs> => {
          const limit = queueHandle.settings.maxActiveJobsPerUser
          if ((await lockAndCountActiveJobs(trx, caller.id)) >= limit) return new TooManyActiveJobs({ limit })
          const ids = stored.fileRefs.flatMap((file) => (file.nodeId ? [file.nodeId] : [])).sort()
          if (ids.length > 0) await trx.selectFrom('nodes').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
          const holder = (await activeJobsForFiles(trx, ids)).find((entry) => entry.jobId !== jobId)
          if (holder) return new ConflictingActiveJob({ holderId: holder.jobId, configuration: holder.snapshot ? toPublicConfiguration(holder.snapshot) : undefined })
          const queueJobId = randomUUID()
          if (!(await requeueCompileJob(trx, { id: jobId, ownerId: caller.id, queueJobId }))) return new JobNotRetryable({ id: jobId, jobStatus: undefined })
          await sendCompileJob(queueHandle, trx, { jobId, ownerId: caller.id, queueJobId, maxAttempts: snapshot.maxAttempts, timeoutSeconds: snapshot.timeoutSeconds })
          return (await findCompileJob(trx, { id: jobId, ownerId: caller.id }))!.view
        }),
      )
      if (outcome instanceof ConflictingActiveJob || outcome instanceof JobNotRetryable || outcome instanceof TooManyActiveJobs) return yield* outcome
      return outcome
    })

  return { queue, cancel, retry }
}
