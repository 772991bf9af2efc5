// Compile job rows (SPEC §8): our record of a job — status, stage, progress, structured failure,
// configuration snapshot, result — kept in `jobs` (kind 'compile') with the files it covers in
// `compile_job_files`. The queue (pg-boss) only claims and schedules; every change here is
// announced with NOTIFY on `knowagent_jobs` in the same transaction, so live views in any server
// process hear of it when it commits. Repositories are plain functions over `db | trx`. An
// attempt's own writes (begin, progress, the publishing lock, its end) are compile-attempts-store.ts.
import * as Schema from 'effect/Schema'
import { sql } from 'kysely'
import type { CompileFailure, CompileProgress } from '../../machines/index.ts'
import type { GeneratedKind, JobStatus } from '../db/schema.ts'
import type { Db, Owner } from '../db/schema.ts'
import { formatKbUri, pathToSegments } from '../workspace/uri.ts'
import { type CompileSnapshot, decodeSnapshot, type PublicConfiguration, toPublicConfiguration } from './compile-snapshot.ts'

export const COMPILE_KIND = 'compile'
/** NOTIFY channel; the payload is `{"job_id","owner_id"}` only — listeners re-read the row. */
export const JOBS_CHANNEL = 'knowagent_jobs'
export const ACTIVE_STATUSES: ReadonlyArray<JobStatus> = ['queued', 'running']

const Stage = Schema.Literals(['queued', 'parsing', 'summarising', 'overview', 'abstract', 'publishing'])
const ProgressSchema = Schema.Struct({
  stage: Stage,
  filesDone: Schema.Number,
  filesTotal: Schema.Number,
  callsUsed: Schema.Number,
  callBudget: Schema.Number,
})
const FailureSchema = Schema.Struct({
  stage: Stage,
  code: Schema.String,
  message: Schema.String,
  attempt: Schema.Number,
  retryable: Schema.Boolean,
  bodyReadable: Schema.Boolean,
})
const PublishedPageSchema = Schema.Struct({ id: Schema.String, uri: Schema.String, kind: Schema.Literals(['summary', 'overview', 'abstract']) })
const ResultSchema = Schema.Struct({
  artifacts: Schema.Array(Schema.String),
  skipped: Schema.Array(Schema.Struct({ uri: Schema.String, reason: Schema.String })),
  /** Each page published: its node (followed to where it is now), its URI then, what it is. Absent for jobs that succeeded before it was kept. */
  pages: Schema.optional(Schema.Array(PublishedPageSchema)),
})
/** The `result` column as written (compile-attempts-store.ts writes it). */
export type StoredResult = typeof ResultSchema.Type
type JobResult = Omit<StoredResult, 'pages'>
export type PublishedPage = typeof PublishedPageSchema.Type

/** A page a job produced, as it is now: at the URI it was published at, moved (`uri` ≠ `published`), or deleted (`uri` null). */
export interface ProducedPage {
  readonly kind: GeneratedKind
  /** Its URI when the job published it. */
  readonly published: string
  /** Where it is now; null when it was deleted. */
  readonly uri: string | null
}

const decodeOrNull = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, value: unknown): S['Type'] | null => {
  if (value === null || value === undefined) return null
  try {
    return Schema.decodeUnknownSync(schema as never)(value) as S['Type']
  } catch {
    return null
  }
}

export interface CompileJobView {
  readonly id: string
  readonly status: JobStatus
  readonly stage: string | null
  /** The directory whose files are compiled. */
  readonly directory_uri: string
  readonly files: ReadonlyArray<{ readonly uri: string }>
  readonly progress: CompileProgress | null
  /** The last failure; with status `queued` it is the attempt that will be retried. */
  readonly failure: CompileFailure | null
  readonly dead_lettered: boolean
  readonly result: JobResult | null
  /** A succeeded job's pages where they are now; null for other jobs and for jobs that succeeded before the pages were kept (see `result.artifacts`). */
  readonly produced: ReadonlyArray<ProducedPage> | null
  readonly configuration: PublicConfiguration | null
  readonly attempts: number
  readonly max_attempts: number | null
  readonly created_at: string
  readonly started_at: string | null
  readonly finished_at: string | null
  readonly updated_at: string
}

export interface StoredCompileJob {
  readonly view: CompileJobView
  readonly ownerId: string
  readonly snapshot: CompileSnapshot | null
  readonly queueJobId: string | null
  readonly queueAttempt: number | null
  readonly fileRefs: ReadonlyArray<{ readonly nodeId: string | null; readonly uri: string }>
  /** The pages the job published (result.pages), before they are followed to where they are now. */
  readonly publishedPages: ReadonlyArray<PublishedPage> | null
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString())

function jobQuery(db: Db) {
  return db.selectFrom('jobs').selectAll().where('kind', '=', COMPILE_KIND)
}
type JobRowSelected = Awaited<ReturnType<ReturnType<typeof jobQuery>['executeTakeFirstOrThrow']>>

async function filesOf(db: Db, jobIds: ReadonlyArray<string>): Promise<Map<string, Array<{ nodeId: string | null; uri: string }>>> {
  const byJob = new Map<string, Array<{ nodeId: string | null; uri: string }>>()
  if (jobIds.length === 0) return byJob
  const rows = await db.selectFrom('compile_job_files').select(['job_id', 'node_id', 'uri']).where('job_id', 'in', jobIds).orderBy('job_id').orderBy('position').execute()
  for (const row of rows) {
    const list = byJob.get(row.job_id) ?? []
    list.push({ nodeId: row.node_id, uri: row.uri })
    byJob.set(row.job_id, list)
  }
  return byJob
}

function toStored(row: JobRowSelected, files: ReadonlyArray<{ nodeId: string | null; uri: string }>, produced: ReadonlyMap<string, string | null> = new Map()): StoredCompileJob {
  const stored = decodeOrNull(ResultSchema, row.result)
  const pages = row.status === 'succeeded' ? (stored?.pages ?? null) : null
  let snapshot: CompileSnapshot | null = null
  try {
    snapshot = row.configuration_json === null ? null : decodeSnapshot(row.configuration_json)
  } catch {
    snapshot = null
  }
  return {
    ownerId: row.owner_id,
    snapshot,
    queueJobId: row.queue_job_id,
    queueAttempt: row.queue_attempt,
    fileRefs: files,
    publishedPages: pages,
    view: {
      id: row.id,
      status: row.status,
      stage: row.stage,
      directory_uri: row.uri,
      files: files.map((file) => ({ uri: file.uri })),
      progress: decodeOrNull(ProgressSchema, row.progress),
      failure: decodeOrNull(FailureSchema, row.failure),
      dead_lettered: row.dead_lettered_at !== null,
      result: stored === null ? null : { artifacts: stored.artifacts, skipped: stored.skipped },
      produced: pages === null ? null : pages.map((page) => ({ kind: page.kind, published: page.uri, uri: produced.has(page.id) ? produced.get(page.id)! : null })),
      configuration: snapshot ? toPublicConfiguration(snapshot) : null,
      attempts: row.attempts,
      max_attempts: row.max_attempts,
      created_at: iso(row.created_at)!,
      started_at: iso(row.started_at),
      finished_at: iso(row.finished_at),
      updated_at: iso(row.updated_at)!,
    },
  }
}

export async function notifyJob(db: Db, { jobId, ownerId }: { jobId: string; ownerId: string }): Promise<void> {
  await sql`select pg_notify(${JOBS_CHANNEL}, ${JSON.stringify({ job_id: jobId, owner_id: ownerId })})`.execute(db)
}

/** A job of the owner's (or of anyone's when `owner` is undefined: the worker's view). */
export async function findCompileJob(db: Db, { id, ownerId }: { id: string; ownerId?: string | undefined }): Promise<StoredCompileJob | undefined> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return undefined
  let query = jobQuery(db).where('id', '=', id)
  if (ownerId !== undefined) query = query.where('owner_id', '=', ownerId)
  const row = await query.executeTakeFirst()
  if (!row) return undefined
  return toStored(row, (await filesOf(db, [row.id])).get(row.id) ?? [], await pagesNow(db, [row]))
}

/** Where the pages succeeded jobs published are now (node id → URI; a deleted page is absent). */
async function pagesNow(db: Db, rows: ReadonlyArray<JobRowSelected>): Promise<Map<string, string>> {
  const ids = rows.flatMap((row) => (row.status === 'succeeded' ? (decodeOrNull(ResultSchema, row.result)?.pages ?? []).map((page) => page.id) : []))
  if (ids.length === 0) return new Map()
  const found = await db
    .selectFrom('nodes')
    .innerJoin('users', 'users.id', 'nodes.owner_id')
    .select(['nodes.id', 'nodes.path', 'users.login'])
    .where('nodes.id', 'in', [...new Set(ids)])
    .where('nodes.owner_id', 'in', [...new Set(rows.map((row) => row.owner_id))])
    .execute()
  return new Map(found.map((node) => [node.id, formatKbUri({ login: node.login, segments: pathToSegments(node.path), directory: false })]))
}

export interface JobListFilter {
  readonly directoryUri?: string | undefined
  readonly statuses?: ReadonlyArray<JobStatus> | undefined
  readonly offset: number
  readonly limit: number
}

export async function listCompileJobs(db: Db, owner: Owner, filter: JobListFilter): Promise<{ jobs: CompileJobView[]; total: number }> {
  let query = jobQuery(db).where('owner_id', '=', owner.id)
  let count = db.selectFrom('jobs').select((eb) => eb.fn.countAll().as('n')).where('kind', '=', COMPILE_KIND).where('owner_id', '=', owner.id)
  if (filter.directoryUri !== undefined) {
    query = query.where('uri', '=', filter.directoryUri)
    count = count.where('uri', '=', filter.directoryUri)
  }
  if (filter.statuses !== undefined && filter.statuses.length > 0) {
    query = query.where('status', 'in', filter.statuses)
    count = count.where('status', 'in', filter.statuses)
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').offset(filter.offset).limit(filter.limit).execute()
  const files = await filesOf(db, rows.map((row) => row.id))
  const pages = await pagesNow(db, rows)
  const total = Number((await count.executeTakeFirstOrThrow()).n)
  return { jobs: rows.map((row) => toStored(row, files.get(row.id) ?? [], pages).view), total }
}

export interface ActiveFileJob {
  readonly nodeId: string
  readonly jobId: string
  readonly snapshot: CompileSnapshot | null
}

/** Active jobs covering any of these files (call with the file rows locked). */
export async function activeJobsForFiles(db: Db, nodeIds: ReadonlyArray<string>): Promise<ActiveFileJob[]> {
  if (nodeIds.length === 0) return []
  const rows = await db
    .selectFrom('compile_job_files')
    .innerJoin('jobs', 'jobs.id', 'compile_job_files.job_id')
    .select(['compile_job_files.node_id', 'jobs.id as job_id', 'jobs.configuration_json'])
    .where('compile_job_files.node_id', 'in', nodeIds)
    .where('compile_job_files.active', '=', true)
    .execute()
  return rows.map((row) => {
    let snapshot: CompileSnapshot | null = null
    try {
      snapshot = decodeSnapshot(row.configuration_json)
    } catch {
      snapshot = null
    }
    return { nodeId: row.node_id!, jobId: row.job_id, snapshot }
  })
}

/** The lock's class (first key): "cmpl" in ASCII, beside the tree lock's "know". */
const ACTIVE_JOBS_LOCK_CLASS = 0x636d706c

/**
 * Counts the owner's queued and running jobs under a transaction-scoped lock of that owner's, so
 * that two requests of one person cannot both pass the bound on active jobs. Take it first in the
 * transaction, before the file rows' locks.
 */
export async function lockAndCountActiveJobs(trx: Db, ownerId: string): Promise<number> {
  await sql`select pg_advisory_xact_lock(${ACTIVE_JOBS_LOCK_CLASS}::int4, hashtext(${ownerId}::text))`.execute(trx)
  const row = await trx
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('owner_id', '=', ownerId)
    .where('kind', '=', COMPILE_KIND)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function insertCompileJob(
  db: Db,
  {
    id,
    owner,
    directory,
    files,
    snapshot,
    queueJobId,
  }: {
    id: string
    owner: Owner
    directory: { nodeId: string; uri: string }
    files: ReadonlyArray<{ nodeId: string; uri: string }>
    snapshot: CompileSnapshot
    queueJobId: string
  },
): Promise<void> {
  const progress: CompileProgress = { stage: 'queued', filesDone: 0, filesTotal: files.length, callsUsed: 0, callBudget: snapshot.callBudget }
  await db
    .insertInto('jobs')
    .values({
      id,
      owner_id: owner.id,
      node_id: directory.nodeId,
      version_id: null,
      uri: directory.uri,
      kind: COMPILE_KIND,
      status: 'queued',
      configuration_json: JSON.stringify(snapshot),
      progress: JSON.stringify(progress),
      max_attempts: snapshot.maxAttempts,
      queue_job_id: queueJobId,
      queue_attempt: 0,
    })
    .execute()
  await db
    .insertInto('compile_job_files')
    .values(files.map((file, position) => ({ job_id: id, position, owner_id: owner.id, node_id: file.nodeId, uri: file.uri })))
    .execute()
  await notifyJob(db, { jobId: id, ownerId: owner.id })
}

/** Marks the job's files free for other jobs (it ended: succeeded, failed or cancelled). */
export async function deactivateFiles(db: Db, jobId: string): Promise<void> {
  await db.updateTable('compile_job_files').set({ active: false }).where('job_id', '=', jobId).where('active', '=', true).execute()
}

/** A person cancels a queued or running job. `cancelled` only when this call cancelled it; otherwise the status it has. */
export async function cancelCompileJob(db: Db, { id, ownerId }: { id: string; ownerId: string }): Promise<{ cancelled: boolean; status: JobStatus | undefined }> {
  const updated = await db
    .updateTable('jobs')
    .set({ status: 'cancelled', stage: null, finished_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .where('kind', '=', COMPILE_KIND)
    .where('status', 'in', ACTIVE_STATUSES)
    .returning(['status'])
    .executeTakeFirst()
  if (updated) {
    await deactivateFiles(db, id)
    await notifyJob(db, { jobId: id, ownerId })
    return { cancelled: true, status: 'cancelled' }
  }
  const row = await db.selectFrom('jobs').select('status').where('id', '=', id).where('owner_id', '=', ownerId).where('kind', '=', COMPILE_KIND).executeTakeFirst()
  return { cancelled: false, status: row?.status }
}

/**
 * A failed or cancelled job back to queued under a new queue job, its snapshot unchanged. Its
 * files become active again: the caller holds their rows locked and has checked no other active
 * job covers them.
 */
export async function requeueCompileJob(db: Db, { id, ownerId, queueJobId }: { id: string; ownerId: string; queueJobId: string }): Promise<boolean> {
  const updated = await db
    .updateTable('jobs')
    .set({
      status: 'queued',
      stage: null,
      error: null,
      failure: null,
      result: null,
      dead_lettered_at: null,
      finished_at: null,
      started_at: null,
      queue_job_id: queueJobId,
      queue_attempt: 0,
      attempts: 0, // a retry starts its count again ("attempt 1 of 3", not "4 of 3")
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .where('kind', '=', COMPILE_KIND)
    .where('status', 'in', ['failed', 'cancelled'])
    .returning(['id'])
    .executeTakeFirst()
  if (!updated) return false
  await db.updateTable('compile_job_files').set({ active: true }).where('job_id', '=', id).where('node_id', 'is not', null).execute()
  await notifyJob(db, { jobId: id, ownerId })
  return true
}

/** The `failure` column as written. */
export type StoredFailure = typeof FailureSchema.Type
