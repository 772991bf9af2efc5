// Migration 20261202100000: raw bytes are stored uncompressed (a download reads them a slice at a
// time), and values an older version stored compressed are rewritten once, byte for byte.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { down, up } from '../../migrations/20261202100000_raw_uncompressed.ts'
import { createUser } from '../../src/effects/auth/users.ts'
import { putFile } from '../../src/effects/workspace/store.ts'
import { readRaw } from '../../src/effects/workspace/file-contents.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

describe('raw bytes uncompressed migration', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase()
  })
  afterAll(async () => {
    await database?.close()
  })

  it('rewrites a compressed value uncompressed, and stores the next ones so', async () => {
    const { db } = database
    const compression = async (nodeId: string) =>
      (await sql<{ c: string | null }>`select pg_column_compression(raw) as c from file_versions where node_id = ${nodeId}`.execute(db)).rows[0]?.c
    await down(db) // as the column was before
    const alice = await createUser(db, { login: 'alice', password: 'alice-password', hashCost: TEST_PASSWORD_COST })
    const bytes = new TextEncoder().encode('a line that repeats\n'.repeat(20_000))
    const { node } = await putFile(db, { owner: alice, segments: ['log.txt'], bytes, parsed: { ok: true, mime: 'text/plain', text: 'log' } })
    expect(await compression(node.id)).not.toBeNull() // PostgreSQL compressed it

    await up(db)

    expect(await compression(node.id)).toBeNull()
    expect(Buffer.from(await readRaw(db, alice, node)).equals(Buffer.from(bytes))).toBe(true)
    const next = await putFile(db, { owner: alice, segments: ['log2.txt'], bytes, parsed: { ok: true, mime: 'text/plain', text: 'log' } })
    expect(await compression(next.node.id)).toBeNull()
  })
})
