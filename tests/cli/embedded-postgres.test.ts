// The embedded default as a user meets it: `knowagent serve` as a real child process on a fresh
// data dir runs a real PostgreSQL beside it; CLI commands work next to it; a second serve refuses;
// SIGTERM stops PostgreSQL too; kill -9 loses nothing committed; a stale postmaster.pid and a
// leftover PGlite data dir are handled. No postgres process outlives a test.
import { afterEach, describe, expect, it } from 'vitest'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { connect } from 'node:net'
import { join } from 'node:path'
import { main } from '../../src/cli.ts'

const SERVE_START_DEADLINE_MS = 120_000 // first start: initdb + the sample corpus, on a busy CI machine

function runCli(args: string[], env: Record<string, string>) {
  const out: string[] = []
  const err: string[] = []
  return main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env }).then((code) => ({ code, out: out.join('\n'), err: err.join('\n') }))
}

/** PIDs of postgres processes serving `<dataDir>/pgdata`, from /proc. */
function postgresProcessesFor(dataDir: string): number[] {
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

interface Serve {
  readonly child: ChildProcessWithoutNullStreams
  readonly url: string
  readonly stderr: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** `knowagent serve` on `dataDir`, not waited for. */
function spawnServe(dataDir: string): Omit<Serve, 'url'> {
  const child = spawn(process.execPath, ['bin/knowagent.mjs', 'serve'], {
    env: { ...process.env, KNOWAGENT_DATA_DIR: dataDir, PORT: '0', KNOWAGENT_DEMO_PASSWORD: 'demo-password-1', LOG_LEVEL: 'warn', DATABASE_URL: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  children.push(child)
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return { child, stderr: () => stderr, exited }
}

function startServe(dataDir: string): Promise<Serve> {
  const serve = spawnServe(dataDir)
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

function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-embedded-'))
  dataDirs.push(dir)
  return dir
}

afterEach(async () => {
  // A failed assertion must not leave a server or a postgres running after the test.
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  for (const dir of dataDirs.splice(0)) {
    for (const pid of postgresProcessesFor(dir)) process.kill(pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('the embedded PostgreSQL', () => {
  it('serve runs it, a CLI command works beside it, a second serve refuses, and SIGTERM stops it too', async () => {
    const dataDir = newDataDir()
    const serve = await startServe(dataDir)
    expect(serve.stderr()).toContain('Sign in as "demo" with the password from KNOWAGENT_DEMO_PASSWORD')
    expect((await fetch(`${serve.url}/readyz`)).status).toBe(200)
    expect(postgresProcessesFor(dataDir).length).toBeGreaterThan(0)
    expect(statSync(join(dataDir, 'pg-password')).mode & 0o777).toBe(0o600)

    const beside = await runCli(['user', 'add', 'nora', '--password', 'a-long-password'], { KNOWAGENT_DATA_DIR: dataDir })
    expect(beside).toMatchObject({ code: 0, out: 'created user nora' })
    expect(postgresProcessesFor(dataDir).length).toBeGreaterThan(0) // the CLI left it running for serve

    const second = await runCli(['serve'], { KNOWAGENT_DATA_DIR: dataDir, PORT: '0' })
    expect(second.code).toBe(1)
    expect(second.err).toContain('another knowagent serve is already using')

    serve.child.kill('SIGTERM')
    expect(await serve.exited).toEqual({ code: 0, signal: null })
    expect(postgresProcessesFor(dataDir)).toEqual([])
  }, 300_000)

  it('a SIGTERM while it starts stops it once it is up, PostgreSQL too, never by the default action', async () => {
    const dataDir = newDataDir()
    const serve = spawnServe(dataDir)
    // PostgreSQL runs and the server is still starting (migrations, the sample corpus): the CLI
    // took the signals before it began, so this one is heard even before the "running" line.
    await expect.poll(() => postgresProcessesFor(dataDir).length, { timeout: SERVE_START_DEADLINE_MS, interval: 20 }).toBeGreaterThan(0)
    serve.child.kill('SIGTERM')
    expect(await serve.exited).toEqual({ code: 0, signal: null })
    expect(serve.stderr()).toContain('stopping (SIGTERM)')
    expect(postgresProcessesFor(dataDir)).toEqual([])
  }, 300_000)

  it('a second SIGTERM during shutdown cuts what it waits for and still stops PostgreSQL', async () => {
    const dataDir = newDataDir()
    const serve = await startServe(dataDir)
    // A request still arriving: a graceful shutdown waits for it (up to its grace period).
    const { port } = new URL(serve.url)
    const pending = connect(Number(port), '127.0.0.1')
    pending.on('error', () => {})
    await new Promise<void>((resolve) => pending.once('connect', () => resolve()))
    pending.write('GET /readyz HTTP/1.1\r\nHost: x\r\n')
    const closed = new Promise<void>((resolve) => pending.once('close', () => resolve()))

    serve.child.kill('SIGTERM')
    await expect.poll(() => serve.stderr(), { timeout: 30_000 }).toContain('stopping (SIGTERM)')
    serve.child.kill('SIGTERM')
    await closed
    expect(await serve.exited).toEqual({ code: 0, signal: null })
    expect(serve.stderr()).toContain('cutting open connections')
    expect(postgresProcessesFor(dataDir)).toEqual([])
  }, 300_000)

  it('survives kill -9 of the server: the restart finds the database, nothing committed is lost', async () => {
    const dataDir = newDataDir()
    const first = await startServe(dataDir)
    expect((await runCli(['user', 'add', 'olga', '--password', 'a-long-password'], { KNOWAGENT_DATA_DIR: dataDir })).code).toBe(0)
    first.child.kill('SIGKILL')
    await first.exited
    expect(postgresProcessesFor(dataDir).length).toBeGreaterThan(0) // the postmaster outlives a crashed server

    const second = await startServe(dataDir)
    const duplicate = await runCli(['user', 'add', 'olga', '--password', 'a-long-password'], { KNOWAGENT_DATA_DIR: dataDir })
    expect(duplicate.code).toBe(1)
    expect(duplicate.err).toContain('olga') // the user committed before the crash is there
    second.child.kill('SIGTERM')
    expect((await second.exited).code).toBe(0)
    expect(postgresProcessesFor(dataDir)).toEqual([])
  }, 300_000)

  it('starts after a crash that left a postmaster.pid naming a live process that is not postgres', async () => {
    const dataDir = newDataDir()
    const serve = await startServe(dataDir)
    // A power cut: the server and every postgres process die at once; the pid file stays, and its
    // pid now belongs to another program (not this process: postgres ignores its parent's pid).
    serve.child.kill('SIGKILL')
    await serve.exited
    for (const pid of postgresProcessesFor(dataDir)) process.kill(pid, 'SIGKILL')
    await expect.poll(() => postgresProcessesFor(dataDir), { timeout: 30_000 }).toEqual([])
    const pidFile = join(dataDir, 'pgdata', 'postmaster.pid')
    const other = spawn('sleep', ['600'])
    try {
      const [, ...rest] = readFileSync(pidFile, 'utf8').split('\n')
      writeFileSync(pidFile, [String(other.pid), ...rest].join('\n'))
      const again = await runCli(['user', 'add', 'quinn', '--password', 'a-long-password'], { KNOWAGENT_DATA_DIR: dataDir })
      expect(again, again.err).toMatchObject({ code: 0, out: 'created user quinn' })
      expect(postgresProcessesFor(dataDir)).toEqual([])
    } finally {
      other.kill('SIGKILL')
    }
  }, 300_000)

  it('refuses a data dir left by the former embedded engine (PGlite) with what to do', async () => {
    const dataDir = newDataDir()
    mkdirSync(join(dataDir, 'pgdata'))
    writeFileSync(join(dataDir, 'pgdata', 'PG_VERSION'), '18\n')
    const result = await runCli(['migrate'], { KNOWAGENT_DATA_DIR: dataDir })
    expect(result.code).toBe(1)
    expect(result.err).toContain('PGlite')
    expect(result.err).toContain(`mv ${join(dataDir, 'pgdata')}`)
    expect(postgresProcessesFor(dataDir)).toEqual([])
  })
})
