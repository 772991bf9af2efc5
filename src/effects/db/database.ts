// Opens the database: the embedded PostgreSQL of the data dir when there is no DATABASE_URL (the
// default), any PostgreSQL ≥ 14 when there is. One engine everywhere; a `pg` pool either way.
import * as Context from 'effect/Context'
import * as Data from 'effect/Data'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { AppConfigService } from '../config/app-config.ts'
import { openEmbeddedPostgres } from './embedded-postgres.ts'
import { migrateToLatest } from './migrate.ts'
import { namedStatementPool } from './named-statements.ts'
import type { DB } from './schema.ts'

export { DatabaseInUse, EmbeddedDatabaseError } from './embedded-postgres.ts'

export interface DatabaseHandle {
  readonly db: Kysely<DB>
  readonly kind: 'embedded' | 'external'
  /** Connection settings of this database (for LISTEN clients and pg-boss); holds the password — never log it. */
  readonly connection: pg.ClientConfig
  readonly ping: () => Promise<void>
  /** The pool's connections now: open, idle, and queries waiting for one (/metrics). */
  readonly poolStats: () => { readonly total: number; readonly idle: number; readonly waiting: number; readonly max: number }
  readonly close: () => Promise<void>
}

function poolHandle({ connection, kind, max, onClose }: { connection: pg.ClientConfig; kind: DatabaseHandle['kind']; max: number; onClose: () => Promise<void> }): DatabaseHandle {
  const pool = new pg.Pool({ ...connection, max, idleTimeoutMillis: 30_000 })
  pool.on('error', () => {}) // an idle client's error is reported on its next use
  // A client checked out between two statements (a transaction awaiting other work) has no listener
  // of the pool's: a backend ended then (PostgreSQL restarting, pg_terminate_backend) would be an
  // uncaught 'error' that takes the process down. Its next statement fails instead, and the pool
  // drops it when it is released.
  pool.on('connect', (client) => void client.on('error', () => {}))
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: namedStatementPool(pool) }) })
  let closing: Promise<void> | undefined
  return {
    db,
    kind,
    connection,
    ping: async () => {
      await sql`select 1`.execute(db)
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max }),
    close: () =>
      (closing ??= (async () => {
        await db.destroy()
        await onClose()
      })()),
  }
}

export async function openPostgres({ url, max = 10 }: { url: string; max?: number }): Promise<DatabaseHandle> {
  return poolHandle({ connection: { connectionString: url }, kind: 'external', max, onClose: async () => {} })
}

export async function openDatabase({
  databaseUrl,
  dataDir,
  exclusive = false,
  max = 10,
}: {
  databaseUrl: string | undefined
  dataDir: string
  /** `serve` passes true: a second serve on the same embedded data dir refuses. */
  exclusive?: boolean
  max?: number
}): Promise<DatabaseHandle> {
  if (databaseUrl) return openPostgres({ url: databaseUrl, max })
  const embedded = await openEmbeddedPostgres({ dataDir, exclusive })
  return poolHandle({ connection: embedded.connection, kind: 'embedded', max, onClose: embedded.release })
}

/**
 * Applies the migrations on a connection of their own, closed afterwards. The backend that runs
 * the DDL keeps the catalog caches of every table it created or changed (~6 MB on a first start);
 * in the pool that backend would stay, serving queries that never need those caches.
 */
export async function migrateOnOwnConnection(handle: Pick<DatabaseHandle, 'connection'>): Promise<{ applied: string[] }> {
  const pool = new pg.Pool({ ...handle.connection, max: 1 })
  pool.on('error', () => {})
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
  try {
    return await migrateToLatest(db)
  } finally {
    await db.destroy()
  }
}

/** The database could not be opened (the message says why and what to do). */
export class DatabaseUnavailable extends Data.TaggedError('DatabaseUnavailable')<{ readonly message: string }> {}

/** The database as a service of the composition root: opened and migrated on acquire, closed on release. */
export class Database extends Context.Service<Database, DatabaseHandle>()('knowagent/db/Database') {
  static readonly layer = ({ exclusive = false, migrate = true }: { exclusive?: boolean; migrate?: boolean } = {}) =>
    Layer.effect(
      Database,
      Effect.gen(function* () {
        const config = yield* AppConfigService
        const handle = yield* Effect.acquireRelease(
          Effect.tryPromise({
            try: () => openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, exclusive }),
            catch: (error) => new DatabaseUnavailable({ message: error instanceof Error ? error.message : String(error) }),
          }),
          (opened) => Effect.promise(() => opened.close()),
        )
        if (migrate) yield* Effect.promise(() => migrateOnOwnConnection(handle))
        return handle
      }),
    )
}
