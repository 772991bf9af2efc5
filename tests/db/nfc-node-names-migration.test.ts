// Migration 20261201010000: names stored before the NFC rule are put in NFC (so URIs, now read
// in NFC, still find them), except for an owner whose names would then collide.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { up } from '../../migrations/20261201010000_nfc_node_names.ts'
import { createUser } from '../../src/effects/auth/users.ts'
import { resolveNode } from '../../src/effects/workspace/resolve.ts'
import { readRaw } from '../../src/effects/workspace/file-contents.ts'
import { DATABASE_KINDS, openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'


describe.each(DATABASE_KINDS)('NFC node names migration on %s', (kind) => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase(kind)
  })
  afterAll(async () => {
    await database?.close()
  })

  /** Names as an older version stored them: written straight into the table. */
  const rename = (ownerId: string, from: string, to: { name: string; path: string }) =>
    sql`update nodes set name = ${to.name}, path = ${to.path} where owner_id = ${ownerId} and path = ${from}`.execute(database.db)

  it('puts decomposed names in NFC, children with their directory, and leaves an owner whose names would collide', async () => {
    const { db } = database
    const alice = await createUser(db, { login: 'alice', password: 'alice-password', hashCost: TEST_PASSWORD_COST })
    await putText(db, { owner: alice, segments: ['Resumes', 'cafe.md'], text: 'the cafe' })
    await rename(alice.id, 'Resumes/cafe.md', { name: 'cafe\u0301.md', path: 'Re\u0301sume\u0301s/cafe\u0301.md' })
    await rename(alice.id, 'Resumes', { name: 'Re\u0301sume\u0301s', path: 'Re\u0301sume\u0301s' })

    const bob = await createUser(db, { login: 'bob', password: 'bob-password-1', hashCost: TEST_PASSWORD_COST })
    for (const name of ['x.md', 'y.md']) await putText(db, { owner: bob, segments: [name], text: name })
    await rename(bob.id, 'x.md', { name: 'caf\u00e9.md', path: 'caf\u00e9.md' })
    await rename(bob.id, 'y.md', { name: 'cafe\u0301.md', path: 'cafe\u0301.md' })

    await up(db)

    const names = async (ownerId: string) =>
      (await db.selectFrom('nodes').select(['name', 'path']).where('owner_id', '=', ownerId).where('path', '<>', '').execute())
        .map((row) => [row.name, row.path])
        .sort(([, a], [, b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    expect(await names(alice.id)).toEqual([
      ['R\u00e9sum\u00e9s', 'R\u00e9sum\u00e9s'],
      ['caf\u00e9.md', 'R\u00e9sum\u00e9s/caf\u00e9.md'],
    ])
    for (const uri of ['kb://me/R\u00e9sum\u00e9s/caf\u00e9.md', 'kb://me/Re\u0301sume\u0301s/cafe\u0301.md']) {
      const { node } = await resolveNode(db, { caller: alice, uri })
      expect(new TextDecoder().decode(await readRaw(db, alice, node))).toBe('the cafe')
    }
    expect(await names(bob.id)).toEqual([
      ['cafe\u0301.md', 'cafe\u0301.md'],
      ['caf\u00e9.md', 'caf\u00e9.md'],
    ])
  })
})
