// Migration 20261201090000: files stored before the workspace-wide search existed are indexed by
// the migration itself (run again here between the Trash's migration's down and up), passage for passage as a new version would be (its frozen copy of the
// cutting rules agrees with search-text.ts), so the search finds them at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { down, up } from '../../migrations/20261201090000_workspace_search.ts'
import * as trash from '../../migrations/20261208100000_trash.ts'
import { createUser } from '../../src/effects/auth/users.ts'
import { searchWorkspace } from '../../src/effects/workspace/search-index.ts'
import { putFile } from '../../src/effects/workspace/store.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

describe('workspace search migration', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase()
  })
  afterAll(async () => {
    await database?.close()
  })

  it('indexes every current version of existing files, exactly as new versions are indexed', async () => {
    const { db } = database
    const owner = await createUser(db, { login: 'mia', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const long = Array.from({ length: 400 }, (_, i) => (i % 7 === 0 ? `\n\nParagraph ${i}: 上下文压缩 😀 keeps evidence.` : ` Sentence ${i} goes on.`)).join('')
    for (const [name, text] of [['long.md', long], ['short.txt', 'A short note about pipelines.'], ['empty.txt', '']] as const) {
      await putFile(db, { owner, segments: ['docs', name], bytes: new TextEncoder().encode(text || ' '), parsed: { ok: true, mime: 'text/plain', text } })
    }
    await putFile(db, { owner, segments: ['docs', 'short.txt'], bytes: new TextEncoder().encode('v2'), parsed: { ok: true, mime: 'text/plain', text: 'A second version about pipelines.' } })
    const rows = () => db.selectFrom('search_passages').select(['node_id', 'version_id', 'start', 'length', 'words']).orderBy('node_id').orderBy('start').execute()
    const written = await rows()
    expect(written.length).toBeGreaterThan(3)

    // As they ran: before the Trash's migration, which made `nodes` a view of the table `all_nodes`.
    await trash.down(db)
    await down(db)
    await up(db)
    await trash.up(db)

    expect(await rows()).toEqual(written)
    expect((await searchWorkspace(db, { owner, query: 'second version' })).hits.map((hit) => hit.uri)).toEqual(['kb://users/mia/docs/short.txt'])
    expect((await searchWorkspace(db, { owner, query: '压缩' })).hits.map((hit) => hit.uri)).toEqual(['kb://users/mia/docs/long.md'])
  })
})
