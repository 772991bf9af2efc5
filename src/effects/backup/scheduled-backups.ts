// Scheduled backups (docs/operations.md, "Scheduled backups"): with `backup.schedule` set, serve's
// queue (pg-boss, schema knowagent_queue; compile-queue.ts) holds the schedule — its cron pass sends
// one job per occurrence across every server on the database — and the `backup` queue's policy
// ('stately') lets one of them at a time take it. A run writes `<backup.dir>/knowagent-<UTC time>.backup` with
// the same use case as `knowagent backup`, keeps the newest `backup.keep` of them, and is recorded
// in `backup_runs` (Administration → Backups) and logged as one JSON line; a failure is logged at
// error level and shown on that page. Stopping the server interrupts a run: no file is left.
import * as Context from 'effect/Context'
import * as Layer from 'effect/Layer'
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { CronExpressionParser } from 'cron-parser'
import type { Kysely } from 'kysely'
import type pg from 'pg'
import type { PgBoss } from 'pg-boss'
import type { QueueSchedule } from '../compile/compile-queue.ts'
import type { AppConfig } from '../config/app-config.ts'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import { takeBackup, type BackupSecret } from './take-backup.ts'

export const BACKUP_QUEUE = 'backup'
/** Scheduled backups' names: their UTC start time, so that names sort by age. */
const BACKUP_NAME = /^knowagent-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z\.backup$/
const PARTIAL_NAME = /^\.knowagent-\d{4}-\d{2}-\d{2}T.*\.backup\.[0-9a-f]{8}\.partial$/

export function backupFileName(at: Date): string {
  return `knowagent-${at.toISOString().replaceAll(':', '-').replace('.', '-')}.backup`
}

/** The next occurrence of `schedule` after `from` (UTC). */
export function nextRun(schedule: string, from = new Date()): Date {
  return CronExpressionParser.parse(schedule, { tz: 'UTC', strict: false, currentDate: from }).next().toDate()
}

/** Deletes all but the newest `keep` scheduled backups in `dir`, and temporary files runs left behind; returns how many went. */
export async function pruneBackups({ dir, keep }: { dir: string; keep: number }): Promise<number> {
  const names = await readdir(dir)
  const old = names.filter((name) => BACKUP_NAME.test(name)).sort().reverse().slice(keep)
  const leftOver = names.filter((name) => PARTIAL_NAME.test(name))
  for (const name of [...old, ...leftOver]) await rm(join(dir, name), { force: true })
  return old.length
}

export interface BackupRun {
  readonly id: string
  readonly status: 'succeeded' | 'failed'
  readonly file: string
  readonly bytes: number | undefined
  readonly durationMs: number
  readonly error: string | undefined
}

/** One scheduled run: recorded, written, pruned, logged. Never rejects: a failure is the run's record. */
export async function runScheduledBackup({
  db,
  connection,
  backup,
  secret,
  logger,
  signal,
  now = () => new Date(),
}: {
  db: Kysely<DB>
  connection: pg.ClientConfig
  backup: AppConfig['backup']
  secret: BackupSecret
  logger: Logger
  signal?: AbortSignal | undefined
  now?: () => Date
}): Promise<BackupRun> {
  const id = randomUUID()
  const startedAt = now()
  const file = join(backup.dir, backupFileName(startedAt))
  const started = performance.now()
  await db.insertInto('backup_runs').values({ id, started_at: startedAt, status: 'running', file }).execute()
  try {
    await mkdir(backup.dir, { recursive: true, mode: 0o700 })
    const report = await takeBackup({ connection, file, secret, signal })
    const pruned = await pruneBackups({ dir: backup.dir, keep: backup.keep })
    const durationMs = Math.round(performance.now() - started)
    await db.updateTable('backup_runs').set({ status: 'succeeded', finished_at: now(), bytes: report.bytes, duration_ms: durationMs, pruned }).where('id', '=', id).execute()
    logger.info('backup written', { file, bytes: report.bytes, durationMs, pruned })
    return { id, status: 'succeeded', file, bytes: report.bytes, durationMs, error: undefined }
  } catch (failure) {
    const durationMs = Math.round(performance.now() - started)
    const error = signal?.aborted ? 'interrupted: the server stopped during the backup; no file was written' : failure instanceof Error ? failure.message : String(failure)
    await db
      .updateTable('backup_runs')
      .set({ status: 'failed', finished_at: now(), duration_ms: durationMs, error })
      .where('id', '=', id)
      .execute()
      .catch(() => {}) // the database itself may be what failed: the log line below still says so
    logger.error('backup failed', { file, durationMs, error })
    return { id, status: 'failed', file, bytes: undefined, durationMs, error }
  }
}

export interface ScheduledBackups {
  readonly stop: () => Promise<void>
}

/** The queue schedule serve's queue is started with (compile-feature.ts): none without `backup.schedule`. */
export function backupQueueSchedules(backup: AppConfig['backup']): ReadonlyArray<QueueSchedule> {
  return backup.schedule === undefined ? [] : [{ name: BACKUP_QUEUE, cron: backup.schedule }]
}

/**
 * Works the backup queue on `boss` (serve's queue, started with backupQueueSchedules among its
 * schedules) until `stop`: a running backup is interrupted (no file is left) and waited for.
 * Without a schedule, a schedule an earlier configuration left on the queue is removed, and nothing
 * runs.
 */
export async function startScheduledBackups({
  boss,
  config,
  db,
  connection,
  secret,
  logger,
  pollingIntervalSeconds = 2,
}: {
  boss: PgBoss
  config: AppConfig
  db: Kysely<DB>
  connection: pg.ClientConfig
  secret: string
  logger: Logger
  pollingIntervalSeconds?: number
}): Promise<ScheduledBackups | undefined> {
  const schedule = config.backup.schedule
  if (schedule === undefined) {
    await boss.unschedule(BACKUP_QUEUE)
    return undefined
  }
  const running = new AbortController()
  await boss.work(BACKUP_QUEUE, { batchSize: 1, pollingIntervalSeconds }, async () => {
    await runScheduledBackup({
      db,
      connection,
      backup: config.backup,
      secret: { value: secret, source: config.secretFromEnv ? 'environment' : 'file' },
      logger,
      signal: running.signal,
    })
  })
  logger.info('backups scheduled', { schedule, dir: config.backup.dir, keep: config.backup.keep, next: nextRun(schedule).toISOString() })
  return {
    stop: async () => {
      running.abort()
      await boss.offWork(BACKUP_QUEUE, { wait: true })
    },
  }
}

/** The scheduled backups as a scoped resource of the composition root (serve); undefined without a schedule or outside serve. */
export class ScheduledBackupsService extends Context.Service<ScheduledBackupsService, ScheduledBackups | undefined>()('knowagent/backup/ScheduledBackups') {
  static readonly none: Layer.Layer<ScheduledBackupsService> = Layer.succeed(ScheduledBackupsService, undefined)
}
