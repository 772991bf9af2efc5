// One real PostgreSQL server for the whole test run, shared by every project that names this global
// setup (vitest runs each project's global setups in its main process: the first starts the server,
// the last teardown stops it), unless TEST_DATABASE_URL points at one. It migrates one template
// database to the latest schema once; each test file's database is a copy of it
// (`CREATE DATABASE … TEMPLATE`, tests/support/test-database.ts), milliseconds instead of a migration.
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import type { TestProject } from 'vitest/node'
import { openPostgres } from '../../src/effects/db/database.ts'
import { migrateToLatest } from '../../src/effects/db/migrate.ts'
import { startEmbeddedPostgres } from './embedded-postgres.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The admin URL (database `postgres`) of the run's server. */
    postgresUrl: string
    /** The database, migrated to the latest schema, that test databases are created from. */
    postgresTemplate: string
  }
}

interface SharedPostgres {
  readonly url: string
  readonly template: string
  users: number
  readonly stop: () => Promise<void>
}

const SHARED = Symbol.for('knowagent.tests.postgres')
type Holder = { [SHARED]?: Promise<SharedPostgres> }

async function adminQuery(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

async function startShared(): Promise<SharedPostgres> {
  const external = process.env.TEST_DATABASE_URL
  const server = external ? { url: external, stop: async () => {} } : await startEmbeddedPostgres()
  const template = `knowagent_template_${randomBytes(4).toString('hex')}`
  try {
    await adminQuery(server.url, `create database ${template}`)
    const url = new URL(server.url)
    url.pathname = `/${template}`
    const handle = await openPostgres({ url: url.toString(), max: 1 })
    try {
      await migrateToLatest(handle.db)
    } finally {
      await handle.close() // a template with a connection open cannot be copied
    }
  } catch (error) {
    await server.stop()
    throw error
  }
  return {
    url: server.url,
    template,
    users: 0,
    stop: async () => {
      await adminQuery(server.url, `drop database if exists ${template} with (force)`).catch(() => {})
      await server.stop()
    },
  }
}

export default async function setup(project: TestProject) {
  const holder = globalThis as Holder
  holder[SHARED] ??= startShared()
  const shared = await holder[SHARED]
  shared.users += 1
  project.provide('postgresUrl', shared.url)
  project.provide('postgresTemplate', shared.template)
  return async () => {
    shared.users -= 1
    if (shared.users > 0) return
    delete holder[SHARED]
    await shared.stop()
  }
}
