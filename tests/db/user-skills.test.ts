// A person's own compile skills (kb://me/.skills/<dir>/SKILL.md) are read on every options call
// and compile request: a SKILL.md too large to be valid is refused by its size, unread.
// Regression: twenty 4.9 MB skills and eight parallel `GET options` took the server from ~300 MB
// to over 1 GB (exploratory test).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { listUserSkills, MAX_SKILL_BODY_CHARS, userSkillSegments } from '../../src/effects/compile/skills.ts'
import { findNode } from '../../src/effects/workspace/store.ts'
import { readSmallCurrentBodies } from '../../src/effects/workspace/file-contents.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const skillText = (name: string, body: string) => `---\nname: ${name}\ndescription: ${name} notes\n---\n${body}\n`

describe('user skills', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase()
  })
  afterAll(async () => {
    await database?.close()
  })

  it('lists a valid skill of the longest instructions (multi-byte ones too) and refuses an oversized SKILL.md by its size', async () => {
    const { db } = database
    const alice = await createUser(db, { login: 'alice', password: 'alice-password', hashCost: TEST_PASSWORD_COST })
    const put = (dir: string, text: string) => putText(db, { owner: alice, segments: userSkillSegments(dir), text })
    await put('cjk', skillText('cjk', '要'.repeat(MAX_SKILL_BODY_CHARS))) // 48,000 bytes of instructions: still valid
    await put('huge', skillText('huge', 'lorem ipsum dolor sit amet '.repeat(180_000))) // 4.9 MB
    const listing = await listUserSkills(db, alice)
    expect(listing.skills.map((skill) => skill.ref)).toEqual(['user:cjk'])
    expect(listing.invalid).toEqual([{ uri: 'kb://users/alice/.skills/huge/SKILL.md', message: expect.stringMatching(/^the file is 48600\d\d bytes; a SKILL\.md is at most/) }])

    const huge = (await findNode(db, alice, userSkillSegments('huge')))!
    expect(await readSmallCurrentBodies(db, alice, [huge], { maxBytes: 80_000 })).toEqual(new Map([[huge.id, { tooLarge: true, bytes: expect.any(Number) }]]))
  })
})
