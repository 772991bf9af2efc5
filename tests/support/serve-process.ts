// `knowagent serve` as a real child process: on a fresh data dir (the embedded default), for the
// tests of the embedded PostgreSQL (tests/cli/embedded-postgres*.test.ts) — start it, find its
// postgres processes in /proc, and kill whatever a failed test left running — or on a shared
// PostgreSQL (`startServeOnDatabase`), for the tests of several instances (tests/faults/).
import { afterEach } from 'vitest'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main } from '../../src/cli.ts'

export const SERVE_START_DEADLINE_MS = 120_000 // first start: initdb + the sample corpus, on a busy CI machine

export function runCli(args: string[], env: Record<string, string>) {
  const out: string[] = []
  const err: string[] = []
  return main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env }).then((code) => ({ code, out: out.join('\n'), err: err.join('\n') }))
}

/** PIDs of postgres processes serving `<dataDir>/pgdata`, from /proc. */
export function postgresProcessesFor(dataDir: string): number[] {
  const pgdata = join(dataDir, 'pgdata')
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')
      return argv[0]?.endsWith('postgres') && argv.includes(pgdata) ? [Number(entry)] : []
    } catch {
      return []
    }
  })
}

export interface Serve {
  readonly child: ChildProcessWithoutNullStreams
  readonly url: string
  readonly stderr: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** `knowagent serve` on `dataDir`, not waited for (`env`: more variables, e.g. KNOWAGENT_CONFIG). */
export function spawnServe(dataDir: string, env: Record<string, string> = {}): Omit<Serve, 'url'> {
  const child = spawn(process.execPath, ['bin/knowagent.mjs', 'serve'], {
    env: { ...process.env, KNOWAGENT_DATA_DIR: dataDir, PORT: '0', KNOWAGENT_DEMO_PASSWORD: 'demo-password-1', LOG_LEVEL: 'warn', DATABASE_URL: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  children.push(child)
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return { child, stderr: () => stderr, exited }
}

export function startServe(dataDir: string, env: Record<string, string> = {}): Promise<Serve> {
  const serve = spawnServe(dataDir, env)
  return new Promise<Serve>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${serve.stderr()}`)), SERVE_START_DEADLINE_MS)
    const check = () => {
      const match = /running at (http:\/\/\S+)/.exec(serve.stderr())
      if (match && serve.stderr().includes('Sign in')) {
        clearTimeout(timer)
        resolve({ ...serve, url: match[1]! })
      }
    }
    serve.child.stderr.on('data', check)
    void serve.exited.then(({ code }) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code} before it started:\n${serve.stderr()}`))
    })
  })
}

const children: ChildProcessWithoutNullStreams[] = []
const dataDirs: string[] = []

export function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-embedded-'))
  dataDirs.push(dir)
  return dir
}

/** A path for a data dir that does not exist yet (a restore's target), cleaned up like newDataDir's. */
export function newDataDirPath(): string {
  const dir = `${newDataDir()}-new`
  dataDirs.push(dir)
  return dir
}

/** A `knowagent` command as a real child process; resolves with its exit code and output. */
export function spawnCli(args: string[], env: Record<string, string>): { child: ChildProcessWithoutNullStreams; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }> } {
  const child = spawn(process.execPath, ['bin/knowagent.mjs', ...args], { env: { ...process.env, DATABASE_URL: '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk) => (out += chunk))
  child.stderr.on('data', (chunk) => (err += chunk))
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, out, err })),
  )
  return { child, done }
}

/** Registers the cleanup: call once at the top of a test file that starts serve processes. */
export function stopServeProcessesAfterEach(): void {
  afterEach(async () => {
    // A failed assertion must not leave a server or a postgres running after the test.
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    for (const dir of dataDirs.splice(0)) {
      for (const pid of postgresProcessesFor(dir)) process.kill(pid, 'SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })
}

export interface ServeOnDatabase extends Serve {
  /** Sends `signal` and resolves with how the process exited. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/**
 * `knowagent serve` on a PostgreSQL other processes share (DATABASE_URL), with this configuration
 * file and secret, waited for until it listens. Killed by `stopServeProcesses` (or the afterEach of
 * `stopServeProcessesAfterEach`) if the test leaves it running.
 */
export async function startServeOnDatabase({
  databaseUrl,
  secret,
  configPath,
  dataDir,
}: {
  databaseUrl: string
  secret: string
  configPath: string
  dataDir: string
}): Promise<ServeOnDatabase> {
  const child = spawn(process.execPath, ['bin/knowagent.mjs', 'serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, KNOWAGENT_SECRET: secret, KNOWAGENT_CONFIG: configPath, KNOWAGENT_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  children.push(child)
  let stderr = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stderr}`)), SERVE_START_DEADLINE_MS)
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      const match = /running at (http:\/\/\S+)/.exec(stderr)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    void exited.then(({ code }) => {
      clearTimeout(timer)
      reject(new Error(`serve exited (${code}) before listening:\n${stderr}`))
    })
  })
  return {
    child,
    url,
    stderr: () => stderr,
    exited,
    stop: (signal = 'SIGTERM') => {
      child.kill(signal)
      return exited
    },
  }
}

/** Kills every serve process still running (a test's afterAll). */
export function stopServeProcesses(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
