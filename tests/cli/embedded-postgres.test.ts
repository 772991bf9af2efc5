// The embedded default as a user meets it: `knowagent serve` as a real child process on a fresh
// data dir runs a real PostgreSQL beside it; CLI commands work next to it; a second serve refuses;
// SIGTERM stops PostgreSQL too, also while it starts or shuts down. No postgres process outlives a
// test. (kill -9, a stale postmaster.pid, a PGlite data dir: embedded-postgres-recovery.test.ts.)
import { describe, expect, it } from 'vitest'
import { statSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { newDataDir, postgresProcessesFor, runCli, SERVE_START_DEADLINE_MS, spawnServe, startServe, stopServeProcessesAfterEach } from '../support/serve-process.ts'

stopServeProcessesAfterEach()

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
})
