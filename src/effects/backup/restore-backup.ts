// A restore (docs/operations.md, "Restore") into an EMPTY database: the file is checked whole first
// (its end record and checksum, then every entry against the manifest) before anything is
// written; the schema is migrated up to the backup's last migration (a backup from a newer schema
// than this code is refused); the compile queue is installed; then every table is loaded with
// `COPY … FROM STDIN` in ONE transaction with triggers and foreign keys off
// (`session_replication_role = replica`: nodes and file versions refer to each other), the
// sequences are moved past the loaded rows and every table's row count is compared with the
// manifest before the commit. A failure commits nothing.
import { createReadStream } from 'node:fs'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { installQueue, QUEUE_SCHEMA } from '../compile/compile-queue.ts'
import type { QueueSettings } from '../compile/compile-config.ts'
import { knownMigrations, migrateTo } from '../db/migrate.ts'
import { BackupFileError, readArchive, verifyWholeFile, type BackupHeader, type BackupManifest } from './backup-archive.ts'
import { QUEUE_JOBS_ENTRY, quoteIdent, SECRET_ENTRY, secretFingerprint, tablesOf, type SnapshotTable } from './take-backup.ts'

/** The restore cannot go ahead (the target is not empty, the schema is newer, the secret differs…); the message says what to do. */
export class RestoreRefused extends Error {
  override readonly name = 'RestoreRefused'
}

export interface CheckedBackup {
  readonly file: string
  readonly bytes: number
  readonly header: BackupHeader
  readonly manifest: BackupManifest
}

/** Reads the whole file once and checks everything a restore relies on; rejects with BackupFileError or RestoreRefused. */
export async function checkBackupFile({ file, secretFromEnv }: { file: string; secretFromEnv: string | undefined }): Promise<CheckedBackup> {
  const { bytes } = await verifyWholeFile(file)
  const { header, manifest } = await readArchive(createReadStream(file))
  const known = await knownMigrations()
  if (!known.includes(header.lastMigration)) {
    const newest = known.at(-1) ?? '(none)'
    throw new RestoreRefused(
      header.lastMigration > newest
        ? `the backup is from a newer schema (migration ${header.lastMigration}, knowagent ${header.knowagentVersion}) than this knowagent knows (up to ${newest}): restore it with that version or a later one`
        : `the backup's schema (migration ${header.lastMigration}) is not one this knowagent knows`,
    )
  }
  if (header.secret.source === 'environment' && secretFromEnv === undefined) {
    throw new RestoreRefused(
      'the backup was taken with KNOWAGENT_SECRET set: set the same KNOWAGENT_SECRET to restore it (API tokens, sessions and stored keys depend on it)',
    )
  }
  if (secretFromEnv !== undefined && secretFingerprint(secretFromEnv) !== header.secret.fingerprint) {
    throw new RestoreRefused(
      'KNOWAGENT_SECRET is not the secret the backup was taken with: API tokens, sessions and stored model keys would stop working. ' +
        (header.secret.source === 'file' ? 'Unset it (the backup carries its own secret) or set the original one.' : 'Set the original one.'),
    )
  }
  return { file, bytes, header, manifest }
}

/** Why the database is not empty (its tables, or the queue's schema), or undefined. */
export async function nonEmptyDatabase(client: pg.ClientBase): Promise<string | undefined> {
  const { rows } = await client.query<{ name: string }>(
    `select c.relname::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1 limit 5`,
  )
  if (rows.length) return `it has tables (${rows.map((row) => row.name).join(', ')}${rows.length === 5 ? ', …' : ''})`
  const queue = await client.query(`select 1 from pg_namespace where nspname = $1`, [QUEUE_SCHEMA])
  return queue.rowCount ? `it has the schema ${QUEUE_SCHEMA}` : undefined
}

export interface RestoreReport {
  readonly tables: number
  readonly rows: number
  /** The data dir's secret carried in the backup (never printed), when it was the secret's source. */
  readonly secret: string | undefined
  readonly header: BackupHeader
}

/**
 * Loads a checked backup into the empty database at `connection`. `queueSettings` is what the
 * compile queue is installed with (the config's, as serve would).
 */
export async function restoreBackup({
  backup,
  connection,
  queueSettings,
  progress = () => {},
  signal,
}: {
  backup: CheckedBackup
  connection: pg.ClientConfig
  queueSettings: QueueSettings
  progress?: (line: string) => void
  /** Stops it: the connection is closed, so the load's transaction is rolled back. */
  signal?: AbortSignal | undefined
}): Promise<RestoreReport> {
  const client = new pg.Client({ ...connection, application_name: 'knowagent restore' })
  client.on('error', () => {})
  await client.connect()
  const abort = () => void client.end().catch(() => {})
  signal?.addEventListener('abort', abort, { once: true })
  try {
    signal?.throwIfAborted()
    const occupied = await nonEmptyDatabase(client)
    if (occupied) throw new RestoreRefused(`the database is not empty: ${occupied}. Restore into an empty database`)
    const superuser = (await client.query<{ rolsuper: boolean }>('select rolsuper from pg_roles where rolname = current_user')).rows[0]?.rolsuper
    if (!superuser) {
      throw new RestoreRefused(
        'restoring needs a superuser role (the tables are loaded with their foreign keys off, since nodes and file versions refer to each other): ' +
          'connect as one, or use pg_dump/pg_restore (docs/operations.md, "Your own PostgreSQL")',
      )
    }

    const migrations = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ ...connection, max: 1 }) }) })
    try {
      const { applied } = await migrateTo(migrations, backup.header.lastMigration)
      progress(`schema: ${applied.length} migrations applied, up to ${backup.header.lastMigration}`)
    } finally {
      await migrations.destroy()
    }
    const tables = new Map<string, SnapshotTable>((await tablesOf(client, 'public')).map((table) => [`public.${table.name}`, table]))
    const queueEntry = backup.manifest.entries.find((entry) => entry.name === QUEUE_JOBS_ENTRY)
    if (queueEntry) {
      await installQueue({ connection, settings: queueSettings })
      const jobTable = (await tablesOf(client, QUEUE_SCHEMA)).find((table) => table.name === 'job')
      if (jobTable) tables.set(QUEUE_JOBS_ENTRY, jobTable)
    }
    // Every entry names a table of this schema and only its columns (the file is checked, but a
    // name is never trusted into SQL unchecked).
    for (const entry of backup.manifest.entries) {
      if (entry.name === SECRET_ENTRY) continue
      const table = tables.get(entry.name)
      if (!table) throw new RestoreRefused(`the backup holds ${entry.name}, which is not a table of the schema at ${backup.header.lastMigration}`)
      const missing = (entry.columns ?? []).filter((column) => !table.columns.includes(column))
      if (missing.length || !entry.columns?.length) throw new RestoreRefused(`${entry.name}'s columns in the backup (${missing.join(', ') || 'none'}) are not the table's`)
    }

    let secret: string | undefined
    let rows = 0
    await client.query('begin')
    try {
      await client.query('set local session_replication_role = replica')
      await readArchive(createReadStream(backup.file), {
        entry: async (name, data) => {
          if (name === SECRET_ENTRY) {
            secret = await readSmall(data, 4096)
            return
          }
          const entry = backup.manifest.entries.find((candidate) => candidate.name === name)
          const table = tables.get(name)
          if (!entry?.columns || !table) throw new BackupFileError(`damaged: entry ${name} is not the one checked`)
          const target = `${quoteIdent(table.schema)}.${quoteIdent(table.name)} (${entry.columns.map(quoteIdent).join(', ')})`
          const copy = client.query(copyFrom(`copy ${target} from stdin`))
          await pipeline(data, copy)
          if (copy.rowCount !== entry.rows) throw new BackupFileError(`damaged: ${name} loaded ${copy.rowCount} rows, the manifest says ${entry.rows}`)
          rows += entry.rows
          progress(`${name}: ${entry.rows} rows`)
        },
      })
      await moveSequencesPastRows(client)
      for (const entry of backup.manifest.entries) {
        const table = tables.get(entry.name)
        if (!table || entry.name === QUEUE_JOBS_ENTRY) continue
        const { rows: counted } = await client.query<{ count: string }>(`select count(*) from ${quoteIdent(table.schema)}.${quoteIdent(table.name)}`)
        if (Number(counted[0]!.count) !== entry.rows) throw new Error(`${entry.name} holds ${counted[0]!.count} rows after the load, the backup ${entry.rows}`)
      }
      await client.query('commit')
    } catch (error) {
      await client.query('rollback').catch(() => {})
      throw error
    }
    return { tables: backup.manifest.entries.filter((entry) => entry.name !== SECRET_ENTRY).length, rows, secret, header: backup.header }
  } catch (error) {
    signal?.throwIfAborted()
    throw error
  } finally {
    signal?.removeEventListener('abort', abort)
    await client.end().catch(() => {})
  }
}

async function readSmall(data: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of data as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) throw new BackupFileError('damaged: the secret entry is too large')
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Each sequence owned by a column of the app's tables (identity or serial) continues after the highest loaded value. */
async function moveSequencesPastRows(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ tbl: string; col: string; seq: string }>(
    `select format('%I.%I', n.nspname, c.relname) as tbl, a.attname::text as col, pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) as seq
       from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped
        and pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) is not null`,
  )
  for (const { tbl, col, seq } of rows) {
    await client.query(`select setval($1, coalesce((select max(${quoteIdent(col)}) from ${tbl}), 0) + 1, false)`, [seq])
  }
}
