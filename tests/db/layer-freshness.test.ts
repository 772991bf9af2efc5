// A folder's compiled layers know what they were built from: after a compile every page is fresh;
// a source's new version, a rename or move, a delete, and a person's file added to the folder each
// make the overview and abstract stale and say what changed (a summary: its own source only).
// Real PostgreSQL and pg-boss, a worker, a scripted model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import { folderLayers, isStale, pagesFreshness } from '../../src/effects/compile/layer-freshness.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { moveNode } from '../../src/effects/workspace/manage.ts'
import { moveToTrash } from '../../src/effects/workspace/trash.ts'
import { findNode } from '../../src/effects/workspace/store.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { type CompileHarness, registryWith, startCompileHarness } from '../support/compile-harness.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

describe('the freshness of compiled layers', () => {
  let database: TestDatabase
  let harness: CompileHarness
  let alice: Owner
  const echo = createScriptedModel({ info: { id: 'echo', name: 'Echo' }, script: () => ({ kind: 'result', result: textResult('A summary of the file.') }) })

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    alice = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const name of ['a.md', 'b.md', 'c.md']) await putText(database.db, { owner: alice, segments: ['team', name], text: `# ${name}\nNotes of ${name}.` })
    harness = await startCompileHarness({ database, models: registryWith([echo]) })
    await harness.startWorker({ name: 'layers' })
    const queued = await harness.service.enqueue({ caller: alice, params: { uris: ['a.md', 'b.md', 'c.md'].map((name) => `kb://me/team/${name}`), channel: 'llm', modelId: 'echo' } })
    const done = await harness.waitForJob(queued.jobs[0]!.id, (job) => job.status === 'succeeded' || job.status === 'failed', 'the end')
    expect(done.status, JSON.stringify(done)).toBe('succeeded')
  })
  afterAll(async () => {
    await harness?.close()
    await database?.close()
  })

  const layers = async () => {
    const team = (await findNode(database.db, alice, ['team']))!
    return folderLayers(database.db, alice, team.id)
  }
  const changesOf = async () => (await layers()).overview!.freshness!.changes.map((change) => `${change.change} ${change.uri}`)

  it('is fresh after the compile: the overview and abstract record every source', async () => {
    const { overview, abstract } = await layers()
    expect(overview?.uri).toBe('kb://users/alice/team/.overview.md')
    expect(abstract?.uri).toBe('kb://users/alice/team/.abstract.md')
    expect(overview!.freshness).toMatchObject({ kind: 'overview', tracked: true, changes: [] })
    expect(abstract!.freshness).toMatchObject({ kind: 'abstract', tracked: true, changes: [] })
  })

  it('a new version, a rename, a delete and an added file each make the folder layers stale and say what changed; a summary follows its own source only', async () => {
    await putText(database.db, { owner: alice, segments: ['team', 'a.md'], text: '# a.md\nNew notes.' })
    expect(await changesOf()).toEqual(['changed kb://users/alice/team/a.md'])
    const summaryA = (await findNode(database.db, alice, ['team', 'summaries', 'a.md']))!
    const summaryC = (await findNode(database.db, alice, ['team', 'summaries', 'c.md']))!
    const pages = await pagesFreshness(database.db, alice, [summaryA.id, summaryC.id])
    expect(isStale(pages.get(summaryA.id)!)).toBe(true)
    expect(isStale(pages.get(summaryC.id)!)).toBe(false)

    const team = (await findNode(database.db, alice, ['team']))!
    await moveNode(database.db, { owner: alice, node: (await findNode(database.db, alice, ['team', 'b.md']))!, destination: team, name: 'b-renamed.md' })
    await moveToTrash(database.db, { owner: alice, node: (await findNode(database.db, alice, ['team', 'c.md']))! })
    await putText(database.db, { owner: alice, segments: ['team', 'd.md'], text: '# d\nA new file.' })
    expect((await changesOf()).sort()).toEqual(
      [
        'changed kb://users/alice/team/a.md',
        'moved kb://users/alice/team/b-renamed.md',
        'deleted kb://users/alice/team/c.md',
        'added kb://users/alice/team/d.md',
      ].sort(),
    )
    expect((await layers()).abstract!.freshness!.changes).toHaveLength(4)
  })
})
