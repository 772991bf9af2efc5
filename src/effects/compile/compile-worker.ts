// The compile worker (SPEC §8, §10): a long-lived resource that takes compile jobs from the queue
// and runs each claimed attempt (compile-pipeline.ts). Any number of workers, in `knowagent serve`
// or `knowagent worker` processes on any machine that reaches the database, share one queue:
// pg-boss hands each attempt to exactly one of them, and a worker that dies mid-job stops sending
// heartbeats, so its job is retried by another once the heartbeat expires.
// Stopping is graceful and bounded: every running attempt is interrupted (its model call aborted,
// its CLI process tree killed), recorded as released for retry, and settled with the queue before
// the queue connection closes.
import type { Kysely } from 'kysely'
import type pg from 'pg'
import type { Clock, Job } from 'pg-boss'
import { randomUUID } from 'node:crypto'
import type { CompileJobOutput } from '../../machines/index.ts'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import { traced } from '../observability/tracing.ts'
import type { QueueSettings } from './compile-config.ts'
import { failUnreadableJob } from './compile-attempts-store.ts'
import { findCompileJob } from './compile-jobs-store.ts'
import { makeLocalCompileThread } from './local-compile-thread.ts'
import { type AttemptStopReason, type CompileEngines, type CompileAttemptDeps, runCompileAttempt } from './compile-pipeline.ts'
import { COMPILE_QUEUE, type CompileQueueData, type QueueHandle, startQueue } from './compile-queue.ts'
import type { JobEvents } from './job-events.ts'

export interface CompileWorker {
  readonly id: string
  /** Job ids of the attempts running now. */
  readonly running: () => ReadonlyArray<string>
  readonly queue: QueueHandle
  /** Interrupts the running attempts, settles them, stops taking jobs and closes the queue. Safe to call twice. */
  readonly stop: () => Promise<void>
}

export interface CompileWorkerOptions {
  readonly db: Kysely<DB>
  /** The database's connection settings (DatabaseHandle.connection). */
  readonly connection: pg.ClientConfig
  readonly engines: CompileEngines
  readonly settings: QueueSettings
  /** Job changes from every process: they wake the worker (a job was queued) and carry cancellations. */
  readonly events: JobEvents
  readonly logger?: Logger | undefined
  /** pg-boss's clock (tests pass its TestClock); the job machine's timeout uses real time. */
  readonly clock?: Clock | undefined
  /** A queue already started in this process (serve shares one); otherwise the worker starts its own. */
  readonly queue?: QueueHandle | undefined
  readonly onModelCall?: CompileAttemptDeps['onModelCall']
  /** How long stop() waits for interrupted attempts to settle. Default 10 s. */
  readonly stopTimeoutMs?: number | undefined
}

type QueueResult = { id: string; status: 'completed' | 'failed' | 'deadletter'; output?: object }

function queueResultOf(id: string, output: CompileJobOutput): QueueResult {
  switch (output.status) {
    case 'succeeded':
    case 'cancelled':
      return { id, status: 'completed', output: { status: output.status } }
    case 'queued':
      return { id, status: 'failed', output: { code: output.failure.code, message: output.failure.message } }
    case 'failed':
      return { id, status: 'deadletter', output: { code: output.failure.code, message: output.failure.message } }
  }
}

export async function startCompileWorker(options: CompileWorkerOptions): Promise<CompileWorker> {
  const id = `worker-${randomUUID().slice(0, 8)}`
  const logger = options.logger?.child({ worker: id })
  const ownsQueue = options.queue === undefined
  const queue = options.queue ?? (await startQueue({ connection: options.connection, settings: options.settings, logger, clock: options.clock, instanceName: id }))
  const runs = new Map<string, AbortController>()
  // The built-in local model's steps run on one thread of their own, started on first use.
  const ownedCompiler = options.engines.localCompiler ? undefined : makeLocalCompileThread()
  const engines: CompileEngines = ownedCompiler ? { ...options.engines, localCompiler: ownedCompiler } : options.engines
  const settled = new Set<Promise<unknown>>()
  let stopping: Promise<void> | undefined

  let workId: string | undefined
  /**
   * Makes every poller of this worker fetch now instead of at its next poll (pg-boss's own LISTEN
   * is off, compile-queue.ts). `notifyWorker` wakes one poller, and `work()` starts one per
   * `concurrency`: each is woken. A poller that is running a job fetches again as soon as it ends.
   */
  const wake = (): void => {
    if (workId === undefined) return
    for (const poller of queue.boss.getWipData()) if (poller.workId === workId) queue.boss.notifyWorker(poller.id)
  }

  const unsubscribe = options.events.subscribe((event) => {
    // A job queued (or changed) in any process, or notifications missed: look for work now.
    if (event.type === 'resync' || !runs.has(event.jobId)) wake()
    if (event.type !== 'changed' || !runs.has(event.jobId)) return
    void options.db
      .selectFrom('jobs')
      .select('status')
      .where('id', '=', event.jobId)
      .executeTakeFirst()
      .then((row) => {
        if (row?.status === 'cancelled') runs.get(event.jobId)?.abort('cancel' satisfies AttemptStopReason)
      })
      .catch(() => {})
  })

  const runJob = async (job: Job<CompileQueueData>): Promise<QueueResult> => {
    const jobId = job.data?.jobId
    const stored = typeof jobId === 'string' ? await findCompileJob(options.db, { id: jobId }) : undefined
    if (!stored) {
      logger?.warn('compile queue job without a job row', { queueJobId: job.id, jobId })
      return { id: job.id, status: 'completed', output: { status: 'missing' } }
    }
    if (!stored.snapshot) {
      const failed = await failUnreadableJob(options.db, { jobId: stored.view.id, queueJobId: job.id })
      logger?.warn('compile job with an unreadable configuration', { queueJobId: job.id, jobId: stored.view.id, failed })
      return { id: job.id, status: 'completed', output: { status: 'unreadable_configuration' } }
    }
    const snapshot = stored.snapshot
    const owner = await options.db.selectFrom('users').select(['id', 'login']).where('id', '=', stored.ownerId).executeTakeFirst()
    if (!owner) return { id: job.id, status: 'completed', output: { status: 'owner_gone' } }
    const controller = new AbortController()
    runs.set(stored.view.id, controller)
    const onClaimLost = () => controller.abort('claim_lost' satisfies AttemptStopReason)
    job.signal.addEventListener('abort', onClaimLost, { once: true })
    if (stopping) controller.abort('shutdown' satisfies AttemptStopReason)
    try {
      const attempt = job.retryCount + 1
      logger?.info('compile attempt started', { jobId: stored.view.id, attempt, queueJobId: job.id })
      const output = await traced('compile.job', { 'knowagent.job_id': stored.view.id, 'knowagent.attempt': attempt }, () => runCompileAttempt({
        db: options.db,
        engines,
        claim: { jobId: stored.view.id, queueJobId: job.id, attempt },
        owner,
        job: stored,
        snapshot,
        signal: controller.signal,
        onModelCall: options.onModelCall,
      }))
      logger?.info('compile attempt ended', { jobId: stored.view.id, attempt, status: output.status, ...('failure' in output ? { code: output.failure.code } : {}) })
      return queueResultOf(job.id, output)
    } finally {
      job.signal.removeEventListener('abort', onClaimLost)
      runs.delete(stored.view.id)
    }
  }

  workId = await queue.boss.work<CompileQueueData>(
    COMPILE_QUEUE,
    {
      batchSize: 1,
      localConcurrency: options.settings.concurrency,
      // one person's jobs at once, counted over every worker (each job is in its owner's group, compile-queue.ts)
      groupConcurrency: options.settings.perUserConcurrency,
      pollingIntervalSeconds: options.settings.pollingIntervalSeconds,
      perJobResults: true,
    },
    async (jobs: Job<CompileQueueData>[]) => {
      const run = Promise.all(jobs.map(runJob))
      settled.add(run)
      try {
        return await run
      } finally {
        settled.delete(run)
      }
    },
  )

  const stop = () =>
    (stopping ??= (async () => {
      unsubscribe()
      await queue.boss.offWork(COMPILE_QUEUE, { wait: false }).catch(() => {})
      for (const controller of runs.values()) controller.abort('shutdown' satisfies AttemptStopReason)
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, options.stopTimeoutMs ?? 10_000).unref())
      await Promise.race([Promise.allSettled([...settled]), deadline])
      await ownedCompiler?.close()
      if (ownsQueue) await queue.stop({ graceful: true, timeoutMs: options.stopTimeoutMs ?? 10_000 })
      logger?.info('compile worker stopped')
    })())

  logger?.info('compile worker started', { concurrency: options.settings.concurrency })
  return { id, queue, running: () => [...runs.keys()], stop }
}
