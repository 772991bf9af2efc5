// An attempt of a compile job on its row (SPEC §8): begin (a claim is the queue job and its
// attempt), progress, the lock for publishing, and how it ended — every write fenced by the claim,
// so a worker whose claim was taken over or cancelled writes nothing — and the first-claim failure
// of a job whose configuration cannot be read. The job rows themselves, their views and a person's
// requests on them are compile-jobs-store.ts.
import { sql } from 'kysely'
import type { CompileJobOutput, CompileProgress } from '../../machines/index.ts'
import type { Db, JobStatus } from '../db/schema.ts'
import { ACTIVE_STATUSES, COMPILE_KIND, deactivateFiles, notifyJob, type PublishedPage, type StoredFailure, type StoredResult } from './compile-jobs-store.ts'

export type BeginResult = 'running' | 'cancelled' | 'finished' | 'superseded' | 'missing'

/**
 * Marks the job running for this claim. A claim is (queue job, attempt): a newer attempt of the
 * same queue job takes over a `running` row left by a dead worker; anything else is refused.
 */
export async function beginAttempt(db: Db, { jobId, queueJobId, attempt }: { jobId: string; queueJobId: string; attempt: number }): Promise<BeginResult> {
  const updated = await db
    .updateTable('jobs')
    .set({
      status: 'running',
      stage: 'parsing',
      queue_attempt: attempt,
      attempts: sql<number>`attempts + 1`,
      started_at: sql<Date>`now()`,
      finished_at: null,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', jobId)
    .where('kind', '=', COMPILE_KIND)
    .where('queue_job_id', '=', queueJobId)
    .where((eb) => eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'running'), eb('queue_attempt', '<', attempt)])]))
    .returning(['owner_id'])
    .executeTakeFirst()
  if (updated) {
    await notifyJob(db, { jobId, ownerId: updated.owner_id })
    return 'running'
  }
  const row = await db.selectFrom('jobs').select(['status', 'queue_job_id']).where('id', '=', jobId).executeTakeFirst()
  if (!row) return 'missing'
  if (row.status === 'cancelled') return 'cancelled'
  if (row.queue_job_id !== queueJobId || row.status === 'running') return 'superseded'
  return 'finished'
}

/** The claim still holds: same queue job and attempt, still running. Used to fence every write of an attempt. */
function claimed(jobId: string, queueJobId: string, attempt: number) {
  return (db: Db) =>
    db
      .updateTable('jobs')
      .where('id', '=', jobId)
      .where('queue_job_id', '=', queueJobId)
      .where('queue_attempt', '=', attempt)
      .where('status', '=', 'running')
}

export async function recordProgress(db: Db, { jobId, queueJobId, attempt, progress }: { jobId: string; queueJobId: string; attempt: number; progress: CompileProgress }): Promise<void> {
  const updated = await claimed(jobId, queueJobId, attempt)(db)
    .set({ stage: progress.stage, progress: JSON.stringify(progress), updated_at: sql<Date>`now()` })
    .returning(['owner_id'])
    .executeTakeFirst()
  if (updated) await notifyJob(db, { jobId, ownerId: updated.owner_id })
}

/** Locks the claimed row for publishing; undefined when the job was cancelled or taken over meanwhile. */
export async function lockClaimedJob(db: Db, { jobId, queueJobId, attempt }: { jobId: string; queueJobId: string; attempt: number }): Promise<{ ownerId: string; status: JobStatus } | undefined> {
  const row = await db
    .selectFrom('jobs')
    .select(['owner_id', 'status', 'queue_job_id', 'queue_attempt'])
    .where('id', '=', jobId)
    .forUpdate()
    .executeTakeFirst()
  if (!row) return undefined
  return { ownerId: row.owner_id, status: row.queue_job_id === queueJobId && row.queue_attempt === attempt ? row.status : 'cancelled' }
}

/** Records how an attempt ended (fenced by its claim). Returns false when the claim was gone. */
export async function finishAttempt(
  db: Db,
  { jobId, queueJobId, attempt, output, pages }: { jobId: string; queueJobId: string; attempt: number; output: CompileJobOutput; pages?: ReadonlyArray<PublishedPage> | undefined },
): Promise<boolean> {
  const base = { progress: JSON.stringify(output.progress), updated_at: sql<Date>`now()` }
  let change
  switch (output.status) {
    case 'succeeded':
      change = {
        ...base,
        status: 'succeeded' as const,
        stage: null,
        error: null,
        result: JSON.stringify({
          artifacts: output.artifacts,
          skipped: output.skipped.map((file) => ({ uri: file.uri, reason: file.reason ?? 'unreadable' })),
          ...(pages ? { pages } : {}),
        } satisfies StoredResult),
        finished_at: sql<Date>`now()`,
      }
      break
    case 'queued':
      change = { ...base, status: 'queued' as const, stage: null, error: output.failure.message, failure: JSON.stringify(output.failure) }
      break
    case 'failed':
      change = {
        ...base,
        status: 'failed' as const,
        stage: null,
        error: output.failure.message,
        failure: JSON.stringify(output.failure),
        dead_lettered_at: sql<Date>`now()`,
        finished_at: sql<Date>`now()`,
      }
      break
    case 'cancelled':
      change = { ...base, status: 'cancelled' as const, stage: null, finished_at: sql<Date>`now()` }
      break
  }
  const updated = await claimed(jobId, queueJobId, attempt)(db).set(change).returning(['owner_id']).executeTakeFirst()
  if (!updated) return false
  if (output.status !== 'queued') await deactivateFiles(db, jobId)
  await notifyJob(db, { jobId, ownerId: updated.owner_id })
  return true
}

/**
 * A job whose stored configuration cannot be read (written by a newer or broken server, or over a
 * limit it was never checked against) fails for good at its first claim, with a reason, instead
 * of staying queued forever with its files locked to it.
 */
export async function failUnreadableJob(db: Db, { jobId, queueJobId }: { jobId: string; queueJobId: string }): Promise<boolean> {
  const failure = {
    stage: 'queued',
    code: 'unreadable_configuration',
    message: "the job's stored configuration could not be read; compile the files again",
    attempt: 1,
    retryable: false,
    bodyReadable: false,
  } satisfies StoredFailure
  const updated = await db
    .updateTable('jobs')
    .set({ status: 'failed', stage: null, error: failure.message, failure: JSON.stringify(failure), dead_lettered_at: sql<Date>`now()`, finished_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', jobId)
    .where('kind', '=', COMPILE_KIND)
    .where('queue_job_id', '=', queueJobId)
    .where('status', 'in', ACTIVE_STATUSES)
    .returning(['owner_id'])
    .executeTakeFirst()
  if (!updated) return false
  await deactivateFiles(db, jobId)
  await notifyJob(db, { jobId, ownerId: updated.owner_id })
  return true
}
