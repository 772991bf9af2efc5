import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Effect from 'effect/Effect'
import { sql } from 'kysely'
import { createUser } from '../../src/effects/auth/users.ts'
import { getNode, putFile, deleteNode } from '../../src/effects/workspace/store.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import type { ToolContext } from '../../src/effects/tools/tool-definition.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { DATABASE_KINDS, openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'


describe.each(DATABASE_KINDS)('workspace tools on %s', (kind) => {
  let database: TestDatabase
  let owner: Owner
  let stranger: Owner
  const registry = makeToolRegistry(WORKSPACE_TOOLS)
  const scopeAt = (uri: string): ToolContext => ({ db: database.db, caller: owner, scope: parseKbUri({ uri, callerLogin: owner.login }), progress: () => {} })
  const run = async (context: ToolContext, name: string, args: unknown) => Effect.runPromise(registry.run({ context, name, args }))
  const put = (who: Owner, segments: string[], text: string) => putText(database.db, { owner: who, segments, text, mime: 'text/plain' })

  beforeAll(async () => {
    database = await openTestDatabase(kind)
    owner = await createUser(database.db, { login: 'tina', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    stranger = await createUser(database.db, { login: 'ursula', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    await put(owner, ['docs', 'guide.md'], 'The compaction limit keeps history small.\nSee kb://me/docs/limits.md for numbers.')
    await put(owner, ['docs', 'limits.md'], 'At most 12 model steps, 24 tool calls and 16 model calls per turn.')
    await put(owner, ['docs', 'cjk.md'], '知识库的压缩会保留文件地址。😀 emoji 😀 末尾')
    await put(owner, ['private', 'diary.md'], 'compaction secrets outside the docs scope')
    await put(stranger, ['docs', 'guide.md'], 'ursula compaction notes')
    await putFile(database.db, { owner, segments: ['docs', 'blob.bin'], bytes: new Uint8Array([0, 1]), parsed: { ok: false, mime: 'application/octet-stream', error: 'unsupported file type' } })
    await put(owner, ['docs', 'empty.txt'], '')
    for (let i = 0; i < 95; i++) await put(owner, ['many', `f${String(i).padStart(3, '0')}.txt`], i % 10 === 0 ? `needle in file ${i}` : `hay ${i}`)
  })
  afterAll(async () => {
    await database?.close()
  })

  it('ls lists real children with paging and refuses targets outside the selected node', async () => {
    const scope = scopeAt('kb://me/docs/')
    const first = await run(scope, 'ls', { limit: 2 })
    expect(first.ok).toBe(true)
    expect(first.result).toMatchObject({ uri: 'kb://users/tina/docs/', offset: 0, next_offset: 2, total: 5 })
    const names = (first.result as { entries: { name: string }[] }).entries.map((e) => e.name)
    expect(names).toEqual(['blob.bin', 'cjk.md'])
    const last = await run(scope, 'ls', { offset: 4, limit: 2 })
    expect(last.result).toMatchObject({ next_offset: null })
    for (const uri of ['kb://me/', 'kb://me/private/', 'kb://users/ursula/docs/', 'kb://me/docs/../private/']) {
      const outcome = await run(scope, 'ls', { uri })
      expect(outcome.ok, uri).toBe(false)
      expect(JSON.parse(outcome.content).error.code).toMatch(/outside_scope|invalid_uri/)
    }
  })

  it('ls reads its target and the page in one statement (a folder without compiled pages), with the same answer as paging it', async () => {
    let statements = 0
    const counted = database.db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => ((statements += 1), args.result) })
    const scope = { ...scopeAt('kb://me/many/'), db: counted }
    const first = await run(scope, 'ls', { limit: 40 })
    expect(statements).toBe(1)
    expect(first.result).toMatchObject({ uri: 'kb://users/tina/many/', offset: 0, next_offset: 40, total: 95 })
    const names = (result: unknown) => (result as { entries: { name: string }[] }).entries.map((entry) => entry.name)
    expect(names(first.result)).toEqual(Array.from({ length: 40 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`))
    const last = await run(scope, 'ls', { offset: 80, limit: 40 })
    expect(last.result).toMatchObject({ offset: 80, next_offset: null, total: 95 })
    expect(names(last.result)).toEqual(Array.from({ length: 15 }, (_, i) => `f${String(80 + i).padStart(3, '0')}.txt`))
    const past = await run(scope, 'ls', { offset: 200 })
    expect(past.result).toMatchObject({ entries: [], offset: 200, next_offset: null, total: 95 })
    const file = await run(scope, 'ls', { uri: 'kb://me/many/f007.txt' })
    expect(file.result).toMatchObject({ uri: 'kb://users/tina/many/f007.txt', entries: [{ name: 'f007.txt', kind: 'file', size: 5 }], total: 1 })
  })

  it('a file scope cannot reach its parent or siblings', async () => {
    const scope = scopeAt('kb://me/docs/guide.md')
    expect((await run(scope, 'read', { uri: 'kb://me/docs/guide.md' })).ok).toBe(true)
    for (const uri of ['kb://me/docs/', 'kb://me/docs/limits.md']) {
      expect(JSON.parse((await run(scope, 'read', { uri })).content).error.code).toBe('outside_scope')
    }
    const search = await run(scope, 'search', { query: 'compaction' })
    expect((search.result as { hits: { uri: string }[] }).hits.every((h) => h.uri === 'kb://users/tina/docs/guide.md')).toBe(true)
  })

  it('read pages by code points without splitting CJK or emoji, and reports offset/next_offset/total', async () => {
    const scope = scopeAt('kb://me/docs/')
    const text = '知识库的压缩会保留文件地址。😀 emoji 😀 末尾'
    const total = [...text].length
    let offset: number | null = 0
    let rebuilt = ''
    while (offset !== null) {
      const outcome = await run(scope, 'read', { uri: 'kb://me/docs/cjk.md', offset, limit: 5 })
      const page = outcome.result as { text: string; offset: number; next_offset: number | null; total: number }
      expect(page.total).toBe(total)
      expect(page.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/)
      expect([...page.text].length).toBeLessThanOrEqual(5)
      rebuilt += page.text
      offset = page.next_offset
    }
    expect(rebuilt).toBe(text)
    const tooBig = await run(scope, 'read', { uri: 'kb://me/docs/cjk.md', limit: 6001 })
    expect(JSON.parse(tooBig.content).error.code).toBe('invalid_arguments')
    const beyond = await run(scope, 'read', { uri: 'kb://me/docs/cjk.md', offset: total + 10 })
    expect(beyond.result).toMatchObject({ text: '', next_offset: null, total })
  })

  it('read gives explicit empty results for empty and unparseable files, and an error for directories', async () => {
    const scope = scopeAt('kb://me/docs/')
    expect((await run(scope, 'read', { uri: 'kb://me/docs/empty.txt' })).result).toMatchObject({ empty: true, total: 0, note: 'the file is empty' })
    const blob = (await run(scope, 'read', { uri: 'kb://me/docs/blob.bin' })).result as { empty: boolean; note: string }
    expect(blob.empty).toBe(true)
    expect(blob.note).toContain('unsupported file type')
    expect(JSON.parse((await run(scope, 'read', { uri: 'kb://me/docs/' })).content).error.code).toBe('is_directory')
  })

  it('search scans at most 40 files a page in a stable order and never claims a bounded scan is complete', async () => {
    const scope = scopeAt('kb://me/many/')
    const pages = []
    let offset: number | null = 0
    while (offset !== null) {
      const outcome = await run(scope, 'search', { query: 'needle', offset })
      const page = outcome.result as { hits: { uri: string }[]; files_scanned: number; next_offset: number | null; complete: boolean }
      pages.push(page)
      offset = page.next_offset
    }
    expect(pages.map((p) => p.files_scanned)).toEqual([40, 40, 15])
    expect(pages.map((p) => p.complete)).toEqual([false, false, false])
    expect(pages.flatMap((p) => p.hits.map((h) => h.uri))).toEqual(
      Array.from({ length: 10 }, (_, i) => `kb://users/tina/many/f${String(i * 10).padStart(3, '0')}.txt`),
    )
    const small = await run(scopeAt('kb://me/docs/'), 'search', { query: 'compaction' })
    expect(small.result).toMatchObject({ complete: true, next_offset: null, files_scanned: 5 })
    const hits = (small.result as { hits: { uri: string; offset: number; snippet: string }[] }).hits
    expect(hits.map((h) => h.uri)).toEqual(['kb://users/tina/docs/guide.md'])
    expect(hits[0]!.offset).toBe(4)
    expect(hits[0]!.snippet).toContain('compaction limit')
    const cjk = await run(scopeAt('kb://me/docs/'), 'search', { query: '压缩' })
    expect((cjk.result as { hits: { uri: string; offset: number }[] }).hits[0]).toMatchObject({ uri: 'kb://users/tina/docs/cjk.md', offset: 4 })
  })

  it('a scan that stops short lists the later files the index finds every word in, with the offset that scans each; never outside the scope', async () => {
    const scope = scopeAt('kb://me/many/')
    type Page = { hits: Array<{ uri: string }>; files_scanned: number; next_offset: number | null; matches_ahead?: Array<{ uri: string; offset: number }>; note?: string }
    const search = async (query: string, offset?: number) => (await run(scope, 'search', offset === undefined ? { query } : { query, offset })).result as Page
    const needle = await search('needle')
    expect(needle.hits).toHaveLength(4) // f000–f030 on the first page
    expect(needle.matches_ahead).toEqual([40, 50, 60, 70, 80].map((at) => ({ uri: `kb://users/tina/many/f${String(at).padStart(3, '0')}.txt`, offset: at })))
    // a word only in file 90: the first page has no hit, and one call at the offset given finds it
    const late = await search('90')
    expect(late.hits).toEqual([])
    expect(late.matches_ahead).toEqual([{ uri: 'kb://users/tina/many/f090.txt', offset: 90 }])
    expect(late.note).toBe('scanned files 1–40 only; call search again with offset=40 to continue; the search index has every word in later files (matches_ahead), the first at offset=90: kb://users/tina/many/f090.txt')
    const there = await search('90', 90)
    expect(there.hits.map((hit) => hit.uri)).toEqual(['kb://users/tina/many/f090.txt'])
    expect(there.matches_ahead).toBeUndefined() // the last page: nothing ahead
    // "compaction" is in this user's docs/ and private/ and in another user's file: none is in many/
    expect((await search('compaction')).matches_ahead).toBeUndefined()
    // a one-character word would be a prefix of most of the index: no hint (the scan still pages)
    const short = await search('9')
    expect(short.next_offset).toBe(40)
    expect(short.matches_ahead).toBeUndefined()
  })

  it('a hint the index cannot give within its 2 s is left out: the search answers without it', async () => {
    const scope = scopeAt('kb://me/many/')
    // another session holds the index (as a REINDEX or a migration would): the hint's statement waits on its lock
    await database.db.connection().execute(async (held) => {
      await sql`begin`.execute(held)
      try {
        await sql`lock table search_passages in access exclusive mode`.execute(held)
        const page = (await run(scope, 'search', { query: 'needle' })).result as { hits: unknown[]; next_offset: number | null; matches_ahead?: unknown; note?: string }
        expect(page.hits).toHaveLength(4)
        expect(page.next_offset).toBe(40)
        expect(page.matches_ahead).toBeUndefined()
        expect(page.note).toBe('scanned files 1–40 only; call search again with offset=40 to continue')
      } finally {
        await sql`rollback`.execute(held)
      }
    })
    expect(((await run(scope, 'search', { query: 'needle' })).result as { matches_ahead?: unknown[] }).matches_ahead).toHaveLength(5) // the lock gone, the hint is back
  })

  it('search reads large bodies a few at a time and ends a page early past its byte budget, saying where to go on', async () => {
    // Three ~6.3 MB bodies: two fit the 16 MiB a call scans, the third starts the next page.
    const big = (marker: string) => `${'lorem ipsum dolor sit amet '.repeat(240_000)}${marker} at the end`
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await put(owner, ['large', name], big(`marker-${name}`))
    const scope = scopeAt('kb://me/large/')
    const first = (await run(scope, 'search', { query: 'marker-c.txt' })).result as { hits: unknown[]; files_scanned: number; next_offset: number | null; complete: boolean; note?: string }
    expect(first).toMatchObject({ files_scanned: 2, next_offset: 2, complete: false, hits: [] })
    expect(first.note).toBe('scanned files 1–2 only; call search again with offset=2 to continue; the search index has every word in later files (matches_ahead), the first at offset=2: kb://users/tina/large/c.txt')
    const second = (await run(scope, 'search', { query: 'marker-c.txt', offset: 2 })).result as { hits: Array<{ uri: string }>; files_scanned: number; next_offset: number | null }
    expect(second).toMatchObject({ files_scanned: 1, next_offset: null })
    expect(second.hits.map((hit) => hit.uri)).toEqual(['kb://users/tina/large/c.txt'])
  })

  it('read at or past the end of a file says how long it is, never a backwards range', async () => {
    const outcome = await run(scopeAt('kb://me/docs/'), 'read', { uri: 'kb://me/docs/limits.md', offset: 99_999_999 })
    expect(outcome.ok).toBe(true)
    expect(outcome.result).toMatchObject({ offset: 99_999_999, next_offset: null, total: 66, text: '', past_end: true, note: 'offset 99999999 is past the end of the file: its text is 66 code points (read from an offset below 66)' })
    expect(outcome.summary).toBe('kb://users/tina/docs/limits.md: offset 99999999 is past the end of the file: its text is 66 code points (read from an offset below 66)')
  })

  it('a node deleted mid-turn is a tool error, not stale content', async () => {
    await put(owner, ['tmp', 'gone.md'], 'soon deleted')
    const scope = scopeAt('kb://me/tmp/')
    expect((await run(scope, 'read', { uri: 'kb://me/tmp/gone.md' })).ok).toBe(true)
    await deleteNode(database.db, owner, await getNode(database.db, owner, ['tmp', 'gone.md']))
    const after = await run(scope, 'read', { uri: 'kb://me/tmp/gone.md' })
    expect(after.ok).toBe(false)
    expect(JSON.parse(after.content).error.code).toBe('not_found')
    await deleteNode(database.db, owner, await getNode(database.db, owner, ['tmp']))
    expect(JSON.parse((await run(scope, 'ls', {})).content).error.code).toBe('not_found')
  })

  it('status reports the latest parse job for a file and a directory; unknown tools and bad arguments are tool errors', async () => {
    const scope = scopeAt('kb://me/docs/')
    const file = (await run(scope, 'status', { uri: 'kb://me/docs/blob.bin' })).result
    expect(file).toMatchObject({ body: { kind: 'parse', status: 'failed', error: 'unsupported file type' }, compile: null })
    const dir = (await run(scope, 'status', {})).result as { kind: string; compile: unknown; files: Array<{ uri: string; body: { kind: string; uri: string } | null }> }
    expect(dir).toMatchObject({ kind: 'directory', compile: null })
    const blob = dir.files.find((entry) => entry.uri === 'kb://users/tina/docs/blob.bin')
    expect(blob?.body).toMatchObject({ kind: 'parse', status: 'failed', uri: 'kb://users/tina/docs/blob.bin' })
    expect(JSON.parse((await run(scope, 'rm', {})).content).error.code).toBe('unknown_tool')
    expect(JSON.parse((await run(scope, 'read', {})).content).error.code).toBe('invalid_arguments')
    expect(JSON.parse((await run(scope, 'ls', { bogus: 1 })).content).error.code).toBe('invalid_arguments')
  })
})
