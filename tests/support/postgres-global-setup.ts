// Starts a real PostgreSQL server for the db and http suites, unless TEST_DATABASE_URL points at one.
import type { TestProject } from 'vitest/node'
import { startEmbeddedPostgres } from './embedded-postgres.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

export default async function setup(project: TestProject) {
  const external = process.env.TEST_DATABASE_URL
  if (external) {
    project.provide('postgresUrl', external)
    return
  }
  const postgres = await startEmbeddedPostgres()
  project.provide('postgresUrl', postgres.url)
  return () => postgres.stop()
}
