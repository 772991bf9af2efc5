// `knowagent backup <file>` and `knowagent restore <file>` (docs/operations.md, "Backup" and
// "Restore"): the CLI faces of src/effects/backup/. Progress goes to stderr, the outcome to stdout;
// a failure rejects with a one-line reason (src/cli.ts prints it and exits 1).
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../effects/config/app-config.ts'
import { UserError } from '../effects/auth/users.ts'
import { withDatabase, type Io } from './actions.ts'

/** Runs `work` with a signal that SIGINT/SIGTERM abort (the work then leaves nothing half-written). */
async function stoppable<T>(work: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
  const interrupted = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => interrupted.abort(new UserError(`stopped by ${signal}; ${what}`))
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    return await work(interrupted.signal)
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

export async function backup(io: Io, { file }: { file: string }): Promise<number> {
  const { atomicTargetProblem } = await import('../effects/atomic-file.ts')
  const { takeBackup } = await import('../effects/backup/take-backup.ts')
  const problem = await atomicTargetProblem(file) // before the database starts
  if (problem !== undefined) throw new UserError(problem)
  const config = loadConfig({ env: io.env })
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'pgdata', 'PG_VERSION'))) {
    throw new UserError(`${config.dataDir} holds no database: there is nothing to back up (is KNOWAGENT_DATA_DIR right?)`)
  }
  const started = Date.now()
  const report = await stoppable(
    (signal) =>
      withDatabase(
        io,
        ({ connection }, secret) =>
          takeBackup({
            connection,
            file,
            secret: { value: secret, source: config.secretFromEnv ? 'environment' : 'file' },
            progress: (line) => io.err(`backup: ${line}`),
            signal,
          }),
        { migrate: false }, // a backup reads the schema as it is
      ),
    'no backup file was written',
  )
  const rows = report.manifest.entries.reduce((sum, entry) => sum + entry.rows, 0)
  io.out(
    `backup written: ${report.file} (${megabytes(report.bytes)}, ${report.manifest.entries.length} entries, ${rows} rows, schema ${report.header.lastMigration}, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
  )
  if (report.header.secret.source === 'environment') io.err('backup: the server secret is KNOWAGENT_SECRET: keep it with this file, a restore needs the same one')
  return 0
}

function moveAsideAdvice(dataDir: string): string {
  return `Stop any knowagent using it, then move it aside (mv ${dataDir} ${dataDir}.before-restore) or set KNOWAGENT_DATA_DIR to a new directory, and run restore again`
}

export async function restore(io: Io, { file }: { file: string }): Promise<number> {
  const { checkBackupFile, restoreBackup } = await import('../effects/backup/restore-backup.ts')
  const { openDatabase } = await import('../effects/db/database.ts')
  const { resolveQueueSettings } = await import('../effects/compile/compile-config.ts')
  const config = loadConfig({ env: io.env })
  const embedded = !config.databaseUrl
  const dataDirExisted = existsSync(config.dataDir)
  if (embedded && dataDirExisted && readdirSync(config.dataDir).length > 0) {
    throw new UserError(`${config.dataDir} is not empty: restore writes only into an empty data dir, so nothing there is overwritten. ${moveAsideAdvice(config.dataDir)}`)
  }
  io.err(`restore: checking ${file}`)
  const backup = await checkBackupFile({ file, secretFromEnv: config.secretFromEnv })
  io.err(`restore: complete and unchanged — taken ${backup.header.createdAt} by knowagent ${backup.header.knowagentVersion}, schema ${backup.header.lastMigration}`)
  const handle = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, exclusive: true, max: 1 })
  let report: Awaited<ReturnType<typeof restoreBackup>>
  try {
    report = await stoppable(
      (signal) =>
        restoreBackup({ backup, connection: handle.connection, queueSettings: resolveQueueSettings(config.file.compile), progress: (line) => io.err(`restore: ${line}`), signal }),
      'nothing was restored',
    )
    if (report.secret !== undefined && !config.secretFromEnv) writeSecret(join(config.dataDir, 'secret'), report.secret)
  } catch (error) {
    await handle.close()
    // The data dir was empty (or absent): it is left so, and a second try starts clean.
    if (embedded) {
      if (dataDirExisted) for (const entry of readdirSync(config.dataDir)) rmSync(join(config.dataDir, entry), { recursive: true, force: true })
      else rmSync(config.dataDir, { recursive: true, force: true })
    }
    throw error
  }
  await handle.close()
  io.out(
    `restored ${report.tables} tables, ${report.rows} rows from ${file} (taken ${report.header.createdAt}) into ${embedded ? config.dataDir : 'the database of DATABASE_URL'}; start the server with npm start`,
  )
  if (!embedded && report.secret !== undefined && !config.secretFromEnv) {
    io.err(`restore: the backup's secret is now ${join(config.dataDir, 'secret')}: every knowagent process on this database needs it (that file, or KNOWAGENT_SECRET set to its content)`)
  }
  return 0
}

/** The data dir's secret from the backup (mode 0600); an existing different one is never overwritten. */
function writeSecret(path: string, secret: string): void {
  try {
    writeFileSync(path, secret + '\n', { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    throw new UserError(`${path} already holds a secret; the restored database needs the backup's. Move that file aside and run restore again`)
  }
}
