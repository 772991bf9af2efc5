// Opens a fresh, migrated database of either kind for a test file: PGlite in memory, or a new
// database on the real PostgreSQL server that the global setup started.
import { inject } from 'vitest'
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { openPglite, openPostgres, type DatabaseHandle } from '../../src/effects/db/database.ts'
import { migrateToLatest } from '../../src/effects/db/migrate.ts'

export type DatabaseKind = 'pglite' | 'postgres'
export const DATABASE_KINDS: DatabaseKind[] = ['pglite', 'postgres']

export interface TestDatabase extends DatabaseHandle {
  readonly url: string | undefined
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

export async function openTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const handle = await openPglite({ dataDir: undefined })
    await migrateToLatest(handle.db)
    return { ...handle, url: undefined }
  }
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
