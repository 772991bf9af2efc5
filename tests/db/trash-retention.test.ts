// The Trash's retention job (issue 37) on the real queue: two server instances start pg-boss with
// the hourly schedule and work its queue (pg-boss's TestClock drives their timers); when the hour's
// minute 17 comes, one job is made — not one per instance — and it deletes for good the item past
// its date, leaving the one that is not due. Stopped, neither instance polls its queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { TestClock } from 'pg-boss'
import { createUser } from '../../src/effects/auth/users.ts'
import { type QueueHandle, QUEUE_SCHEMA, startQueue } from '../../src/effects/compile/compile-queue.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { createLogger } from '../../src/effects/logging/logger.ts'
import { getNode } from '../../src/effects/workspace/store.ts'
import { listTrash, moveToTrash } from '../../src/effects/workspace/trash.ts'
import { startTrashRetention, TRASH_RETENTION_QUEUE, TRASH_RETENTION_SCHEDULE, type TrashRetention } from '../../src/effects/workspace/trash-retention.ts'
import { TEST_QUEUE_SETTINGS } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

describe('the trash retention job', () => {
  let database: TestDatabase
  let owner: Owner
  const queues: QueueHandle[] = []
  const workers: TrashRetention[] = []
  const logLines: string[] = []

  beforeAll(async () => {
    database = await openTestDatabase()
    owner = await createUser(database.db, { login: 'rita', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    for (const worker of workers) await worker.stop()
    for (const queue of queues) await queue.stop({ graceful: false, timeoutMs: 1_000 })
    await database?.close()
  })

  it('runs once an hour across instances and deletes for good only what is due', async () => {
    for (const name of ['due.md', 'later.md']) await putText(database.db, { owner, segments: [name], text: name })
    const due = await moveToTrash(database.db, { owner, node: await getNode(database.db, owner, ['due.md']), retentionDays: 1 })
    await moveToTrash(database.db, { owner, node: await getNode(database.db, owner, ['later.md']), retentionDays: 1 })
    await database.db.updateTable('trash_items').set({ purge_at: sql<Date>`now() - interval '1 minute'` }).where('id', '=', due.trash.id).execute()

    // 10:16:50 UTC today: the schedule's next occurrence is ten seconds away.
    const start = new Date()
    start.setUTCHours(10, 16, 50, 0)
    const clock = new TestClock(start)
    const logger = createLogger({ level: 'info', write: (line) => logLines.push(line) })
    for (const instance of ['serve-a', 'serve-b']) {
      const queue = await startQueue({ connection: { connectionString: database.url! }, settings: TEST_QUEUE_SETTINGS, logger, clock, instanceName: instance, schedules: [TRASH_RETENTION_SCHEDULE] })
      queues.push(queue)
      workers.push(await startTrashRetention({ boss: queue.boss, db: database.db, logger, pollingIntervalSeconds: 1 }))
    }
    expect((await queues[0]!.boss.getSchedule(TRASH_RETENTION_QUEUE))?.cron).toBe('17 * * * *')
    const jobs = async () => Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(`${QUEUE_SCHEMA}.job`)} where name = ${TRASH_RETENTION_QUEUE}`.execute(database.db)).rows[0]!.n)
    const left = async () => (await listTrash(database.db, { owner })).items.map((item) => item.name)

    expect(await jobs()).toBe(0)
    // Ten seconds at a time past 10:17 (each tick runs the instances' cron passes and polls) until the job has run.
    for (let step = 0; step < 12 && (await left()).includes('due.md'); step++) await clock.tick(10_000)
    expect(await left()).toEqual(['later.md'])
    expect(await jobs()).toBe(1) // one job for the occurrence, whichever instance made it
    expect(logLines.some((line) => line.includes('"msg":"trash retention ran"') && line.includes('"items":1'))).toBe(true)

    // Stopped (as serve's shutdown stops it), no instance polls the queue any more.
    const polling = () => queues.flatMap((queue) => queue.boss.getWipData()).filter((poller) => poller.name === TRASH_RETENTION_QUEUE)
    expect(polling()).toHaveLength(2)
    for (const worker of workers.splice(0)) await worker.stop()
    expect(polling()).toEqual([])
  })
})
