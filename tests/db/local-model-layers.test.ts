// The built-in local model on a compiled folder (issue 35), end to end through the turn, the real
// tools and the database: the summaries, overview and abstract are a layer, not peers — the answer
// quotes a passage once, from the source (never again through its summary), and "I searched in all
// N files" counts the person's files only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import type { TurnEmitted } from '../../src/machines/index.ts'
import { writeCompiledFolder } from '../support/compiled-folder.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const FILES: Record<string, string> = {
  'pager.md': '# Pager\n\nSetting up the phone takes a minute.\n\nThe pager app stays silent at night unless critical alerts are allowed on the phone.\n',
  'hotels.md': '# Hotels\n\nThe hotel cap is 220 EUR per night in London and 190 EUR in Paris.\n',
  'onboarding.md': '# Onboarding\n\nNew people get a laptop and a badge on their first day.\n',
}

describe('the local model on a compiled folder', () => {
  const tools = makeToolRegistry(WORKSPACE_TOOLS)
  let database: TestDatabase
  let owner: Owner

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    owner = await createUser(database.db, { login: 'xena', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const [name, text] of Object.entries(FILES)) await putText(database.db, { owner, segments: ['team', name], text })
    // Extractive pages, as the local compile writes them: each summary repeats its source's sentences.
    await writeCompiledFolder(database.db, {
      owner,
      folder: ['team'],
      summaries: {
        'pager.md': 'The pager app stays silent at night unless critical alerts are allowed on the phone.',
        'hotels.md': 'The hotel cap is 220 EUR per night in London and 190 EUR in Paris.',
        'onboarding.md': 'New people get a laptop and a badge on their first day.',
      },
      overview: 'The pager app stays silent at night unless critical alerts are allowed on the phone. The hotel cap is 220 EUR per night in London.',
      abstract: 'The pager, hotel caps and onboarding.',
      engine: 'local',
    })
  })
  afterAll(async () => {
    await database?.close()
  })

  const ask = async (question: string) => {
    const events: TurnEmitted[] = []
    const output = await runTurn({
      db: database.db,
      caller: owner,
      tools,
      model: makeLocalChatModel({ deltaDelayMs: 0 }),
      turnId: randomUUID(),
      uri: 'kb://me/team/',
      question,
      history: [],
      onEvent: (event) => events.push(event),
      signal: new AbortController().signal,
    })
    expect(output.status).toBe('done')
    const answer = events.filter((e) => e.type === 'delta').map((e) => (e as { text: string }).text).join('')
    const summaries = events.filter((e) => e.type === 'tool' && e.phase === 'end').map((e) => (e as { name: string; summary: string }).name + ': ' + (e as { summary: string }).summary)
    return { answer, summaries }
  }

  it('quotes the passage once, from the source, not again from its summary or the overview', async () => {
    const { answer, summaries } = await ask('Why does the pager stay silent at night?')
    expect(answer.split('critical alerts are allowed').length - 1, answer).toBe(1)
    expect(answer).toContain('— kb://users/xena/team/pager.md')
    expect(answer).not.toContain('summaries/pager.md')
    expect(answer).not.toContain('.overview.md')
    expect(summaries.find((s) => s.startsWith('search: '))).toMatch(/ in 3 files/)
  })

  it('says it searched the person’s files, not the compiled pages beside them', async () => {
    const { answer } = await ask('What is the parking policy for visitors?')
    expect(answer).toContain('in all 3 files')
  })
})
