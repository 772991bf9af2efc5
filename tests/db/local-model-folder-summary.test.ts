// Issue 41: "what are these files about" with the built-in local model, end to end through the turn,
// the real tools and the database. A compiled folder whose pages are up to date is summed up by its
// abstract and overview, quoted and said to be its compiled summary; a folder never compiled, or one
// whose overview went stale when a file changed, by each file's title and opening, labelled as such.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { isQuoteRead, parseCitations, readPagesOf } from '../eval/local-model/evaluate.ts'
import { writeCompiledFolder } from '../support/compiled-folder.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const FILES: Record<string, string> = {
  'pager.md': '# Pager\n\nThe pager app stays silent at night unless critical alerts are allowed on the phone.\n',
  'hotels.md': '# Hotels\n\nThe hotel cap is 220 EUR per night in London and 190 EUR in Paris.\n',
  'onboarding.md': '# Onboarding\n\nNew people get a laptop and a badge on their first day.\n',
}
const COMPILED = {
  summaries: {
    'pager.md': 'The pager app stays silent at night unless critical alerts are allowed on the phone.',
    'hotels.md': 'The hotel cap is 220 EUR per night in London and 190 EUR in Paris.',
    'onboarding.md': 'New people get a laptop and a badge on their first day.',
  },
  overview: '- **pager.md** — the pager is silent at night without critical alerts.\n- **hotels.md** — hotel caps per city.\n- **onboarding.md** — a laptop and a badge on day one.',
  abstract: 'The team folder holds the pager setup, the hotel caps and what new people get on their first day.',
  engine: 'local',
}

describe('the local model asked to summarise a folder', () => {
  const tools = makeToolRegistry(WORKSPACE_TOOLS)
  let database: TestDatabase
  let owner: Owner

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    owner = await createUser(database.db, { login: 'yuki', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const folder of ['fresh', 'stale', 'plain']) {
      for (const [name, text] of Object.entries(FILES)) await putText(database.db, { owner, segments: [folder, name], text })
    }
    await writeCompiledFolder(database.db, { owner, folder: ['fresh'], ...COMPILED })
    await writeCompiledFolder(database.db, { owner, folder: ['stale'], ...COMPILED })
    // A new version of a source after the compile: the overview and abstract are stale.
    await putText(database.db, { owner, segments: ['stale', 'hotels.md'], text: '# Hotels\n\nThe hotel cap is now 250 EUR per night in London.\n' })
  })
  afterAll(async () => {
    await database?.close()
  })

  const ask = async (uri: string, question: string) => {
    const output = await runTurn({
      db: database.db, caller: owner, tools, model: makeLocalChatModel({ deltaDelayMs: 0 }), turnId: randomUUID(), uri, question, history: [],
      onEvent: () => {}, signal: new AbortController().signal,
    })
    expect(output.status).toBe('done')
    const final = output.messages.findLast((m) => m.role === 'assistant' && (m.tool_calls ?? []).length === 0)
    const answer = final?.role === 'assistant' ? (final.content ?? '') : ''
    const citations = parseCitations(answer)
    const pages = readPagesOf(output.messages)
    for (const citation of citations) expect(isQuoteRead(citation, pages), `${citation.uri} @${citation.offset} was read:\n${answer}`).toBe(true)
    return { answer, cited: new Set(citations.map((c) => c.uri)) }
  }

  it('quotes a fresh compiled folder’s abstract and overview, and says they are its compiled summary', async () => {
    const { answer, cited } = await ask('kb://users/yuki/fresh/', 'Summarise what these files are about.')
    expect(answer).toMatch(/^This is the compiled summary of kb:\/\/users\/yuki\/fresh\/ \(its abstract and overview, written \d{4}-\d\d-\d\d; up to date with its files\):/u)
    expect([...cited].sort()).toEqual(['kb://users/yuki/fresh/.abstract.md', 'kb://users/yuki/fresh/.overview.md'])
    expect(answer).toContain('> The team folder holds the pager setup, the hotel caps')
    expect(answer).toContain('> - **hotels.md** — hotel caps per city.')
  })

  it.each([
    ['plain', 'What are these files about?'],
    ['stale', 'Give me an overview of this folder.'],
  ])('lists each file’s title and opening in the %s folder, labelled as such', async (folder, question) => {
    const { answer, cited } = await ask(`kb://users/yuki/${folder}/`, question)
    expect(answer).toContain(`No compiled overview of kb://users/yuki/${folder}/ is up to date; here is each file's title and opening:`)
    expect([...cited].sort()).toEqual(['hotels.md', 'onboarding.md', 'pager.md'].map((name) => `kb://users/yuki/${folder}/${name}`))
    expect(answer).toContain(`- **Pager** — kb://users/yuki/${folder}/pager.md\n> The pager app stays silent at night`)
    expect(answer).not.toContain('.overview.md (offset')
    if (folder === 'stale') {
      expect(answer).toMatch(/^The compiled overview \(kb:\/\/users\/yuki\/stale\/\.overview\.md\) is out of date \(changed: [^)]*hotels\.md[^)]*\), so it is not quoted/u)
      expect(answer).toContain('> The hotel cap is now 250 EUR per night in London.')
    }
  })

  it('answers a question that only contains “about” from the passage that answers it', async () => {
    const { answer, cited } = await ask('kb://users/yuki/plain/', 'What is the hotel cap about London?')
    expect(answer).not.toContain('title and opening')
    expect([...cited]).toEqual(['kb://users/yuki/plain/hotels.md'])
  })
})
