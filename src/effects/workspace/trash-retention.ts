// The Trash's retention job (issue 37): every hour the server's queue (pg-boss) runs one job that
// deletes for good every trash item past its `purge_at` (trash.ts, purgeExpiredTrash). The schedule
// is pg-boss's: however many servers share the database, each occurrence makes one job and one of
// them runs it. A failure is logged at error and the job failed (pg-boss retries it); the next
// hour's run takes what is still due anyway.
import type { Kysely } from 'kysely'
import type { PgBoss } from 'pg-boss'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import { purgeExpiredTrash } from './trash.ts'

export const TRASH_RETENTION_QUEUE = 'trash-retention'
/** Hourly, at minute 17 (UTC): an item is deleted for good within the hour after its date. */
export const TRASH_RETENTION_SCHEDULE = { name: TRASH_RETENTION_QUEUE, cron: '17 * * * *' } as const

export interface TrashRetention {
  /** Stops taking the job, waiting for a run under way. */
  readonly stop: () => Promise<void>
}

/** Works the retention queue on `boss` (serve's queue, started with TRASH_RETENTION_SCHEDULE among its schedules). */
export async function startTrashRetention({ boss, db, logger, pollingIntervalSeconds = 30 }: { boss: PgBoss; db: Kysely<DB>; logger: Logger; pollingIntervalSeconds?: number }): Promise<TrashRetention> {
  await boss.work(TRASH_RETENTION_QUEUE, { batchSize: 1, pollingIntervalSeconds }, async () => {
    try {
      const purged = await purgeExpiredTrash(db)
      logger.info('trash retention ran', { items: purged.items, bytes: purged.bytes })
      return purged
    } catch (error) {
      logger.error('trash retention failed', { error: error instanceof Error ? error.message : String(error) })
      throw error
    }
  })
  return { stop: () => boss.offWork(TRASH_RETENTION_QUEUE, { wait: true }) }
}
