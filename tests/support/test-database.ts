// Opens a fresh, migrated database for a test file: a copy of the run's template database on the
// real PostgreSQL server that the global setup started (tests/support/postgres-global-setup.ts).
import { inject } from 'vitest'
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { openPostgres, type DatabaseHandle } from '../../src/effects/db/database.ts'
import { sql, type Kysely } from 'kysely'
import type { DB } from '../../src/effects/db/schema.ts'
import type { ScryptCost } from '../../src/effects/auth/passwords.ts'

/** One engine everywhere: the suites run on PostgreSQL only (kept as a list for test names). */
export type DatabaseKind = 'postgres'
export const DATABASE_KINDS: DatabaseKind[] = ['postgres']

export interface TestDatabase extends DatabaseHandle {
  readonly url: string
}

/**
 * A new database on the run's server: a copy of the template, migrated to the latest schema, or
 * with `empty: true` a database with no table at all (for tests of the migrations themselves).
 */
export async function createPostgresDatabase({ empty = false }: { empty?: boolean } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('postgresUrl')
  const name = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(empty ? `create database ${name}` : `create database ${name} template ${inject('postgresTemplate')}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

export async function openTestDatabase(_kind: DatabaseKind = 'postgres'): Promise<TestDatabase> {
  const { url, drop } = await createPostgresDatabase()
  const handle = await openPostgres({ url, max: 5 })
  return {
    ...handle,
    url,
    close: async () => {
      await handle.close()
      await drop()
    },
  }
}

/**
 * The connection's `synchronous_commit` before and after `run` on one connection of `db`, which
 * starts with it on (the test server runs with it off): for statements that turn it off for their
 * own transaction only.
 */
export async function synchronousCommitAround(db: Kysely<DB>, run: (connection: Kysely<DB>) => Promise<void>): Promise<[string, string]> {
  return db.connection().execute(async (connection) => {
    const setting = async () => (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(connection)).rows[0]!.synchronous_commit
    await sql`set synchronous_commit = on`.execute(connection)
    try {
      const before = await setting()
      await run(connection)
      return [before, await setting()]
    } finally {
      await sql`reset synchronous_commit`.execute(connection)
    }
  })
}

/** Resolves once another connection of `client`'s database waits for a lock (bounded by the test's timeout). */
export async function blockedOnALock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ n: string }>(`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`)
    if (Number(rows[0]!.n) > 0) return
  }
}

/**
 * The scrypt cost of the tests' accounts: 1/32 of the default's work, so that the suite's hundreds
 * of accounts and sign-ins do not spend a minute of CPU hashing. The hash carries its cost; signing
 * in verifies it the same way. (Tests of hashing itself use the default.)
 */
export const TEST_PASSWORD_COST: ScryptCost = { N: 1 << 10, r: 8, p: 1 }
