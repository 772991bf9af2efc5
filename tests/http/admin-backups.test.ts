// Scheduled backups (issue 37) on the real app: with `backup.schedule` set the server puts the
// schedule on its queue and works the `backup` queue's jobs — a job writes a backup that reads back
// whole, keeps the newest `backup.keep`, removes a run's left-over temporary file, is logged as one
// JSON line and listed on Administration → Backups with the next run. A failing run is logged at
// error level and shown at the top of that page. A backup stopped half-way leaves no file. Members
// and tokens get no page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { PgBoss } from 'pg-boss'
import { readArchive } from '../../src/effects/backup/backup-archive.ts'
import { BACKUP_QUEUE, backupQueueSchedules, runScheduledBackup, startScheduledBackups } from '../../src/effects/backup/scheduled-backups.ts'
import { resolveQueueSettings } from '../../src/effects/compile/compile-config.ts'
import { openPostgres } from '../../src/effects/db/database.ts'
import { createPostgresDatabase } from '../support/test-database.ts'
import { takeBackup } from '../../src/effects/backup/take-backup.ts'
import { QUEUE_SCHEMA, startQueue } from '../../src/effects/compile/compile-queue.ts'
import { createLogger } from '../../src/effects/logging/logger.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

const SCHEDULE = '15 3 * * *'

describe('scheduled backups and Administration → Backups', () => {
  let server: TestServer
  let dir: string
  let admin: { cookie: string; csrf: string }
  let member: { token: string; cookie: string }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'knowagent-backups-'))
    // Serve's queue (the compile feature's, without a compile worker) holds the schedule and takes the jobs.
    server = await startTestServer({ compile: { worker: false }, configure: (config) => ({ ...config, backup: { schedule: SCHEDULE, dir, keep: 2 } }) })
    const { password } = await addUserWithToken(server, 'ada') // the first account: an admin
    admin = await signIn(server, 'ada', password)
    const m = await addUserWithToken(server, 'max')
    member = { token: m.token, cookie: (await signIn(server, 'max', m.password)).cookie }
  }, 60_000)

  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const page = async (cookie: string) => {
    const res = await fetch(`${server.url}/admin/backups`, { headers: { cookie }, redirect: 'manual' })
    return { status: res.status, body: await res.text() }
  }

  it('a job of the schedule writes a backup that reads back whole, keeps the newest two, logs it and lists it', async () => {
    // Two older scheduled backups and a temporary file a killed run left.
    writeFileSync(join(dir, 'knowagent-2026-01-01T03-15-00-000Z.backup'), 'old')
    writeFileSync(join(dir, 'knowagent-2026-01-02T03-15-00-000Z.backup'), 'older but newer')
    writeFileSync(join(dir, '.knowagent-2026-01-03T03-15-00-000Z.backup.0a1b2c3d.partial'), 'left by a kill -9')
    const queue = new pg.Client({ connectionString: server.database.url })
    await queue.connect()
    try {
      expect((await queue.query(`select cron, timezone from ${QUEUE_SCHEMA}.schedule where name = $1`, [BACKUP_QUEUE])).rows).toEqual([{ cron: SCHEDULE, timezone: 'UTC' }])
    } finally {
      await queue.end()
    }

    // What the cron pass sends at 03:15, sent now.
    const boss = new PgBoss({ connectionString: server.database.url, schema: QUEUE_SCHEMA, supervise: false, schedule: false, useListenNotify: false, registerInstance: false, persistWarnings: false })
    await boss.start()
    try {
      await boss.send(BACKUP_QUEUE, {})
    } finally {
      await boss.stop({ graceful: false, close: true })
    }
    await waitUntil(
      async () => (await server.database.db.selectFrom('backup_runs').select('status').where('status', '!=', 'running').execute()).length === 1,
      'the scheduled backup ran',
      { timeoutMs: 15_000 }, // the worker looks every 2 s
    )
    const [run] = await server.database.db.selectFrom('backup_runs').selectAll().execute()
    expect(run).toMatchObject({ status: 'succeeded', pruned: 1, error: null })
    const names = readdirSync(dir).sort()
    expect(names).toEqual(['knowagent-2026-01-02T03-15-00-000Z.backup', run!.file.split('/').at(-1)])
    const { manifest } = await readArchive(createReadStream(run!.file))
    expect(manifest.entries.find((entry) => entry.name === 'public.users')?.rows).toBe(2)
    const logged = server.logLines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'backup written')
    expect(logged).toMatchObject({ level: 'info', file: run!.file, bytes: Number(run!.bytes), durationMs: run!.duration_ms })

    const shown = await page(admin.cookie)
    expect(shown.status).toBe(200)
    expect(shown.body).toContain(`<code data-testid="backup-schedule">${SCHEDULE}</code>`)
    expect(shown.body).toMatch(/data-testid="backup-next">\d{4}-\d\d-\d\d 03:15 UTC</)
    expect(shown.body).toContain(run!.file)
    expect(shown.body).not.toContain('backup-failing')
  })

  it('a failing run is logged at error level and shown at the top of the page', async () => {
    const notAFolder = join(dir, 'knowagent-2026-01-02T03-15-00-000Z.backup') // a file where the folder should be
    const run = await runScheduledBackup({
      db: server.database.db,
      connection: server.database.connection,
      backup: { schedule: SCHEDULE, dir: notAFolder, keep: 2 },
      secret: { value: 'test-secret-0123456789', source: 'environment' },
      logger: createLogger({ level: 'info', write: (line) => server.logLines.push(line) }),
    })
    expect(run).toMatchObject({ status: 'failed', error: expect.stringContaining('EEXIST') })
    const logged = server.logLines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'backup failed')
    expect(logged).toMatchObject({ level: 'error', error: run.error })
    const shown = await page(admin.cookie)
    expect(shown.body).toMatch(/<p class="error" role="alert" data-testid="backup-failing">The last scheduled backup failed \([^)]+\): [^<]*EEXIST/)
  })

  it('a backup stopped half-way leaves no file, and its connection is gone', async () => {
    const target = join(dir, 'stopped.backup')
    const lock = new pg.Client({ connectionString: server.database.url })
    const watch = new pg.Client({ connectionString: server.database.url }) // outside the lock's transaction, whose view of pg_stat_activity stays as it was
    await Promise.all([lock.connect(), watch.connect()])
    const backends = async (waiting: boolean) =>
      (await watch.query(`select count(*)::int as n from pg_stat_activity where application_name = 'knowagent backup'${waiting ? " and wait_event_type = 'Lock'" : ''}`)).rows[0].n as number
    try {
      await lock.query('begin; lock table users in access exclusive mode') // the backup waits here, half-written
      const stop = new AbortController()
      const taking = takeBackup({ connection: server.database.connection, file: target, secret: { value: 'test-secret-0123456789', source: 'environment' }, signal: stop.signal })
      taking.catch(() => {})
      await waitUntil(async () => (await backends(true)) === 1, 'the backup waits on the lock')
      expect(readdirSync(dir).some((name) => name.startsWith('.stopped.backup.'))).toBe(true)
      stop.abort()
      await expect(taking).rejects.toThrow()
      expect(readdirSync(dir).filter((name) => name.includes('stopped'))).toEqual([])
      expect(existsSync(target)).toBe(false)
      await waitUntil(async () => (await backends(false)) === 0, 'its connection closed')
    } finally {
      await lock.query('rollback').catch(() => {})
      await Promise.all([lock.end(), watch.end()])
    }
  })

  it('stopping the server interrupts a scheduled backup under way: recorded and logged as interrupted, no file left', async () => {
    const other = await createPostgresDatabase() // a database of its own: this server's own worker takes jobs on its queue
    const otherDir = mkdtempSync(join(tmpdir(), 'knowagent-backups-stop-'))
    const handle = await openPostgres({ url: other.url, max: 2 })
    const lock = new pg.Client({ connectionString: other.url })
    const watch = new pg.Client({ connectionString: other.url })
    await Promise.all([lock.connect(), watch.connect()])
    const lines: string[] = []
    let stopQueue = async () => {}
    try {
      const backup = { schedule: SCHEDULE, dir: otherDir, keep: 2 }
      const queue = await startQueue({ connection: handle.connection, settings: resolveQueueSettings(undefined), schedules: backupQueueSchedules(backup) })
      stopQueue = () => queue.stop({ graceful: false })
      const running = await startScheduledBackups({
        boss: queue.boss,
        pollingIntervalSeconds: 0.5,
        config: { ...server.ctx.config, backup },
        db: handle.db,
        connection: handle.connection,
        secret: 'test-secret-0123456789',
        logger: createLogger({ level: 'info', write: (line) => lines.push(line) }),
      })
      await lock.query('begin; lock table users in access exclusive mode')
      const boss = new PgBoss({ connectionString: other.url, schema: QUEUE_SCHEMA, supervise: false, schedule: false, useListenNotify: false, registerInstance: false, persistWarnings: false })
      await boss.start()
      await boss.send(BACKUP_QUEUE, {})
      await boss.stop({ graceful: false, close: true })
      await waitUntil(
        async () => (await watch.query(`select count(*)::int as n from pg_stat_activity where application_name = 'knowagent backup' and wait_event_type = 'Lock'`)).rows[0].n === 1,
        'the scheduled backup waits on the lock',
        { timeoutMs: 15_000 },
      )
      await running!.stop()
      const runs = await handle.db.selectFrom('backup_runs').select(['status', 'error']).execute()
      expect(runs).toEqual([{ status: 'failed', error: 'interrupted: the server stopped during the backup; no file was written' }])
      expect(readdirSync(otherDir)).toEqual([])
      expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'backup failed')).toMatchObject({ level: 'error' })
      await waitUntil(
        async () => (await watch.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name in ('knowagent backup', 'knowagent-backups')`)).rows[0].n === 0,
        "the backup's and the queue's connections closed",
      )
    } finally {
      await lock.query('rollback').catch(() => {})
      await stopQueue()
      await Promise.all([lock.end(), watch.end()])
      await handle.close()
      await other.drop()
      rmSync(otherDir, { recursive: true, force: true })
    }
  })

  it('is for administrators in a browser session only', async () => {
    const asMember = await page(member.cookie)
    expect(asMember.status).toBe(403)
    expect(asMember.body).toContain('this needs an administrator account')
    const anonymous = await fetch(`${server.url}/admin/backups`, { redirect: 'manual' })
    expect(anonymous.status).toBe(303)
  })
})
