// The Trash (issue 37) in the store: a delete moves a folder — nested files, every version, its
// compiled pages and the summaries of its files kept elsewhere — out of sight of everything that
// reads the workspace (ls, read, search and status of the agent, the text-only model's listing,
// the workspace search, export), and a restore brings all of it back where it was; the folders
// above are made again, a taken name becomes "name (restored)". Deleting for good (one item, the
// whole Trash, the retention job) removes what the hard delete removed. Another person's Trash
// is invisible and out of reach. Real PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Effect from 'effect/Effect'
import { sql } from 'kysely'
import pg from 'pg'
import { createUser } from '../../src/effects/auth/users.ts'
import { generatedPage, pagesFreshness, recordLayerSources } from '../../src/effects/compile/layer-freshness.ts'
import type { GeneratedKind, Owner } from '../../src/effects/db/schema.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import type { ToolContext } from '../../src/effects/tools/tool-definition.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { buildHostMaterial } from '../../src/effects/turn/prepare-turn.ts'
import { readCurrent } from '../../src/effects/workspace/file-contents.ts'
import { listVersions } from '../../src/effects/workspace/file-versions.ts'
import { FolderGone, ingestFiles } from '../../src/effects/workspace/ingest.ts'
import type { DocumentParser } from '../../src/effects/workspace/parse/document-parser.ts'
import { success } from '../../src/effects/workspace/parse/parse-outcome.ts'
import { searchWorkspace } from '../../src/effects/workspace/search-index.ts'
import { storageUsedBytes } from '../../src/effects/workspace/storage-limits.ts'
import { findNode, getNode } from '../../src/effects/workspace/store.ts'
import { listFilesUnder } from '../../src/effects/workspace/folder-listing.ts'
import {
  deleteFromTrash,
  emptyTrash,
  findTrashItem,
  listTrash,
  moveToTrash,
  purgeExpiredTrash,
  restoreFromTrash,
  restoredNames,
} from '../../src/effects/workspace/trash.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import { TrashItemNotFound } from '../../src/effects/workspace/workspace-errors.ts'
import { blockedOnALock, openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const DAY_MS = 24 * 3600 * 1000

describe('the Trash', () => {
  let database: TestDatabase
  let alice: Owner
  let bob: Owner
  const db = () => database.db
  const put = (who: Owner, path: string, text: string) => putText(db(), { owner: who, segments: path.split('/'), text })
  const node = (who: Owner, path: string) => getNode(db(), who, path === '' ? [] : path.split('/'))
  const exists = async (who: Owner, path: string) => (await findNode(db(), who, path.split('/'))) !== undefined
  /** A compile job's page, as its publish marks it: what it is, and (a summary) of which file; what it was built from. */
  const markGenerated = async (who: Owner, path: string, kind: GeneratedKind, sources: ReadonlyArray<string>) => {
    const page = await node(who, path)
    const ids = await Promise.all(sources.map(async (source) => (await node(who, source)).id))
    await db().updateTable('nodes').set({ generated: kind, generated_from: kind === 'summary' ? ids[0]! : null }).where('id', '=', page.id).execute()
    await recordLayerSources(db(), { pageId: page.id, sourceIds: ids })
  }
  const registry = makeToolRegistry(WORKSPACE_TOOLS)
  const tool = async (who: Owner, name: string, args: unknown) => {
    const context: ToolContext = { db: db(), caller: who, scope: parseKbUri({ uri: 'kb://me/', callerLogin: who.login }), progress: () => {} }
    return Effect.runPromise(registry.run({ context, name, args }))
  }
  const rowsOf = async (table: 'file_versions' | 'search_passages' | 'layer_sources', column: 'node_id' | 'page_id', ids: ReadonlyArray<string>) =>
    Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)} where ${sql.ref(column)} = any(${ids}::uuid[])`.execute(db())).rows[0]!.n)

  beforeAll(async () => {
    database = await openTestDatabase()
    alice = await createUser(db(), { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    bob = await createUser(db(), { login: 'bob', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    await database?.close()
  })

  it('a folder goes with its nested files, versions and pages; nothing sees it; restored, all of it is back where it was', async () => {
    await put(alice, 'proj/plan.md', '# Plan\nThe heron migrates in spring.')
    await put(alice, 'proj/plan.md', '# Plan\nThe heron migrates in spring, version two.')
    await put(alice, 'proj/deep/notes.md', 'Notes about the kingfisher.')
    await put(alice, 'proj/.overview.md', '# Overview\nplan.md and deep/notes.md: herons and kingfishers.')
    await markGenerated(alice, 'proj/.overview.md', 'overview', ['proj/plan.md', 'proj/deep/notes.md'])
    await put(alice, 'wiki/summaries/plan.md', '# Summary: plan.md\nSource: kb://users/alice/proj/plan.md\nHerons.')
    await markGenerated(alice, 'wiki/summaries/plan.md', 'summary', ['proj/plan.md'])
    await put(alice, 'keep.md', 'The heron is also mentioned here.')
    const used = await storageUsedBytes(db(), alice.id)
    const plan = await node(alice, 'proj/plan.md')

    const deleted = await moveToTrash(db(), { owner: alice, node: await node(alice, 'proj'), retentionDays: 7 })
    expect(deleted).toMatchObject({ uri: 'kb://users/alice/proj/', files: 3, directories: 1, summaries: 1 })

    // Out of sight: the tree, reads, the search index, the agent's tools, the text-only model's listing.
    for (const path of ['proj', 'proj/plan.md', 'proj/deep/notes.md', 'wiki/summaries/plan.md']) expect(await exists(alice, path), path).toBe(false)
    expect(await exists(alice, 'wiki/summaries')).toBe(true) // only the summary went; its folder stays
    expect((await searchWorkspace(db(), { owner: alice, query: 'heron' })).hits.map((hit) => hit.uri)).toEqual(['kb://users/alice/keep.md'])
    expect((await listFilesUnder(db(), { owner: alice, scope: await node(alice, ''), offset: 0, limit: 100 })).map((file) => file.uri)).toEqual(['kb://users/alice/keep.md'])
    const ls = await tool(alice, 'ls', { uri: 'kb://me/' })
    expect((ls.result as { entries: Array<{ name: string }> }).entries.map((entry) => entry.name)).toEqual(['wiki', 'keep.md'])
    const read = await tool(alice, 'read', { uri: 'kb://me/proj/plan.md' })
    expect(JSON.parse(read.content).error.code).toBe('not_found')
    const search = await tool(alice, 'search', { query: 'kingfisher' })
    expect((search.result as { hits: unknown[] }).hits).toEqual([])
    const status = await tool(alice, 'status', { uri: 'kb://me/proj/plan.md' })
    expect(JSON.parse(status.content).error.code).toBe('not_found')
    expect(await buildHostMaterial(db(), { caller: alice, node: await node(alice, '') })).not.toContain('proj')

    // In the Trash: what, from where, when, until when; its bytes still count towards the quota.
    const listed = await listTrash(db(), { owner: alice })
    expect(listed).toMatchObject({ total: 1, items: [{ id: deleted.trash.id, name: 'proj', kind: 'directory', uri: 'kb://users/alice/proj/', folderUri: 'kb://users/alice/', files: 3, directories: 1, summaries: 1 }] })
    const item = listed.items[0]!
    expect(item.purgeAt.getTime() - item.deletedAt.getTime()).toBe(7 * DAY_MS)
    expect(item.purgeAt).toEqual(deleted.trash.purgeAt)
    expect(item.bytes).toBeGreaterThan(0)
    expect(await storageUsedBytes(db(), alice.id)).toBe(used)
    expect((await listTrash(db(), { owner: bob })).total).toBe(0)

    const restored = await restoreFromTrash(db(), { owner: alice, id: deleted.trash.id })
    expect(restored).toEqual({ uri: 'kb://users/alice/proj/', from: 'kb://users/alice/proj/', name: 'proj', kind: 'directory', renamed: false, summaries: 1 })
    const back = await node(alice, 'proj/plan.md')
    expect(back.id).toBe(plan.id)
    expect((await listVersions(db(), { owner: alice, node: back })).versions.map((version) => version.versionNo)).toEqual([2, 1])
    expect((await readCurrent(db(), alice, await node(alice, 'proj/deep/notes.md'))).body).toBe('Notes about the kingfisher.')
    // The pages came back with it, fresh as they were, and the search finds all of it again.
    const pages = [await node(alice, 'proj/.overview.md'), await node(alice, 'wiki/summaries/plan.md')]
    for (const freshness of (await pagesFreshness(db(), alice, pages.map((page) => page.id))).values()) expect(freshness.changes).toEqual([])
    expect((await generatedPage(db(), alice, pages[1]!.id))?.source).toEqual({ uri: 'kb://users/alice/proj/plan.md', name: 'plan.md' })
    expect((await searchWorkspace(db(), { owner: alice, query: 'kingfisher' })).hits.map((hit) => hit.uri)).toContain('kb://users/alice/proj/deep/notes.md')
    expect((await listTrash(db(), { owner: alice })).total).toBe(0)
    await expect(restoreFromTrash(db(), { owner: alice, id: deleted.trash.id })).rejects.toBeInstanceOf(TrashItemNotFound) // once
  })

  it('restore makes missing folders again, and a taken name becomes "name (restored)" — the summary follows it', async () => {
    await put(alice, 'a/b/c.md', 'deep file')
    const file = await moveToTrash(db(), { owner: alice, node: await node(alice, 'a/b/c.md') })
    const folder = await moveToTrash(db(), { owner: alice, node: await node(alice, 'a') })
    expect(await exists(alice, 'a')).toBe(false)
    // The file first: its folders a/ and a/b/ are made again.
    expect(await restoreFromTrash(db(), { owner: alice, id: file.trash.id })).toMatchObject({ uri: 'kb://users/alice/a/b/c.md', renamed: false })
    expect((await readCurrent(db(), alice, await node(alice, 'a/b/c.md'))).body).toBe('deep file')
    // Then the folder: a/ is taken now.
    expect(await restoreFromTrash(db(), { owner: alice, id: folder.trash.id })).toMatchObject({ uri: 'kb://users/alice/a (restored)/', from: 'kb://users/alice/a/', renamed: true })
    expect(await exists(alice, 'a (restored)/b')).toBe(true)

    await put(alice, 'notes/report.md', 'the old report')
    await put(alice, 'notes/summaries/report.md', '# Summary: report.md\nSource: kb://users/alice/notes/report.md\nOld.')
    await markGenerated(alice, 'notes/summaries/report.md', 'summary', ['notes/report.md'])
    const old = await moveToTrash(db(), { owner: alice, node: await node(alice, 'notes/report.md') })
    await put(alice, 'notes/report.md', 'a new report, uploaded since')
    const restored = await restoreFromTrash(db(), { owner: alice, id: old.trash.id })
    expect(restored).toMatchObject({ uri: 'kb://users/alice/notes/report (restored).md', renamed: true, summaries: 1 })
    expect((await readCurrent(db(), alice, await node(alice, 'notes/report (restored).md'))).body).toBe('the old report')
    expect((await readCurrent(db(), alice, await node(alice, 'notes/report.md'))).body).toBe('a new report, uploaded since')
    const summary = (await db().selectFrom('nodes').select(['id', 'path']).where('owner_id', '=', alice.id).where('generated', '=', 'summary').where('path', 'like', 'notes/%').execute())[0]!
    expect((await generatedPage(db(), alice, summary.id))?.source?.uri).toBe('kb://users/alice/notes/report (restored).md')
    expect((await readCurrent(db(), alice, await node(alice, summary.path))).body).toContain('Source: kb://users/alice/notes/report%20%28restored%29.md')

    expect(restoredNames('report.md', 'file').slice(0, 2)).toEqual(['report (restored).md', 'report (restored 2).md'])
    expect(restoredNames('.overview.md', 'file')[0]).toBe('.overview (restored).md')
    expect(restoredNames('v1.2', 'directory')[0]).toBe('v1.2 (restored)')
  })

  it('an overview written while a file was in the Trash is stale once it is back; one written before it is fresh again', async () => {
    await put(alice, 'f/one.md', 'one')
    await put(alice, 'f/two.md', 'two')
    await put(alice, 'f/.overview.md', '# Overview\none and two')
    await markGenerated(alice, 'f/.overview.md', 'overview', ['f/one.md', 'f/two.md'])
    const overview = async () => (await pagesFreshness(db(), alice, [(await node(alice, 'f/.overview.md')).id])).values().next().value!.changes
    const two = await moveToTrash(db(), { owner: alice, node: await node(alice, 'f/two.md') })
    expect(await overview()).toEqual([{ change: 'deleted', uri: 'kb://users/alice/f/two.md' }])
    await restoreFromTrash(db(), { owner: alice, id: two.trash.id })
    expect(await overview()).toEqual([]) // it was built from two.md as it is again

    const again = await moveToTrash(db(), { owner: alice, node: await node(alice, 'f/two.md') })
    await put(alice, 'f/.overview.md', '# Overview\none only') // compiled again meanwhile, without two.md
    await markGenerated(alice, 'f/.overview.md', 'overview', ['f/one.md'])
    expect(await overview()).toEqual([])
    await restoreFromTrash(db(), { owner: alice, id: again.trash.id })
    expect(await overview()).toEqual([{ change: 'added', uri: 'kb://users/alice/f/two.md' }])
  })

  it('a file where a folder to make again should be is a conflict that says so; the item stays in the Trash', async () => {
    await put(alice, 'x/y.md', 'y')
    const y = await moveToTrash(db(), { owner: alice, node: await node(alice, 'x/y.md') })
    const x = await moveToTrash(db(), { owner: alice, node: await node(alice, 'x') })
    await put(alice, 'x', 'a file named x, where the folder was')
    await expect(restoreFromTrash(db(), { owner: alice, id: y.trash.id })).rejects.toThrow('kb://users/alice/x/y.md: it cannot go back: kb://users/alice/x is a file now, where a folder is needed; rename or move that file and restore again')
    expect(await findTrashItem(db(), { owner: alice, id: y.trash.id })).toMatchObject({ uri: 'kb://users/alice/x/y.md' })
    expect((await readCurrent(db(), alice, await node(alice, 'x'))).body).toBe('a file named x, where the folder was')
    await deleteFromTrash(db(), { owner: alice, id: x.trash.id })
    await deleteFromTrash(db(), { owner: alice, id: y.trash.id })
  })

  it('another person can neither see, restore nor delete an item; a malformed id is not found either', async () => {
    await put(alice, 'private.md', 'alice only')
    const mine = await moveToTrash(db(), { owner: alice, node: await node(alice, 'private.md') })
    expect((await listTrash(db(), { owner: bob })).items).toEqual([])
    await expect(findTrashItem(db(), { owner: bob, id: mine.trash.id })).rejects.toBeInstanceOf(TrashItemNotFound)
    await expect(restoreFromTrash(db(), { owner: bob, id: mine.trash.id })).rejects.toBeInstanceOf(TrashItemNotFound)
    await expect(deleteFromTrash(db(), { owner: bob, id: mine.trash.id })).rejects.toBeInstanceOf(TrashItemNotFound)
    expect(await emptyTrash(db(), { owner: bob })).toEqual({ items: 0, bytes: 0 })
    await expect(restoreFromTrash(db(), { owner: alice, id: "x' or 1=1 --" })).rejects.toBeInstanceOf(TrashItemNotFound)
    expect(await exists(bob, 'private.md')).toBe(false)
    expect((await restoreFromTrash(db(), { owner: alice, id: mine.trash.id })).uri).toBe('kb://users/alice/private.md')
  })

  it('deleting for good removes versions, search passages and layer rows, keeps jobs as history; the retention job takes only what is due', async () => {
    await emptyTrash(db(), { owner: alice })
    await put(alice, 'old/a.md', 'ancient albatross')
    await put(alice, 'old/a.md', 'ancient albatross, second')
    await put(alice, 'old/summaries/a.md', '# Summary: a.md\nAlbatross.')
    await markGenerated(alice, 'old/summaries/a.md', 'summary', ['old/a.md'])
    await put(alice, 'recent/b.md', 'recent buzzard')
    const ids = [(await node(alice, 'old/a.md')).id, (await node(alice, 'old/summaries/a.md')).id]
    const before = await storageUsedBytes(db(), alice.id)
    const old = await moveToTrash(db(), { owner: alice, node: await node(alice, 'old'), retentionDays: 1 })
    const recent = await moveToTrash(db(), { owner: alice, node: await node(alice, 'recent'), retentionDays: 1 })
    expect(await rowsOf('file_versions', 'node_id', ids)).toBe(3)
    expect(await rowsOf('search_passages', 'node_id', ids)).toBeGreaterThan(0)
    expect(await rowsOf('layer_sources', 'page_id', ids)).toBe(1)

    expect(await purgeExpiredTrash(db())).toEqual({ items: 0, bytes: 0 }) // nothing is due yet
    await db().updateTable('trash_items').set({ purge_at: sql<Date>`now() - interval '1 second'` }).where('id', '=', old.trash.id).execute()
    const purged = await purgeExpiredTrash(db())
    expect(purged.items).toBe(1)
    expect(await storageUsedBytes(db(), alice.id)).toBe(before - purged.bytes)
    for (const table of ['file_versions', 'search_passages'] as const) expect(await rowsOf(table, 'node_id', ids), table).toBe(0)
    expect(await rowsOf('layer_sources', 'page_id', ids)).toBe(0)
    expect(await db().selectFrom('all_nodes').select('id').where('id', 'in', ids).execute()).toEqual([])
    const jobs = await db().selectFrom('jobs').select('node_id').where('owner_id', '=', alice.id).where('uri', '=', 'kb://users/alice/old/a.md').execute()
    expect(jobs.length).toBe(2) // the parse jobs of both versions, as history
    expect(jobs.every((job) => job.node_id === null)).toBe(true)
    await expect(restoreFromTrash(db(), { owner: alice, id: old.trash.id })).rejects.toBeInstanceOf(TrashItemNotFound)
    expect((await listTrash(db(), { owner: alice })).items.map((item) => item.id)).toEqual([recent.trash.id])
    expect(await emptyTrash(db(), { owner: alice })).toEqual({ items: 1, bytes: 14 }) // "recent buzzard"
    expect(await storageUsedBytes(db(), alice.id)).toBe(before - purged.bytes - 14)
  })

  it('a delete racing an upload into the folder: the upload lands before (and goes with it) or after (refused); nothing is lost', async () => {
    const parser: DocumentParser = {
      parse: async (request) => success('text/markdown', 'text', new TextDecoder().decode(request.bytes!)),
      onActivity: () => () => undefined,
      close: async () => undefined,
    }
    const upload = (folder: { segments: string[]; nodeId: string }, name: string) =>
      ingestFiles(db(), { owner: alice, folder: { ...folder, create: false }, files: [{ name, bytes: new TextEncoder().encode(name) }], parser })
    // Upload first: a transaction shares the tree (as an upload's does) while the delete starts, then commits the file.
    await put(alice, 'race/seed.md', 'seed')
    const race = await node(alice, 'race')
    const holder = new pg.Client({ connectionString: database.url })
    await holder.connect()
    try {
      await holder.query('begin')
      await holder.query(`select pg_advisory_xact_lock_shared(${0x6b6e6f77}::int4, hashtext($1::text))`, [alice.id])
      const deleting = moveToTrash(db(), { owner: alice, node: race })
      await blockedOnALock(holder)
      await holder.query(`insert into nodes (id, owner_id, parent_id, name, path, kind) values (gen_random_uuid(), $1, $2, 'landed.md', 'race/landed.md', 'file')`, [alice.id, race.id])
      await holder.query('commit')
      const deleted = await deleting
      expect(deleted.files).toBe(2) // the file that landed first went with the folder
      const restored = await restoreFromTrash(db(), { owner: alice, id: deleted.trash.id })
      expect(restored.uri).toBe('kb://users/alice/race/')
      expect(await exists(alice, 'race/landed.md')).toBe(true)
    } finally {
      await holder.end()
    }
    // Delete first: the upload finds its folder gone and stores nothing; the Trash keeps the folder whole.
    const again = await node(alice, 'race')
    const gone = await moveToTrash(db(), { owner: alice, node: again })
    await expect(upload({ segments: ['race'], nodeId: again.id }, 'late.md')).rejects.toBeInstanceOf(FolderGone)
    expect((await findTrashItem(db(), { owner: alice, id: gone.trash.id })).files).toBe(2)
    // Both at once, many times: every file is either live or in the Trash with its folder.
    for (let round = 0; round < 6; round++) {
      await put(alice, `r${round}/seed.md`, 'seed')
      const folder = await node(alice, `r${round}`)
      const [uploaded, trashed] = await Promise.allSettled([upload({ segments: [`r${round}`], nodeId: folder.id }, 'both.md'), moveToTrash(db(), { owner: alice, node: folder })])
      expect(trashed.status).toBe('fulfilled')
      const item = (trashed as PromiseFulfilledResult<Awaited<ReturnType<typeof moveToTrash>>>).value
      if (uploaded.status === 'fulfilled') expect(item.files, `round ${round}`).toBe(2)
      else expect(uploaded.reason).toBeInstanceOf(FolderGone)
      expect(await exists(alice, `r${round}/both.md`)).toBe(false)
    }
  })

  it('a restore racing a new file of the same name never breaks uniqueness nor loses either one', async () => {
    for (let round = 0; round < 6; round++) {
      const path = `clash/f${round}.md`
      await put(alice, path, 'the trashed one')
      const trashed = await moveToTrash(db(), { owner: alice, node: await node(alice, path) })
      const [restored, uploaded] = await Promise.all([restoreFromTrash(db(), { owner: alice, id: trashed.trash.id }), put(alice, path, 'the new one')])
      const live = await db().selectFrom('nodes').select(['id', 'path']).where('owner_id', '=', alice.id).where('path', 'like', `clash/f${round}%`).execute()
      const versions = await Promise.all(live.map(async (row) => (await listVersions(db(), { owner: alice, node: await node(alice, row.path) })).total))
      if (restored.renamed) {
        // the upload came first: two files, each with its own text
        expect(live.map((row) => row.path).sort()).toEqual([`clash/f${round} (restored).md`, path])
        expect(uploaded.outcome).toBe('added')
        expect(versions).toEqual([1, 1])
      } else {
        // the restore came first: the upload is the restored file's newest version, the old one kept
        expect(live.map((row) => row.path)).toEqual([path])
        expect(uploaded.outcome).toBe('updated')
        expect(versions).toEqual([2])
      }
    }
  })
})
