// Opens the database: PGlite in the data dir when there is no DATABASE_URL (the embedded
// default), a `pg` pool when there is. The same kysely code and migrations run on both.
import { PGlite } from '@electric-sql/pglite'
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DB } from './schema.ts'

export interface DatabaseHandle {
  readonly db: Kysely<DB>
  readonly kind: 'pglite' | 'postgres'
  readonly ping: () => Promise<void>
  readonly close: () => Promise<void>
}

export class DatabaseInUse extends Error {
  override readonly name = 'DatabaseInUse'
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** PGlite is single-process: a pid lock keeps a second process from opening the same data dir. */
function acquirePgliteLock(dir: string): () => void {
  const lockPath = join(dir, 'knowagent.lock')
  try {
    const pid = Number(readFileSync(lockPath, 'utf8').trim())
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) {
      throw new DatabaseInUse(
        `the embedded database in ${dir} is in use by process ${pid}; stop it first, or set DATABASE_URL to share a PostgreSQL server`,
      )
    }
  } catch (error) {
    if (error instanceof DatabaseInUse) throw error
  }
  writeFileSync(lockPath, String(process.pid))
  return () => rmSync(lockPath, { force: true })
}

export async function openPglite({ dataDir }: { dataDir: string | undefined }): Promise<DatabaseHandle> {
  let release = () => {}
  let pglite: PGlite
  if (dataDir) {
    const dir = join(dataDir, 'pgdata')
    mkdirSync(dir, { recursive: true })
    release = acquirePgliteLock(dataDir)
    pglite = await PGlite.create(dir)
  } else {
    pglite = await PGlite.create()
  }
  const db = new Kysely<DB>({ dialect: new PGliteDialect({ pglite }) })
  return {
    db,
    kind: 'pglite',
    ping: async () => {
      await sql`select 1`.execute(db)
    },
    close: async () => {
      await db.destroy()
      if (!pglite.closed) await pglite.close()
      release()
    },
  }
}

export async function openPostgres({ url, max = 10 }: { url: string; max?: number }): Promise<DatabaseHandle> {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000 })
  pool.on('error', () => {}) // an idle client's error is reported on its next use
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
  return {
    db,
    kind: 'postgres',
    ping: async () => {
      await sql`select 1`.execute(db)
    },
    close: async () => {
      await db.destroy()
    },
  }
}

export async function openDatabase({
  databaseUrl,
  dataDir,
}: {
  databaseUrl: string | undefined
  dataDir: string
}): Promise<DatabaseHandle> {
  return databaseUrl ? openPostgres({ url: databaseUrl }) : openPglite({ dataDir })
}
