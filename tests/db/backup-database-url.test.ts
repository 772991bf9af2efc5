// `knowagent restore` with DATABASE_URL (docs/operations.md, "Restore"): a backup of one database
// restored into an empty one holds the same rows, byte for byte, and the compile queue's job still
// to run (not its finished ones); a database that is not empty, a
// backup from a newer schema and another KNOWAGENT_SECRET are refused before anything is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import pg from 'pg'
import { main } from '../../src/cli.ts'
import { createUser } from '../../src/effects/auth/users.ts'
import { archiveWriter, BACKUP_FORMAT } from '../../src/effects/backup/backup-archive.ts'
import { secretFingerprint, takeBackup } from '../../src/effects/backup/take-backup.ts'
import { putFile } from '../../src/effects/workspace/store.ts'
import { COMPILE_QUEUE, installQueue, QUEUE_SCHEMA } from '../../src/effects/compile/compile-queue.ts'
import { resolveQueueSettings } from '../../src/effects/compile/compile-config.ts'
import { PgBoss } from 'pg-boss'
import { createPostgresDatabase, openTestDatabase, TEST_PASSWORD_COST, type TestDatabase } from '../support/test-database.ts'

const SECRET = 'backup-database-url-secret-0123'

async function knowagent(args: string[], env: Record<string, string>) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(args, { out: (line) => out.push(line), err: (line) => err.push(line), env })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

async function dump(url: string): Promise<Record<string, unknown[]>> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return {
      users: (await client.query('select id, login, password_hash, role from users order by id')).rows,
      nodes: (await client.query('select id, owner_id, parent_id, path, current_version_id from nodes order by id')).rows,
      versions: (await client.query(`select id, node_id, version_no, encode(sha256(raw), 'hex') as sha, content_hash, body from file_versions order by id`)).rows,
    }
  } finally {
    await client.end()
  }
}

describe('knowagent restore with DATABASE_URL', () => {
  let source: TestDatabase
  let dir: string
  let file: string
  let queuedJobId: string
  const drops: Array<() => Promise<void>> = []

  beforeAll(async () => {
    source = await openTestDatabase()
    dir = mkdtempSync(join(tmpdir(), 'knowagent-restore-url-'))
    const alice = await createUser(source.db, { login: 'alice', password: 'alice-password-1', hashCost: TEST_PASSWORD_COST })
    await putFile(source.db, { owner: alice, segments: ['notes', '会议 记录.md'], bytes: Buffer.from('# 会议\n'), parsed: { ok: true, mime: 'text/markdown', text: '# 会议\n' } })
    await putFile(source.db, { owner: alice, segments: ['notes', '会议 记录.md'], bytes: Buffer.from('# 会议\n\nv2\n'), parsed: { ok: true, mime: 'text/markdown', text: 'v2' } })
    await putFile(source.db, { owner: alice, segments: ['bin', 'blob.bin'], bytes: Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 31) % 256)), parsed: { ok: false, mime: 'application/octet-stream', error: 'binary' } })
    // A compile job still queued: pg-boss's row of it travels with the backup.
    await installQueue({ connection: { connectionString: source.url }, settings: resolveQueueSettings(undefined) })
    const boss = new PgBoss({ connectionString: source.url, schema: QUEUE_SCHEMA, supervise: false, schedule: false, useListenNotify: false, registerInstance: false, persistWarnings: false })
    await boss.start()
    queuedJobId = (await boss.send(COMPILE_QUEUE, { jobId: 'a-job' }, { id: '00000000-0000-4000-8000-000000000001' }))!
    const [claimed] = await boss.fetch(COMPILE_QUEUE) // the first one, now active…
    expect(claimed?.id).toBe(queuedJobId)
    await boss.complete(COMPILE_QUEUE, claimed!.id) // …and done: history, not in flight
    queuedJobId = (await boss.send(COMPILE_QUEUE, { jobId: 'queued' }, { id: '00000000-0000-4000-8000-000000000002' }))!
    await boss.stop({ graceful: false, close: true })
    file = join(dir, 'source.backup')
    await takeBackup({ connection: { connectionString: source.url }, file, secret: { value: SECRET, source: 'environment' } })
  })

  afterAll(async () => {
    for (const drop of drops) await drop()
    await source?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const emptyDatabase = async () => {
    const created = await createPostgresDatabase({ empty: true })
    drops.push(created.drop)
    return created.url
  }

  it('restores into an empty database: the same rows, every version byte for byte; a second restore there is refused', async () => {
    const target = await emptyDatabase()
    const env = { DATABASE_URL: target, KNOWAGENT_SECRET: SECRET, KNOWAGENT_DATA_DIR: join(dir, 'data') }
    const restored = await knowagent(['restore', file], env)
    expect(restored, restored.err).toMatchObject({ code: 0, out: expect.stringMatching(/^restored \d+ tables, \d+ rows from .* into the database of DATABASE_URL/) })
    expect(await dump(target)).toEqual(await dump(source.url))
    // The queue's job still to run came back as it was; the finished one (pg-boss's history) did not.
    const client = new pg.Client({ connectionString: target })
    await client.connect()
    try {
      expect((await client.query(`select id, name, state, data from ${QUEUE_SCHEMA}.job order by id`)).rows).toEqual([
        { id: queuedJobId, name: COMPILE_QUEUE, state: 'created', data: { jobId: 'queued' } },
      ])
    } finally {
      await client.end()
    }

    const again = await knowagent(['restore', file], env)
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/knowagent: the database is not empty: it has tables \(/)
  })

  it('refuses another KNOWAGENT_SECRET, or none, and a backup from a newer schema, writing nothing', async () => {
    const target = await emptyDatabase()
    const other = await knowagent(['restore', file], { DATABASE_URL: target, KNOWAGENT_SECRET: 'another-secret-0123456789', KNOWAGENT_DATA_DIR: join(dir, 'data') })
    expect(other).toMatchObject({ code: 1, err: expect.stringContaining('KNOWAGENT_SECRET is not the secret the backup was taken with') })
    const none = await knowagent(['restore', file], { DATABASE_URL: target, KNOWAGENT_DATA_DIR: join(dir, 'data') })
    expect(none).toMatchObject({ code: 1, err: expect.stringContaining('the backup was taken with KNOWAGENT_SECRET set: set the same KNOWAGENT_SECRET') })

    // A well-formed backup whose schema this code does not know yet.
    const future = join(dir, 'future.backup')
    const output = createWriteStream(future)
    const archive = archiveWriter(output)
    await archive.header({
      format: BACKUP_FORMAT,
      knowagentVersion: '9.0.0',
      createdAt: new Date().toISOString(),
      lastMigration: '29991231000000_from_the_future',
      postgresVersion: '18.4',
      queueSchemaVersion: null,
      secret: { source: 'environment', fingerprint: secretFingerprint(SECRET) },
    })
    await archive.entry('public.users', Readable.from([Buffer.from('')]), ['id'])
    await archive.finish()
    await new Promise<void>((resolve) => output.end(() => resolve()))
    const newer = await knowagent(['restore', future], { DATABASE_URL: target, KNOWAGENT_SECRET: SECRET, KNOWAGENT_DATA_DIR: join(dir, 'data') })
    expect(newer).toMatchObject({ code: 1, err: expect.stringMatching(/the backup is from a newer schema \(migration 29991231000000_from_the_future, knowagent 9\.0\.0\) than this knowagent knows \(up to \d+_\w+\): restore it with that version or a later one/) })

    const client = new pg.Client({ connectionString: target })
    await client.connect()
    expect((await client.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`)).rows[0].n).toBe(0)
    await client.end()
  })
})
