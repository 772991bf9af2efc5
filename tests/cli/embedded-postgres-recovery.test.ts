// The embedded default after something went wrong: kill -9 of serve loses nothing committed, a
// stale postmaster.pid naming another live process does not stop a start, and a data dir left by
// PGlite (the former embedded engine) is refused with what to do. No postgres process outlives a test.
import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { newDataDir, postgresProcessesFor, runCli, startServe, stopServeProcessesAfterEach } from '../support/serve-process.ts'

stopServeProcessesAfterEach()

describe('the embedded PostgreSQL after a crash', () => {
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
