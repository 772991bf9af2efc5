// A backup (docs/operations.md, "Backup"): a logical archive of the database taken in ONE
// `REPEATABLE READ READ ONLY` transaction, so every table is read from the same snapshot while the
// server goes on writing. Each table of the app's schema (`public`, less kysely's migration
// bookkeeping, which a restore rebuilds by migrating) is streamed with `COPY … TO STDOUT` (text:
// portable across PostgreSQL versions), gzipped into the archive (backup-archive.ts); so are the
// compile queue's jobs in flight (pg-boss's rows of the `compile` queue not yet finished) and, when
// the server secret is the data dir's file, that secret. Nothing is held in memory beyond a chunk.
// The file is written beside its target and renamed only once complete and on disk.
import { createHmac } from 'node:crypto'
import pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import { Readable } from 'node:stream'
import { packageVersion } from '../../project-root.ts'
import { COMPILE_QUEUE, QUEUE_SCHEMA } from '../compile/compile-queue.ts'
import { archiveWriter, BACKUP_FORMAT, type BackupHeader, type BackupManifest } from './backup-archive.ts'
import { writeFileAtomically } from '../atomic-file.ts'

export const SECRET_ENTRY = 'secret'
export const QUEUE_JOBS_ENTRY = `${QUEUE_SCHEMA}.job`
/** Migration bookkeeping: a restore migrates the new database up to the backup's last migration instead. */
const NOT_BACKED_UP = ['kysely_migration', 'kysely_migration_lock']
/** pg-boss's states of a job not yet finished: restored, they run (or, if they were running, are retried) as after a crash. */
export const JOBS_IN_FLIGHT = ['created', 'retry', 'active'] as const

export interface BackupSecret {
  readonly value: string
  readonly source: 'file' | 'environment'
}

export interface BackupReport {
  readonly file: string
  /** The archive's size on disk. */
  readonly bytes: number
  readonly header: BackupHeader
  readonly manifest: BackupManifest
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Lets a restore tell that KNOWAGENT_SECRET is the backup's without the secret ever being stored twice. */
export function secretFingerprint(secret: string): string {
  return createHmac('sha256', secret).update('knowagent backup secret fingerprint').digest('hex').slice(0, 16)
}

export interface SnapshotTable {
  readonly schema: string
  readonly name: string
  readonly columns: ReadonlyArray<string>
}

/** The tables of `schema` with their columns in order (generated columns left out: COPY FROM cannot write them). */
export async function tablesOf(client: pg.ClientBase, schema: string): Promise<SnapshotTable[]> {
  const { rows } = await client.query<{ name: string; columns: string[] }>(
    `select c.relname::text as name, array_agg(a.attname::text order by a.attnum) as columns
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
      where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition
      group by c.relname
      order by c.relname`,
    [schema],
  )
  return rows.map((row) => ({ schema, name: row.name, columns: row.columns }))
}

/**
 * Writes the archive of the database at `connection` to `file` (atomically). `progress` hears one
 * line per entry; `signal` stops it (nothing is left under either name).
 */
export async function takeBackup({
  connection,
  file,
  secret,
  progress = () => {},
  signal,
}: {
  connection: pg.ClientConfig
  file: string
  secret: BackupSecret
  progress?: (line: string) => void
  signal?: AbortSignal | undefined
}): Promise<BackupReport> {
  const client = new pg.Client({ ...connection, application_name: 'knowagent backup' })
  client.on('error', () => {}) // a failed query reports it
  await client.connect()
  // Stopped while it waits (on a lock, on a slow disk), the backend notices within a second that the
  // connection is gone instead of waiting on until the lock is free.
  await client.query(`set client_connection_check_interval = 1000`)
  const abort = () => void client.end().catch(() => {})
  signal?.addEventListener('abort', abort, { once: true })
  try {
    signal?.throwIfAborted()
    // Every statement below reads this one snapshot: what was committed when the first one ran.
    await client.query('begin isolation level repeatable read read only')
    const tables = (await tablesOf(client, 'public')).filter((table) => !NOT_BACKED_UP.includes(table.name))
    const lastMigration = (await client.query<{ name: string }>('select name from kysely_migration order by name desc limit 1')).rows[0]?.name
    if (lastMigration === undefined) throw new Error('the database has no migrations applied: there is nothing to back up')
    const queue = (await client.query<{ present: boolean }>(`select to_regclass($1) is not null as present`, [`${QUEUE_SCHEMA}.version`])).rows[0]?.present
    const queueSchemaVersion = queue ? ((await client.query<{ version: number }>(`select version from ${QUEUE_SCHEMA}.version`)).rows[0]?.version ?? null) : null
    const queueJobs = queue ? (await tablesOf(client, QUEUE_SCHEMA)).find((table) => table.name === 'job') : undefined
    const postgresVersion = (await client.query<{ server_version: string }>('show server_version')).rows[0]!.server_version
    const header: BackupHeader = {
      format: BACKUP_FORMAT,
      knowagentVersion: packageVersion(),
      createdAt: new Date().toISOString(),
      lastMigration,
      postgresVersion,
      queueSchemaVersion: queueJobs ? queueSchemaVersion : null,
      secret: { source: secret.source, fingerprint: secretFingerprint(secret.value) },
    }

    const written = await writeFileAtomically(file, async (output) => {
      const archive = archiveWriter(output)
      await archive.header(header)
      const copy = async (name: string, statement: string, columns: ReadonlyArray<string>) => {
        signal?.throwIfAborted()
        const entry = await archive.entry(name, client.query(copyTo(statement)), columns)
        progress(`${name}: ${entry.rows} rows, ${entry.bytes} bytes`)
      }
      for (const table of tables) {
        const columns = table.columns.map(quoteIdent).join(', ')
        await copy(`${table.schema}.${table.name}`, `copy ${quoteIdent(table.schema)}.${quoteIdent(table.name)} (${columns}) to stdout`, table.columns)
      }
      if (queueJobs) {
        const columns = queueJobs.columns.map(quoteIdent).join(', ')
        const states = JOBS_IN_FLIGHT.map((state) => `'${state}'`).join(', ')
        await copy(
          QUEUE_JOBS_ENTRY,
          `copy (select ${columns} from ${quoteIdent(QUEUE_SCHEMA)}.job where name = '${COMPILE_QUEUE}' and state::text in (${states}) order by id) to stdout`,
          queueJobs.columns,
        )
      }
      if (secret.source === 'file') await archive.entry(SECRET_ENTRY, Readable.from([Buffer.from(secret.value)]))
      const manifest = await archive.finish()
      await new Promise<void>((resolve, reject) => {
        output.once('error', reject)
        output.end(() => resolve())
      })
      if (!output.closed) await new Promise<void>((resolve) => output.once('close', () => resolve()))
      return manifest
    })
    await client.query('commit')
    return { file: written.path, bytes: written.bytes, header, manifest: written.result }
  } catch (error) {
    signal?.throwIfAborted()
    throw error
  } finally {
    signal?.removeEventListener('abort', abort)
    await client.end().catch(() => {})
  }
}
