// Migrations run on a connection of their own that is closed when they are done: the backend that
// ran the DDL (and holds its catalog caches) does not stay in the pool.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { migrateOnOwnConnection, openPostgres, type DatabaseHandle } from '../../src/effects/db/database.ts'
import { createPostgresDatabase } from '../support/test-database.ts'

describe('migrateOnOwnConnection', () => {
  let database: { url: string; drop: () => Promise<void> }
  let handle: DatabaseHandle
  let admin: pg.Client
  beforeAll(async () => {
    database = await createPostgresDatabase({ empty: true })
    handle = await openPostgres({ url: database.url })
    admin = new pg.Client({ connectionString: inject('postgresUrl') })
    await admin.connect()
  })
  afterAll(async () => {
    await handle.close()
    await admin.end()
    await database.drop()
  })

  const backends = async (): Promise<number> => {
    const name = new URL(database.url).pathname.slice(1)
    const { rows } = await admin.query<{ count: string }>('select count(*) from pg_stat_activity where datname = $1', [name])
    return Number(rows[0]!.count)
  }

  // A closed client's backend leaves pg_stat_activity a moment after `end()` resolves: wait for the
  // count to come down (a connection left open never does, and the wait times out).
  const settlesAt = (count: number) => vi.waitFor(async () => expect(await backends()).toBe(count), { timeout: 10_000, interval: 20 })

  it('applies every migration and leaves no connection behind, the pool untouched', async () => {
    const { applied } = await migrateOnOwnConnection(handle)
    expect(applied.length).toBeGreaterThan(5)
    await settlesAt(0)
    const users = await handle.db.selectFrom('users').select('id').execute()
    expect(users).toEqual([])
    expect(await backends()).toBe(1) // the pool's first connection, opened by that query
    expect(await migrateOnOwnConnection(handle)).toEqual({ applied: [] })
    await settlesAt(1)
  })
})
