// The workspace-wide search on real PostgreSQL: ranked name and text matches over the caller's
// whole tree, CJK text, hits that point at the passage, the index following versions, moves and
// deletes, other users' files never found — and the plan uses the indexes, not a scan.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { createUser } from '../../src/effects/auth/users.ts'
import { moveNode } from '../../src/effects/workspace/manage.ts'
import { moveToTrash } from '../../src/effects/workspace/trash.ts'
import { searchWorkspace } from '../../src/effects/workspace/search-index.ts'
import { getNode } from '../../src/effects/workspace/store.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { sliceCodePoints } from '../../src/effects/workspace/text-paging.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const filler = (n: number) => Array.from({ length: n }, (_, i) => `Line ${i} talks about nothing in particular.`).join('\n')

describe('workspace search', () => {
  let database: TestDatabase
  let owner: Owner
  let other: Owner
  const put = (who: Owner, segments: string[], text: string) => putText(database.db, { owner: who, segments, text, mime: 'text/plain' })

  beforeAll(async () => {
    database = await openTestDatabase()
    owner = await createUser(database.db, { login: 'sam', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    other = await createUser(database.db, { login: 'olga', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    await put(owner, ['guides', 'streaming.md'], `${filler(60)}\n\nThe stream ends with exactly one done event.\n`)
    await put(owner, ['notes', 'compaction-notes.md'], 'Compaction keeps file URIs and offsets. Compaction runs in batches; compaction never rewrites sources.')
    await put(owner, ['notes', 'zh.md'], '# 笔记\n\n上下文压缩会保留证据和文件地址。')
    await put(owner, ['archive', 'old', 'streaming-faq.txt'], 'Frequently asked questions.')
    await put(other, ['secret.md'], 'The stream of olga is private. 上下文压缩')
  })
  afterAll(async () => {
    await database?.close()
  })

  it('finds text anywhere in the tree by word prefix, and the hit points at the passage', async () => {
    const page = await searchWorkspace(database.db, { owner, query: 'done event' })
    expect(page.hits.map((hit) => hit.uri)).toEqual(['kb://users/sam/guides/streaming.md'])
    const hit = page.hits[0]!
    expect(hit.matched).toBe('text')
    expect(hit.snippet).toContain('exactly one done event')
    const file = await getNode(database.db, owner, ['guides', 'streaming.md'])
    const body = (await database.db.selectFrom('file_versions').select('body').where('id', '=', file.currentVersionId!).executeTakeFirstOrThrow()).body!
    expect(sliceCodePoints({ text: body, start: hit.offset!, end: hit.offset! + 'done event'.length })).toBe('done event')
    expect((await searchWorkspace(database.db, { owner, query: 'compact' })).hits.map((h) => h.uri)).toEqual(['kb://users/sam/notes/compaction-notes.md'])
  })

  it('ranks a name match first and merges name and text matches of one node', async () => {
    const page = await searchWorkspace(database.db, { owner, query: 'streaming' })
    expect(page.hits.map((hit) => [hit.uri, hit.matched])).toEqual([
      ['kb://users/sam/guides/streaming.md', 'name'],
      ['kb://users/sam/archive/old/streaming-faq.txt', 'name'],
    ])
    const both = await searchWorkspace(database.db, { owner, query: 'compaction' })
    expect(both.hits[0]).toMatchObject({ uri: 'kb://users/sam/notes/compaction-notes.md', matched: 'name+text' })
    const folder = await searchWorkspace(database.db, { owner, query: 'archiv' })
    expect(folder.hits[0]).toMatchObject({ uri: 'kb://users/sam/archive/', kind: 'directory', offset: null })
    const typo = await searchWorkspace(database.db, { owner, query: 'stremaing' })
    expect(typo.hits.map((hit) => hit.uri)).toContain('kb://users/sam/guides/streaming.md') // trigram similarity
  })

  it('finds CJK words inside runs without spaces, only in the caller’s tree', async () => {
    const page = await searchWorkspace(database.db, { owner, query: '压缩' })
    expect(page.hits.map((hit) => hit.uri)).toEqual(['kb://users/sam/notes/zh.md'])
    expect(page.hits[0]!.snippet).toContain('上下文压缩会保留证据')
    expect(page.hits[0]!.offset).toBe(9)
    expect((await searchWorkspace(database.db, { owner, query: '证据 文件' })).hits).toHaveLength(1)
    expect((await searchWorkspace(database.db, { owner, query: '压缩证据' })).hits).toEqual([]) // not adjacent: no hit
    expect((await searchWorkspace(database.db, { owner: other, query: 'stream' })).hits.map((hit) => hit.uri)).toEqual(['kb://users/olga/secret.md'])
    expect((await searchWorkspace(database.db, { owner, query: 'olga private' })).hits).toEqual([])
  })

  it('follows new versions, moves and deletes', async () => {
    await put(owner, ['notes', 'compaction-notes.md'], 'Rewritten: nothing about that any more.')
    expect((await searchWorkspace(database.db, { owner, query: 'offsets' })).hits).toEqual([])
    expect((await searchWorkspace(database.db, { owner, query: 'rewritten' })).hits).toHaveLength(1)
    const stale = await sql<{ n: string }>`
      select count(*) as n from search_passages p join nodes n on n.id = p.node_id where n.current_version_id <> p.version_id`.execute(database.db)
    expect(Number(stale.rows[0]!.n)).toBe(0) // only current versions are indexed

    await moveNode(database.db, { owner, node: await getNode(database.db, owner, ['notes']), destination: await getNode(database.db, owner, ['archive']) })
    expect((await searchWorkspace(database.db, { owner, query: 'rewritten' })).hits[0]!.uri).toBe('kb://users/sam/archive/notes/compaction-notes.md')
    await moveToTrash(database.db, { owner, node: await getNode(database.db, owner, ['archive']) })
    expect((await searchWorkspace(database.db, { owner, query: 'rewritten' })).hits).toEqual([])
    expect((await searchWorkspace(database.db, { owner, query: '压缩' })).hits).toEqual([])
  })

  it('pages results and refuses nothing: an empty or punctuation-only query finds nothing', async () => {
    for (let i = 0; i < 5; i++) await put(owner, ['many', `report-${i}.txt`], `quarterly figures ${i}`)
    const first = await searchWorkspace(database.db, { owner, query: 'quarterly', limit: 3 })
    expect(first.hits).toHaveLength(3)
    expect(first.next_offset).toBe(3)
    const second = await searchWorkspace(database.db, { owner, query: 'quarterly', offset: 3, limit: 3 })
    expect(second.hits).toHaveLength(2)
    expect(second.next_offset).toBeNull()
    expect(new Set([...first.hits, ...second.hits].map((hit) => hit.uri)).size).toBe(5)
    expect((await searchWorkspace(database.db, { owner, query: '   ' })).hits).toEqual([])
    expect((await searchWorkspace(database.db, { owner, query: '?!' })).hits).toEqual([])
  })

  it('the text query uses the GIN index on passage words and the name query the trigram index', async () => {
    await database.db.connection().execute(async (connection) => {
      await sql`set enable_seqscan = off`.execute(connection) // a small table would be scanned anyway: ask whether an index can serve
      const plan = async (query: ReturnType<typeof sql>) => (await query.execute(connection)).rows.map((row) => Object.values(row as object).join('')).join('\n')
      expect(await plan(sql`explain select node_id from search_passages where owner_id = ${owner.id} and words @@ to_tsquery('simple', 'quarterly:*')`)).toContain(
        'search_passages_words',
      )
      // On the table under `nodes` (the view of the live nodes, whose own condition a small table serves from the index of live paths).
      expect(await plan(sql`explain select id from all_nodes where name ilike '%report%'`)).toContain('nodes_name_trigrams')
      await sql`reset enable_seqscan`.execute(connection)
    })
  })
})
