// A request that waits longer than the pool allows for a database connection is answered 503
// `busy` with Retry-After, not 500 internal_error: the server is overloaded, not broken. The
// error is pg-pool's own (it carries no code), so this holds it to the library's real message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { describeError } from '../../src/http/error-handler.ts'
import { createPostgresDatabase } from '../support/test-database.ts'

describe('a pool with no connection free', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>
  beforeAll(async () => {
    database = await createPostgresDatabase()
  })
  afterAll(async () => {
    await database?.drop()
  })

  it('is 503 busy with Retry-After', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1, connectionTimeoutMillis: 10_000 })
    const held = await pool.connect() // the one connection, opened with time to spare on a loaded machine
    pool.options.connectionTimeoutMillis = 50 // pg-pool reads it per wait: the next query waits 50 ms for a free one
    try {
      const failure = await pool.query('select 1').then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(describeError(failure)).toEqual({ status: 503, code: 'busy', message: 'the server is busy; retry in a moment', headers: { 'Retry-After': '1' } })
    } finally {
      held.release()
      await pool.end()
    }
  })
})
