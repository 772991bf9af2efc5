// The workspace search (Ctrl+K) on a compiled folder (issue 35): the person's own files rank before
// the compiled pages whatever their scores, a summary stands in for its source only when the
// source did not match itself (and is marked "summary of <source>"), one per source, and an
// overview's hit says which folder it is the overview of.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { searchWorkspace } from '../../src/effects/workspace/search-index.ts'
import { writeCompiledFolder } from '../support/compiled-folder.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

describe('workspace search over compiled pages', () => {
  let database: TestDatabase
  let owner: Owner

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    owner = await createUser(database.db, { login: 'wendy', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    const files: Record<string, string> = {
      'pager.md': '# Pager\n\nThe pager stays silent at night unless critical alerts are allowed.\n',
      'hotels.md': '# Hotels\n\nThe hotel cap is 220 EUR per night in London.\n',
      'overview-of-q3.md': '# Q3\n\nRevenue grew.\n',
    }
    for (const [name, text] of Object.entries(files)) await putText(database.db, { owner, segments: ['team', name], text })
    await writeCompiledFolder(database.db, {
      owner,
      folder: ['team'],
      summaries: {
        'pager.md': 'The pager stays silent at night unless critical alerts are allowed.',
        'hotels.md': 'The reimbursement ceiling for hotels differs by city.',
        'overview-of-q3.md': 'Revenue grew in the third quarter.',
      },
      // Says "critical alerts" over and over: it would outrank the source on its text rank alone.
      overview: 'Critical alerts, critical alerts, critical alerts: the pager needs critical alerts allowed at night.',
      abstract: 'The team handbook.',
    })
  })
  afterAll(async () => {
    await database?.close()
  })

  it('ranks the source first and drops its summary when the source matched itself', async () => {
    const page = await searchWorkspace(database.db, { owner, query: 'critical alerts' })
    expect(page.hits.map((hit) => [hit.uri, hit.layer?.kind ?? 'source'])).toEqual([
      ['kb://users/wendy/team/pager.md', 'source'],
      ['kb://users/wendy/team/.overview.md', 'overview'],
    ])
    expect(page.hits[1]!.layer).toEqual({ kind: 'overview', of: 'kb://users/wendy/team/' })
  })

  it('a summary stands in for a source that did not match, marked as the summary of that source', async () => {
    const page = await searchWorkspace(database.db, { owner, query: 'reimbursement ceiling' })
    expect(page.hits).toEqual([
      expect.objectContaining({ uri: 'kb://users/wendy/team/summaries/hotels.md', matched: 'text', layer: { kind: 'summary', of: 'kb://users/wendy/team/hotels.md' } }),
    ])
  })

  it('a name match of a person’s file ranks before the compiled pages named alike', async () => {
    const page = await searchWorkspace(database.db, { owner, query: 'overview' })
    expect(page.hits[0]).toMatchObject({ uri: 'kb://users/wendy/team/overview-of-q3.md' })
    expect(page.hits[0]!.layer).toBeUndefined()
    expect(page.hits.slice(1).every((hit) => hit.layer !== undefined)).toBe(true)
    // The summary of overview-of-q3.md matches by name too, but its source is already a result.
    expect(page.hits.map((hit) => hit.uri)).not.toContain('kb://users/wendy/team/summaries/overview-of-q3.md')
  })
})
