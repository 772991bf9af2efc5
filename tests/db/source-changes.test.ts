// Issue 35: a compiled summary follows its source. A delete takes the source's summary with it
// (wherever it lives; its text no longer searchable) and the folder layers report the source
// 'deleted'; a rename or move renames the summary to match and gives it a version citing the new
// URI (the summary fresh, the overview 'moved'); a new version leaves both stale ('changed'), and
// a rename after it keeps the summary stale. Broke before: the summary kept the old name and
// citation, and a deleted file's text lived on, searchable, in its summary.
// Real PostgreSQL and pg-boss, a worker, a scripted model that repeats each file's codeword.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { folderLayers, isStale, pagesFreshness } from '../../src/effects/compile/layer-freshness.ts'
import { deleteConsequences } from '../../src/effects/compile/source-changes.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { readCurrent } from '../../src/effects/workspace/file-contents.ts'
import { moveNode } from '../../src/effects/workspace/manage.ts'
import { moveToTrash } from '../../src/effects/workspace/trash.ts'
import { searchWorkspace } from '../../src/effects/workspace/search-index.ts'
import { findNode, getNode } from '../../src/effects/workspace/store.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const CODEWORDS: Record<string, string> = { 'del/a.md': 'zebrafinch', 'del/b.md': 'kestrel', 'gone/x.md': 'ocelot', 'gone/y.md': 'quokka' }

describe('a summary follows its source', () => {
  let database: TestDatabase
  let harness: CompileHarness
  let alice: Owner
  // Each summary repeats its document's codeword, so a search finds it in the summary too.
  const echo = createScriptedModel({
    info: { id: 'echo', name: 'Echo' },
    script: (request) => {
      const word = /Codeword (\w+)/.exec(JSON.stringify(request.messages))?.[1] ?? 'none'
      return { kind: 'result', result: textResult(`The file's codeword is ${word}.`) }
    },
  })
  const db = () => database.db
  const node = async (path: string) => getNode(db(), alice, path.split('/'))
  const exists = async (path: string) => (await findNode(db(), alice, path.split('/'))) !== undefined
  const text = async (path: string) => (await readCurrent(db(), alice, await node(path))).body ?? ''
  const freshness = async (path: string) => (await pagesFreshness(db(), alice, [(await node(path)).id])).get((await node(path)).id)!
  const overviewChanges = async (folder: string) =>
    (await folderLayers(db(), alice, (await node(folder)).id)).overview!.freshness!.changes.map((change) => (change.change === 'moved' ? `moved ${change.from} → ${change.uri}` : `${change.change} ${change.uri}`))
  const compile = async (uris: ReadonlyArray<string>, artifactParentUri?: string) => {
    const queued = await harness.service.enqueue({ caller: alice, params: { uris, channel: 'llm', modelId: 'echo', ...(artifactParentUri ? { artifactParentUri } : {}) } })
    const done = await harness.waitForJob(queued.jobs[0]!.id, (job) => job.status === 'succeeded' || job.status === 'failed', 'the end')
    expect(done.status, JSON.stringify(done)).toBe('succeeded')
  }
  const uri = (path: string) => `kb://users/alice/${path}`

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    alice = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const path of ['del/a.md', 'del/b.md', 'gone/x.md', 'gone/y.md', 'ren/a.md', 'ren/b.md', 'ren/c.md', 'mv/a.md', 'fold/a.md', 'ver/a.md']) {
      await putText(database.db, { owner: alice, segments: path.split('/'), text: `# ${path}\nCodeword ${CODEWORDS[path] ?? 'plain'}.` })
    }
    await putText(database.db, { owner: alice, segments: ['wiki', 'readme.md'], text: '# The wiki\nWhere gone/ is compiled.' })
    harness = await startCompileHarness({ database, models: registryWith([echo]) })
    await harness.startWorker({ name: 'follow' })
    await compile(['del/a.md', 'del/b.md'].map(uri))
    await compile(['gone/x.md', 'gone/y.md'].map(uri), uri('wiki/'))
    await compile(['ren/a.md', 'ren/b.md', 'ren/c.md'].map(uri))
    await compile(['mv/a.md'].map(uri))
    await compile(['fold/a.md'].map(uri))
    await compile(['ver/a.md'].map(uri))
  })
  afterAll(async () => {
    await harness?.close()
    await database?.close()
  })

  it('a deleted file takes its summary with it, in the same delete; its text is no longer found; the overview says it was deleted', async () => {
    // one result per source: the file's own hit stands for its summary's (which would show once the file is gone)
    expect((await searchWorkspace(db(), { owner: alice, query: 'zebrafinch' })).hits.map((hit) => hit.uri)).toEqual([uri('del/a.md')])
    expect(await node('del/summaries/a.md')).toBeDefined()
    expect(await deleteConsequences(db(), alice, await node('del/a.md'))).toEqual({ summaries: [uri('del/summaries/a.md')], outdatedFolders: [uri('del/')] })

    const deleted = await moveToTrash(db(), { owner: alice, node: await node('del/a.md') })
    expect(deleted).toMatchObject({ files: 1, summaries: 1 })
    expect(await exists('del/summaries/a.md')).toBe(false)
    expect(await exists('del/summaries/b.md')).toBe(true)
    expect((await searchWorkspace(db(), { owner: alice, query: 'zebrafinch' })).hits).toEqual([])
    expect(await overviewChanges('del')).toEqual([`deleted ${uri('del/a.md')}`])
    expect(isStale(await freshness('del/.abstract.md'))).toBe(true)
  })

  it("a deleted folder takes the summaries of every file in it, wherever they live (here the artifact parent wiki/)", async () => {
    expect(await exists('wiki/summaries/x.md')).toBe(true)
    expect(await deleteConsequences(db(), alice, await node('gone'))).toEqual({ summaries: [uri('wiki/summaries/x.md'), uri('wiki/summaries/y.md')], outdatedFolders: [uri('wiki/')] })
    const deleted = await moveToTrash(db(), { owner: alice, node: await node('gone') })
    expect(deleted).toMatchObject({ files: 2, directories: 0, summaries: 2 })
    expect(await exists('wiki/summaries/x.md')).toBe(false)
    expect(await exists('wiki/summaries/y.md')).toBe(false)
    expect(await exists('wiki/readme.md')).toBe(true)
    expect((await searchWorkspace(db(), { owner: alice, query: 'ocelot' })).hits).toEqual([])
    expect((await overviewChanges('wiki')).sort()).toEqual([`deleted ${uri('gone/x.md')}`, `deleted ${uri('gone/y.md')}`])
  })

  it('a renamed file renames its summary and gives it a version citing the new URI: the summary is fresh, the overview says it moved', async () => {
    const before = await node('ren/summaries/a.md')
    const moved = await moveNode(db(), { owner: alice, node: await node('ren/a.md'), destination: await node('ren'), name: 'alpha.md' })
    expect(moved.summaries).toBe(1)
    expect(await exists('ren/summaries/a.md')).toBe(false)
    const after = await node('ren/summaries/alpha.md')
    expect(after.id).toBe(before.id)
    expect(await text('ren/summaries/alpha.md')).toMatch(/^# Summary: alpha\.md\n\nSource: kb:\/\/users\/alice\/ren\/alpha\.md\n/)
    expect(await text('ren/summaries/alpha.md')).toContain("The file's codeword is plain.")
    expect((await readCurrent(db(), alice, after)).versionNo).toBe(2)
    expect((await freshness('ren/summaries/alpha.md')).changes).toEqual([])
    expect(await overviewChanges('ren')).toEqual([`moved ${uri('ren/a.md')} → ${uri('ren/alpha.md')}`])
    // it is still a summary of that file: the next compile finds it by its source
    const row = await db().selectFrom('nodes').select(['generated', 'generated_from']).where('id', '=', after.id).executeTakeFirstOrThrow()
    expect(row).toEqual({ generated: 'summary', generated_from: (await node('ren/alpha.md')).id })
  })

  it("a renamed file whose summary name is taken (a person's own file, another file's summary) gets the next name of the rule", async () => {
    await putText(db(), { owner: alice, segments: ['ren', 'summaries', 'bee.md'], text: 'My own notes, not a summary.' })
    await moveNode(db(), { owner: alice, node: await node('ren/b.md'), destination: await node('ren'), name: 'bee.md' })
    expect(await text('ren/summaries/bee.md')).toBe('My own notes, not a summary.')
    expect(await text('ren/summaries/bee.md.summary.md')).toMatch(/^# Summary: bee\.md\n\nSource: kb:\/\/users\/alice\/ren\/bee\.md\n/)
    // c.md renamed "bee.md.summary": its first name, bee.md.summary.md, is bee.md's summary
    await moveNode(db(), { owner: alice, node: await node('ren/c.md'), destination: await node('ren'), name: 'bee.md.summary' })
    expect(await text('ren/summaries/bee.md.summary.md')).toMatch(/^Source: kb:\/\/users\/alice\/ren\/bee\.md$/m)
    expect(await text('ren/summaries/bee.md.summary.summary.md')).toMatch(/^Source: kb:\/\/users\/alice\/ren\/bee\.md\.summary$/m)
    expect(await exists('ren/summaries/c.md')).toBe(false)
  })

  it('a file moved to another folder keeps its summary where it is, citing where the file is now; the summary is fresh', async () => {
    await putText(db(), { owner: alice, segments: ['elsewhere', 'other.md'], text: '# other' })
    const moved = await moveNode(db(), { owner: alice, node: await node('mv/a.md'), destination: await node('elsewhere') })
    expect(moved.summaries).toBe(1)
    expect(await text('mv/summaries/a.md')).toMatch(/^Source: kb:\/\/users\/alice\/elsewhere\/a\.md$/m)
    expect((await freshness('mv/summaries/a.md')).changes).toEqual([])
    expect(await overviewChanges('mv')).toEqual([`moved ${uri('mv/a.md')} → ${uri('elsewhere/a.md')}`])
  })

  it("a renamed folder's summaries cite their files' new URIs", async () => {
    await moveNode(db(), { owner: alice, node: await node('fold'), destination: await node(''), name: 'folder2' })
    expect(await text('folder2/summaries/a.md')).toMatch(/^Source: kb:\/\/users\/alice\/folder2\/a\.md$/m)
    expect((await freshness('folder2/summaries/a.md')).changes).toEqual([])
    expect(await overviewChanges('folder2')).toEqual([`moved ${uri('fold/a.md')} → ${uri('folder2/a.md')}`])
  })

  it('a new version leaves the summary and the overview stale; a rename after it does not make the summary fresh', async () => {
    await putText(db(), { owner: alice, segments: ['ver', 'a.md'], text: '# ver/a.md\nCodeword changed.' })
    expect((await freshness('ver/summaries/a.md')).changes).toEqual([{ change: 'changed', uri: uri('ver/a.md') }])
    expect(await overviewChanges('ver')).toEqual([`changed ${uri('ver/a.md')}`])
    await moveNode(db(), { owner: alice, node: await node('ver/a.md'), destination: await node('ver'), name: 'a2.md' })
    expect((await freshness('ver/summaries/a2.md')).changes).toEqual([{ change: 'changed', uri: uri('ver/a2.md') }])
  })
})
