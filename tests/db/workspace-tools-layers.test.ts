// The agent's tools on a compiled folder (issue 35): generated pages are a layer, not peers.
// `search` counts and ranks the sources first, shows a summary's hit only when its source has
// none (as "summary of <source>") and an overview's after every source; `read` says what a page
// summarises; `ls` carries the folder's abstract, bounded, and whether it is stale; `status` says
// when the folder was last compiled and what changed since.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Effect from 'effect/Effect'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import type { ToolContext } from '../../src/effects/tools/tool-definition.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import type { DirectoryStatus, LsResult, ReadResult, SearchResult } from '../../src/effects/tools/tool-types.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import { writeCompiledFolder } from '../support/compiled-folder.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const PAGER = '# Pager\n\nThe pager app stays silent unless critical alerts are allowed. At night the phone is in do-not-disturb mode.\n'
const HOTELS = '# Hotels\n\nThe hotel cap is 220 EUR per night in London and 190 EUR in Paris.\n'
const ONBOARDING = '# Onboarding\n\nNew people get a laptop on their first day.\n'

describe('the agent’s tools on a compiled folder', () => {
  let database: TestDatabase
  let owner: Owner
  const registry = makeToolRegistry(WORKSPACE_TOOLS)
  const scope: () => ToolContext = () => ({ db: database.db, caller: owner, scope: parseKbUri({ uri: 'kb://me/team/', callerLogin: owner.login }), progress: () => {} })
  const run = async <T,>(name: string, args: unknown) => {
    const outcome = await Effect.runPromise(registry.run({ context: scope(), name, args }))
    expect(outcome.ok, outcome.content).toBe(true)
    return { result: outcome.result as T, summary: outcome.summary }
  }

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    owner = await createUser(database.db, { login: 'vera', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    await putText(database.db, { owner, segments: ['team', 'pager.md'], text: PAGER })
    await putText(database.db, { owner, segments: ['team', 'hotels.md'], text: HOTELS })
    await putText(database.db, { owner, segments: ['team', 'onboarding.md'], text: ONBOARDING })
    await writeCompiledFolder(database.db, {
      owner,
      folder: ['team'],
      summaries: {
        'pager.md': 'The pager app stays silent unless critical alerts are allowed.', // extractive: the source's own sentence
        'hotels.md': 'The reimbursement ceiling for hotels differs by city.', // words the source does not use
        'onboarding.md': 'New people get a laptop on their first day.',
      },
      overview: 'Team handbook. If the pager stays silent, allow critical alerts at night: see pager.md. Hotel caps are in hotels.md.',
      abstract: `The team's handbook: the pager, hotel caps and onboarding. ${'More words about the handbook. '.repeat(100)}`,
    })
  })
  afterAll(async () => {
    await database?.close()
  })

  it('search counts only the sources as files scanned and ranks every source hit before the compiled pages', async () => {
    const { result, summary } = await run<SearchResult>('search', { query: 'critical alerts at night' })
    expect(result.files_scanned).toBe(3)
    expect(result.layer_pages_scanned).toBe(5) // three summaries, the overview, the abstract
    expect(summary).toMatch(/ in 3 files \(and 5 compiled pages\)/)
    // The overview holds the whole phrase (it scores higher), the source only its words: the source still comes first.
    expect(result.hits[0]).toMatchObject({ uri: 'kb://users/vera/team/pager.md' })
    expect(result.hits[0]!.layer).toBeUndefined()
    const overview = result.hits.find((hit) => hit.uri === 'kb://users/vera/team/.overview.md')
    expect(overview?.layer).toEqual({ kind: 'overview', of: 'kb://users/vera/team/' })
    expect(result.hits.findIndex((hit) => hit.layer !== undefined)).toBeGreaterThan(result.hits.findLastIndex((hit) => hit.layer === undefined))
  })

  it('search gives one result per source: the source’s own hit wins over its summary’s, and a summary stands in only when its source has none', async () => {
    const pager = (await run<SearchResult>('search', { query: 'critical alerts' })).result
    expect(pager.hits.map((hit) => hit.uri)).not.toContain('kb://users/vera/team/summaries/pager.md')
    expect(pager.hits.filter((hit) => hit.uri === 'kb://users/vera/team/pager.md').length).toBeGreaterThan(0)
    const ceiling = (await run<SearchResult>('search', { query: 'reimbursement ceiling' })).result
    expect(ceiling.hits).toEqual([
      expect.objectContaining({ uri: 'kb://users/vera/team/summaries/hotels.md', layer: { kind: 'summary', of: 'kb://users/vera/team/hotels.md' } }),
    ])
    expect(ceiling.files_scanned).toBe(3)
  })

  it('read of a compiled page says what it summarises; a source says nothing of the kind', async () => {
    const summary = (await run<ReadResult>('read', { uri: 'kb://me/team/summaries/pager.md' })).result
    expect(summary.layer).toEqual({ kind: 'summary', of: 'kb://users/vera/team/pager.md' })
    expect(summary.text).toContain('critical alerts')
    expect((await run<ReadResult>('read', { uri: 'kb://me/team/.overview.md' })).result.layer).toEqual({ kind: 'overview', of: 'kb://users/vera/team/' })
    expect((await run<ReadResult>('read', { uri: 'kb://me/team/pager.md' })).result.layer).toBeUndefined()
  })

  it('ls carries the folder’s abstract (at most 2,000 characters, where to read the rest) and its overview; stale, it says what changed', async () => {
    const { result } = await run<LsResult>('ls', {})
    expect(result.abstract).toMatchObject({ uri: 'kb://users/vera/team/.abstract.md', stale: false, truncated: true })
    expect(result.abstract!.text.startsWith("# Abstract: team\n\nThe team's handbook")).toBe(true)
    expect([...result.abstract!.text].length).toBe(2000)
    expect(result.abstract!.changes).toBeUndefined()
    expect(result.overview).toMatchObject({ uri: 'kb://users/vera/team/.overview.md', stale: false })
    expect((await run<LsResult>('ls', { offset: 1 })).result.abstract).toBeUndefined() // the first page carries it
    expect((await run<LsResult>('ls', { uri: 'kb://me/team/summaries/' })).result.abstract).toBeUndefined()

    const before = (await run<DirectoryStatus>('status', {})).result
    expect(before.layers).toMatchObject({ stale: false, changes: [], changes_total: 0, overview: { uri: 'kb://users/vera/team/.overview.md' } })
    expect(Date.parse(before.layers!.compiled_at)).toBeGreaterThan(Date.now() - 60_000)
    // the folder's files are the person's own: its compiled pages are its layers, not files
    expect(before.files.map((file) => file.uri).filter((uri) => uri.includes('/summaries/') || /\.(overview|abstract)\.md$/.test(uri))).toEqual([])
    expect(before.total).toBe(before.files.length)

    await putText(database.db, { owner, segments: ['team', 'pager.md'], text: `${PAGER}\nA new line.\n` })
    await putText(database.db, { owner, segments: ['team', 'travel.md'], text: 'Trains first.' })
    const stale = (await run<LsResult>('ls', {})).result
    expect(stale.abstract).toMatchObject({ stale: true })
    expect(stale.abstract!.changes!.split('; ').sort()).toEqual(['added: kb://users/vera/team/travel.md', 'changed: kb://users/vera/team/pager.md'])
    expect(stale.overview).toMatchObject({ stale: true })

    const { result: status, summary } = await run<DirectoryStatus>('status', {})
    expect(status.layers).toMatchObject({ stale: true, changes_total: 2, compiled_at: before.layers!.compiled_at })
    expect(status.layers!.changes.map((change) => `${change.change} ${change.uri}`).sort()).toEqual(['added kb://users/vera/team/travel.md', 'changed kb://users/vera/team/pager.md'])
    expect(summary).toMatch(/compiled .*, 2 changes since/)
  })
})
