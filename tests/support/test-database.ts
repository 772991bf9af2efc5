// Opens a fresh, migrated database for a test file: a new database on the real PostgreSQL server
// that the global setup started (tests/support/postgres-global-setup.ts).
import { inject } from 'vitest'
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { openPostgres, type DatabaseHandle } from '../../src/effects/db/database.ts'
import { migrateToLatest } from '../../src/effects/db/migrate.ts'

/** One engine everywhere: the suites run on PostgreSQL only (kept as a list for test names). */
export type DatabaseKind = 'postgres'
export const DATABASE_KINDS: DatabaseKind[] = ['postgres']

export interface TestDatabase extends DatabaseHandle {
  readonly url: string
}

export async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('postgresUrl')
  const name = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
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
  await migrateToLatest(handle.db)
  return {
    ...handle,
    url,
    close: async () => {
      await handle.close()
      await drop()
    },
  }
}
