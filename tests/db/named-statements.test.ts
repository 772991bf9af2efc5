// The queries compiled once (preparedQuery) go to PostgreSQL as named statements: parsed once per
// connection, their plans cached by the backend. Everything else goes unnamed, and a named
// statement whose cached plan a schema change made stale is sent unnamed instead of failing.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { namedStatementFor } from '../../src/effects/db/named-statements.ts'
import { preparedQuery } from '../../src/effects/db/prepared-query.ts'
import { findNodeQuery } from '../../src/effects/workspace/store.ts'
import { createUser } from '../../src/effects/auth/users.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'

describe('named statements', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase()
  })
  afterAll(async () => {
    await database.close()
  })

  /** The statements the connection that runs `work` has prepared, after `work`. */
  const preparedAfter = async (work: (db: TestDatabase['db']) => Promise<unknown>) =>
    await database.db.connection().execute(async (db) => {
      await work(db)
      const { rows } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)
      return rows
    })

  it('sends a prepared query under its name, parsed once on a connection, and gives the same rows as unnamed', async () => {
    const owner = await createUser(database.db, { login: 'named-owner', password: undefined })
    const compiled = findNodeQuery.compile(database.db, { ownerId: owner.id, path: '' })
    const name = namedStatementFor(compiled.sql)
    expect(name).toMatch(/^knowagent_[0-9a-f]{24}$/)

    const statements = await preparedAfter(async (db) => {
      const first = await findNodeQuery.execute(db, { ownerId: owner.id, path: '' })
      const second = await findNodeQuery.execute(db, { ownerId: owner.id, path: '' })
      const unnamed = await db.executeQuery({ ...compiled, sql: `${compiled.sql} ` }) // another text: not registered
      expect(first.rows).toHaveLength(1) // the owner's root
      expect(second.rows).toEqual(first.rows)
      expect(unnamed.rows).toEqual(first.rows)
    })
    expect(statements.filter((row) => row.name === name)).toEqual([{ name, statement: compiled.sql }])
  })

  it('leaves every other query unnamed', async () => {
    const statements = await preparedAfter(async (db) => {
      await db.selectFrom('users').select('id').where('login', '=', 'nobody').execute()
      await sql`select ${1}::int as one`.execute(db)
    })
    expect(statements.map((row) => row.statement)).not.toContainEqual(expect.stringContaining('"login" ='))
    expect(statements.map((row) => row.statement)).not.toContainEqual(expect.stringContaining('as one'))
  })

  it('sends a statement unnamed once a schema change made its cached plan stale, and keeps answering', async () => {
    await sql`create table named_probe (id int primary key, label text)`.execute(database.db)
    await sql`insert into named_probe values (1, 'one')`.execute(database.db)
    const probe = preparedQuery(['id'], (db, { id }: { id: number }) => sql<Record<string, unknown>>`select * from named_probe where id = ${id}`.compile(db))
    const sqlText = probe.compile(database.db, { id: 1 }).sql
    expect(namedStatementFor(sqlText)).toBeDefined()

    const rows = await database.db.connection().execute(async (db) => {
      expect((await probe.execute(db, { id: 1 })).rows).toEqual([{ id: 1, label: 'one' }])
      // another session adds a column: `select *` now has another result type
      await sql`alter table named_probe add column extra int default 7`.execute(database.db)
      const after = (await probe.execute(db, { id: 1 })).rows
      const again = (await probe.execute(db, { id: 1 })).rows
      return { after, again }
    })
    expect(rows.after).toEqual([{ id: 1, label: 'one', extra: 7 }])
    expect(rows.again).toEqual([{ id: 1, label: 'one', extra: 7 }])
    expect(namedStatementFor(sqlText)).toBeUndefined()
  })

  it('inside a transaction, reports the stale plan itself (the transaction is aborted), and the next attempt answers', async () => {
    await sql`create table named_probe_tx (id int primary key, label text)`.execute(database.db)
    await sql`insert into named_probe_tx values (1, 'one')`.execute(database.db)
    const probe = preparedQuery(['id'], (db, { id }: { id: number }) => sql<Record<string, unknown>>`select * from named_probe_tx where id = ${id}`.compile(db))
    await database.db.connection().execute(async (db) => {
      expect((await probe.execute(db, { id: 1 })).rows).toEqual([{ id: 1, label: 'one' }])
      await sql`alter table named_probe_tx add column extra int default 7`.execute(database.db)
      await sql`begin`.execute(db)
      await expect(probe.execute(db, { id: 1 })).rejects.toMatchObject({ code: '0A000', message: expect.stringContaining('cached plan must not change result type') })
      await sql`rollback`.execute(db)
      expect((await probe.execute(db, { id: 1 })).rows).toEqual([{ id: 1, label: 'one', extra: 7 }])
    })
  })
})
