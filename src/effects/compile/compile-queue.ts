// The compile queue on PostgreSQL (SPEC §8): pg-boss, in its own schema, claims and schedules;
// our `jobs` rows say what a job is and how it went. A queue job carries only our job id. Its
// options come from the job's snapshot: retries (attempts − 1, exponential backoff), an expiry
// past the job's timeout, a heartbeat so a dead worker's job is taken over, and a dead-letter
// queue for jobs out of attempts. Sent in the same transaction as our row (pg-boss's Kysely
// adapter), so a job is queued exactly when its row exists.
import { fromKysely, PgBoss, type Clock, type ConstructorOptions } from 'pg-boss'
import type pg from 'pg'
import type { Db } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { QueueSettings } from './compile-config.ts'

export const QUEUE_SCHEMA = 'knowagent_queue'
export const COMPILE_QUEUE = 'compile'
export const DEAD_LETTER_QUEUE = 'compile-dead'
/** pg-boss's expiry covers the job's own timeout plus publishing and settling. */
export const EXPIRY_MARGIN_SECONDS = 120

export interface CompileQueueData {
  readonly jobId: string
}

export interface QueueHandle {
  readonly boss: PgBoss
  readonly settings: QueueSettings
  readonly stop: (options?: { graceful?: boolean; timeoutMs?: number }) => Promise<void>
}

export interface StartQueueOptions {
  /** The database's connection settings (DatabaseHandle.connection); pg-boss opens its own small pool. */
  readonly connection: pg.ClientConfig
  readonly settings: QueueSettings
  readonly logger?: Logger | undefined
  /** Runs pg-boss's supervision (expiring dead workers' jobs, retention) in this process. Default true. */
  readonly supervise?: boolean | undefined
  /** pg-boss's clock (tests pass its TestClock). */
  readonly clock?: Clock | undefined
  readonly instanceName?: string | undefined
  /** Connections pg-boss may open for its queries (its own pool; its LISTEN is off, see startQueue). Default 2. */
  readonly maxConnections?: number | undefined
  /**
   * Recurring jobs (serve's: the Trash's retention, trash-retention.ts): each gets its queue and
   * its pg-boss schedule, and this instance runs pg-boss's cron passes (one job per occurrence
   * whatever the number of instances that do). Their workers are their owners'.
   */
  readonly schedules?: ReadonlyArray<QueueSchedule> | undefined
}

export interface QueueSchedule {
  readonly name: string
  /** A cron expression, in UTC. */
  readonly cron: string
}

/** pg's connection settings as pg-boss takes them (only what both name the same way). */
export function bossConnection(connection: pg.ClientConfig): Pick<ConstructorOptions, 'connectionString' | 'host' | 'port' | 'user' | 'password' | 'database' | 'ssl'> {
  const { connectionString, host, port, user, password, database, ssl } = connection
  return Object.fromEntries(Object.entries({ connectionString, host, port, user, password, database, ssl }).filter(([, value]) => value !== undefined))
}

function commonOptions(options: Pick<StartQueueOptions, 'connection' | 'clock' | 'instanceName'>) {
  return {
    ...bossConnection(options.connection),
    schema: QUEUE_SCHEMA,
    application_name: 'knowagent-queue',
    schedule: false,
    registerInstance: false,
    persistWarnings: false,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.instanceName ? { instanceName: options.instanceName } : {}),
  } satisfies ConstructorOptions
}

/**
 * Installs (or migrates) pg-boss's schema and makes sure both compile queues exist, on a
 * short-lived instance of one connection (see startQueue); a restore does this before it loads the
 * queue's jobs in flight.
 */
export async function installQueue(options: Pick<StartQueueOptions, 'connection' | 'settings' | 'logger' | 'clock' | 'schedules'>): Promise<void> {
  const onError = (error: unknown) => options.logger?.warn('compile queue error', { error: error instanceof Error ? error.message : String(error) })
  const setup = new PgBoss({ ...commonOptions(options), max: 1, supervise: false, useListenNotify: false })
  setup.on('error', onError)
  try {
    await setup.start()
    const queueOptions = {
      retryBackoff: true,
      retryDelay: Math.max(1, options.settings.retryDelaySeconds),
      heartbeatSeconds: options.settings.heartbeatSeconds,
    }
    await setup.createQueue(DEAD_LETTER_QUEUE, { policy: 'standard', retentionSeconds: 30 * 24 * 3600, deleteAfterSeconds: 30 * 24 * 3600 })
    // `notify: false`: no process listens on pg-boss's channel (see startQueue).
    await setup.createQueue(COMPILE_QUEUE, { policy: 'standard', deadLetter: DEAD_LETTER_QUEUE, notify: false, ...queueOptions })
    await setup.updateQueue(COMPILE_QUEUE, { deadLetter: DEAD_LETTER_QUEUE, notify: false, ...queueOptions })
    for (const { name, cron } of options.schedules ?? []) {
      // 'stately': at most one waiting and one running, so missed occurrences never pile up.
      await setup.createQueue(name, { policy: 'stately', notify: false, retentionSeconds: 24 * 3600, deleteAfterSeconds: 7 * 24 * 3600 })
      await setup.schedule(name, cron)
    }
  } finally {
    // Never masks a failure above; closes its connection either way.
    await setup.stop({ graceful: false, close: true }).catch(onError)
  }
}

/**
 * Starts pg-boss on the shared database and makes sure both queues exist.
 *
 * pg-boss's own LISTEN is off — one database connection fewer in every process: the workers are
 * woken by our job events instead (every job row change is NOTIFYed on `knowagent_jobs`,
 * compile-worker.ts), and otherwise poll every `pollingIntervalSeconds`.
 *
 * The schema install or migration and the queues' DDL run first on a short-lived instance of one
 * connection, closed afterwards: a backend that ran DDL keeps the catalog caches of what it
 * created (~7 MB on a first start), and pg-boss's pool would otherwise keep that backend for as
 * long as it runs.
 */
export async function startQueue(options: StartQueueOptions): Promise<QueueHandle> {
  const common = commonOptions(options)
  const onError = (error: unknown) => options.logger?.warn('compile queue error', { error: error instanceof Error ? error.message : String(error) })
  await installQueue(options)

  const boss = new PgBoss({
    ...common,
    schedule: (options.schedules?.length ?? 0) > 0,
    max: options.maxConnections ?? 2,
    supervise: options.supervise ?? true,
    useListenNotify: false,
    superviseIntervalSeconds: Math.max(1, Math.min(60, Math.floor(options.settings.heartbeatSeconds / 2))),
    monitorIntervalSeconds: Math.max(1, Math.min(60, Math.floor(options.settings.heartbeatSeconds / 2))),
  })
  boss.on('error', onError)
  try {
    await boss.start()
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => undefined) // its pool, if it opened one
    throw error
  }
  return {
    boss,
    settings: options.settings,
    stop: ({ graceful = true, timeoutMs = 10_000 } = {}) => boss.stop({ graceful, timeout: timeoutMs, close: true }),
  }
}

/**
 * Queues one attempt sequence of `jobId` inside the caller's transaction; returns the queue job's
 * id. The job is in its owner's group: workers run at most `perUserConcurrency` jobs of one group at
 * once, across every process (pg-boss counts the group's active jobs in the fetch's own statement),
 * so one person's long jobs leave the other slots to everyone else.
 */
export async function sendCompileJob(
  queue: QueueHandle,
  trx: Db,
  { jobId, ownerId, queueJobId, maxAttempts, timeoutSeconds }: { jobId: string; ownerId: string; queueJobId: string; maxAttempts: number; timeoutSeconds: number },
): Promise<string> {
  const id = await queue.boss.send(COMPILE_QUEUE, { jobId } satisfies CompileQueueData, {
    id: queueJobId,
    retryLimit: Math.max(0, maxAttempts - 1),
    retryBackoff: true,
    retryDelay: Math.max(1, queue.settings.retryDelaySeconds),
    retryDelayMax: 600,
    expireInSeconds: timeoutSeconds + EXPIRY_MARGIN_SECONDS,
    heartbeatSeconds: queue.settings.heartbeatSeconds,
    deadLetter: DEAD_LETTER_QUEUE,
    group: { id: ownerId },
    db: fromKysely(trx),
  })
  if (id === null) throw new Error('the compile queue refused the job')
  return id
}

/** Takes a queued job off the queue (a running one loses its claim at its next heartbeat). */
export async function cancelQueueJob(queue: QueueHandle, queueJobId: string): Promise<void> {
  await queue.boss.cancel(COMPILE_QUEUE, queueJobId)
}
