import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { resolveNode, resolveWithinScope } from '../../src/effects/workspace/resolve.ts'
import { deleteNode, getNode, makeDirectories, putFile } from '../../src/effects/workspace/store.ts'
import { listChildren, listFilesUnder } from '../../src/effects/workspace/folder-listing.ts'
import { readCurrent, readRaw } from '../../src/effects/workspace/file-contents.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import { InvalidUri, NodeConflict, NodeNotFound, OutsideScope } from '../../src/effects/workspace/workspace-errors.ts'
import { DATABASE_KINDS, openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

const text = (s: string) => new TextEncoder().encode(s)
const parsed = (s: string) => ({ ok: true, mime: 'text/markdown', text: s })

describe.each(DATABASE_KINDS)('workspace store on %s', (kind) => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase(kind)
  })
  afterAll(async () => {
    await database?.close()
  })

  it('creates a user with a root, adds files with versions, and lists children in a stable order', async () => {
    const { db } = database
    const alice = await createUser(db, { login: 'alice', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const first = await putFile(db, { owner: alice, segments: ['notes', 'b.md'], bytes: text('# B'), parsed: parsed('# B') })
    expect(first.outcome).toBe('added')
    expect(first.node.uri).toBe('kb://users/alice/notes/b.md')
    await putFile(db, { owner: alice, segments: ['notes', 'a.md'], bytes: text('# A'), parsed: parsed('# A') })
    await makeDirectories(db, alice, ['notes', 'zsub'])
    const again = await putFile(db, { owner: alice, segments: ['notes', 'b.md'], bytes: text('# B'), parsed: parsed('# B') })
    expect(again.outcome).toBe('unchanged')
    const updated = await putFile(db, { owner: alice, segments: ['notes', 'b.md'], bytes: text('# B2'), parsed: parsed('# B2') })
    expect(updated.outcome).toBe('updated')

    const notes = await getNode(db, alice, ['notes'])
    const page = await listChildren(db, { owner: alice, parent: notes, offset: 0, limit: 10 })
    expect(page.entries.map((e) => `${e.kind}:${e.name}`)).toEqual(['directory:zsub', 'file:a.md', 'file:b.md'])
    expect(page.total).toBe(3)
    const content = await readCurrent(db, alice, page.entries[2]!)
    expect(content).toMatchObject({ body: '# B2', versionNo: 2, parseStatus: 'parsed', size: 4 })
    expect(new TextDecoder().decode(await readRaw(db, alice, page.entries[2]!))).toBe('# B2')

    const secondPage = await listChildren(db, { owner: alice, parent: notes, offset: 2, limit: 10 })
    expect(secondPage.entries.map((e) => e.name)).toEqual(['b.md'])
    expect(secondPage.total).toBe(3)
    // The total is of all children, whatever the page: a short page, a page past the end, an empty directory.
    expect(await listChildren(db, { owner: alice, parent: notes, offset: 1, limit: 1 })).toMatchObject({ entries: [{ name: 'a.md' }], total: 3 })
    expect(await listChildren(db, { owner: alice, parent: notes, offset: 7, limit: 10 })).toEqual({ entries: [], total: 3 })
    const zsub = await getNode(db, alice, ['notes', 'zsub'])
    expect(await listChildren(db, { owner: alice, parent: zsub, offset: 0, limit: 10 })).toEqual({ entries: [], total: 0 })
  })

  it('keeps raw bytes and the reason when a body could not be parsed, and records parse jobs', async () => {
    const { db } = database
    const bob = await createUser(db, { login: 'bob', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const { node } = await putFile(db, {
      owner: bob,
      segments: ['bin.dat'],
      bytes: new Uint8Array([0, 1, 2, 255]),
      parsed: { ok: false, mime: 'application/octet-stream', error: 'unsupported file type' },
    })
    const content = await readCurrent(db, bob, node)
    expect(content).toMatchObject({ body: null, parseStatus: 'failed', parseError: 'unsupported file type' })
    expect([...(await readRaw(db, bob, node))]).toEqual([0, 1, 2, 255])
    const jobs = await db.selectFrom('jobs').selectAll().where('node_id', '=', node.id).execute()
    expect(jobs).toHaveLength(1)
    expect(jobs[0]).toMatchObject({ kind: 'parse', status: 'failed', error: 'unsupported file type', uri: 'kb://users/bob/bin.dat' })
  })

  it('refuses a file where a directory is needed and the reverse', async () => {
    const { db } = database
    const carol = await createUser(db, { login: 'carol', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    await putFile(db, { owner: carol, segments: ['x'], bytes: text('x'), parsed: parsed('x') })
    await expect(putFile(db, { owner: carol, segments: ['x', 'y.md'], bytes: text('y'), parsed: parsed('y') })).rejects.toBeInstanceOf(NodeConflict)
    await makeDirectories(db, carol, ['d'])
    await expect(putFile(db, { owner: carol, segments: ['d'], bytes: text('d'), parsed: parsed('d') })).rejects.toBeInstanceOf(NodeConflict)
    await expect(putFile(db, { owner: carol, segments: ['..'], bytes: text('d'), parsed: parsed('d') })).rejects.toBeInstanceOf(InvalidUri)
  })

  it('scopes: another user\'s tree is refused, tools cannot leave the selected node, deleted nodes are gone', async () => {
    const { db } = database
    const dave = await createUser(db, { login: 'dave', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const erin = await createUser(db, { login: 'erin', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    await putFile(db, { owner: erin, segments: ['secret.md'], bytes: text('erin secret'), parsed: parsed('erin secret') })
    await putFile(db, { owner: dave, segments: ['docs', 'a.md'], bytes: text('a'), parsed: parsed('a') })
    await putFile(db, { owner: dave, segments: ['other', 'b.md'], bytes: text('b'), parsed: parsed('b') })
    await expect(resolveNode(db, { caller: dave, uri: 'kb://users/erin/secret.md' })).rejects.toBeInstanceOf(OutsideScope)
    // The same path under dave's own root does not exist: no cross-user lookup by path.
    await expect(resolveNode(db, { caller: dave, uri: 'kb://me/secret.md' })).rejects.toBeInstanceOf(NodeNotFound)
    const scope = parseKbUri({ uri: 'kb://me/docs/', callerLogin: 'dave' })
    await expect(resolveWithinScope(db, { caller: dave, scope, uri: 'kb://me/other/b.md' })).rejects.toBeInstanceOf(OutsideScope)
    await expect(resolveWithinScope(db, { caller: dave, scope, uri: 'kb://me/' })).rejects.toBeInstanceOf(OutsideScope)
    const inside = await resolveWithinScope(db, { caller: dave, scope, uri: 'kb://users/dave/docs/a.md' })
    expect(inside.node.kind).toBe('file')
    const fileScope = parseKbUri({ uri: 'kb://me/docs/a.md', callerLogin: 'dave' })
    await expect(resolveWithinScope(db, { caller: dave, scope: fileScope, uri: 'kb://me/docs/' })).rejects.toBeInstanceOf(OutsideScope)

    const docs = await getNode(db, dave, ['docs'])
    await deleteNode(db, dave, docs)
    await expect(resolveWithinScope(db, { caller: dave, scope, uri: 'kb://me/docs/a.md' })).rejects.toBeInstanceOf(NodeNotFound)
  })

  it('lists files under a scope in path order, with LIKE metacharacters in names treated literally', async () => {
    const { db } = database
    const frank = await createUser(db, { login: 'frank', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    for (const path of [['a_b', '1.md'], ['axb', '2.md'], ['a_b', 'sub', '3.md'], ['a%', '4.md']]) {
      await putFile(db, { owner: frank, segments: path, bytes: text(path.join('/')), parsed: parsed(path.join('/')) })
    }
    const scope = await getNode(db, frank, ['a_b'])
    const files = await listFilesUnder(db, { owner: frank, scope, offset: 0, limit: 40 })
    expect(files.map((f) => f.path)).toEqual(['a_b/1.md', 'a_b/sub/3.md'])
    const root = await getNode(db, frank, [])
    const page = await listFilesUnder(db, { owner: frank, scope: root, offset: 1, limit: 2 })
    expect(page.map((f) => f.path)).toEqual(['a_b/1.md', 'a_b/sub/3.md'])
    const all = await listFilesUnder(db, { owner: frank, scope: root, offset: 0, limit: 40 })
    expect(all.map((f) => f.path)).toEqual(['a%/4.md', 'a_b/1.md', 'a_b/sub/3.md', 'axb/2.md'])
  })

  it('switches versions atomically: concurrent readers see a whole old or whole new version', async () => {
    const { db } = database
    const gina = await createUser(db, { login: 'gina', password: 'correct horse', hashCost: TEST_PASSWORD_COST })
    const versions = Array.from({ length: 8 }, (_, i) => `version-${i} `.repeat(200))
    const { node } = await putFile(db, { owner: gina, segments: ['f.txt'], bytes: text(versions[0]!), parsed: parsed(versions[0]!) })
    const writes = (async () => {
      for (const v of versions.slice(1)) await putFile(db, { owner: gina, segments: ['f.txt'], bytes: text(v), parsed: parsed(v) })
    })()
    const seen = new Set<string>()
    for (let i = 0; i < 30; i++) {
      const content = await readCurrent(db, gina, node)
      expect(versions).toContain(content.body)
      seen.add(content.body!)
    }
    await writes
    expect((await readCurrent(db, gina, node)).body).toBe(versions.at(-1))
    expect(seen.size).toBeGreaterThanOrEqual(1)
  })
})
