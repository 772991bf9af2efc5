// The built-in local model answers a question about the sample corpus end to end through the
// turn machine, the real tools and the real database, with tool calls and a cited answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { bootstrapDemo } from '../../src/effects/workspace/bootstrap-demo.ts'
import { findUserByLogin } from '../../src/effects/auth/users.ts'
import { makeLocalChatModel } from '../../src/effects/llm/local/index.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { COMPACTION_SUMMARY_PREFIX, estimateMessagesBytes, type ChatMessage, type TurnEmitted } from '../../src/machines/index.ts'
import { DATABASE_KINDS, openTestDatabase, type TestDatabase } from '../support/test-database.ts'

describe.each(DATABASE_KINDS)('local model over the sample corpus (%s)', (kind) => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase(kind)
    const demo = await bootstrapDemo(database.db, { demoPassword: 'demo-password-1', maxFileBytes: 50 * 1024 * 1024 })
    expect(demo.report!.failed).toEqual([])
    expect(demo.report!.added.length).toBeGreaterThanOrEqual(8)
  })
  afterAll(async () => {
    await database?.close()
  })

  it('searches, reads and answers with quoted passages and their URIs', async () => {
    const demo = (await findUserByLogin(database.db, 'demo'))!
    const events: TurnEmitted[] = []
    const turnId = randomUUID()
    const output = await runTurn({
      db: database.db,
      caller: demo,
      model: makeLocalChatModel({ deltaDelayMs: 0 }),
      turnId,
      uri: 'kb://me/samples/',
      question: 'How many tool calls may a single turn make?',
      history: [],
      onEvent: (event) => events.push(event),
      signal: new AbortController().signal,
    })
    expect(output.status).toBe('done')
    const toolStarts = events.filter((e) => e.type === 'tool' && e.phase === 'start').map((e) => (e as { name: string }).name)
    expect(toolStarts[0]).toBe('search')
    expect(toolStarts).toContain('read')
    const toolEnds = events.filter((e) => e.type === 'tool' && e.phase === 'end') as Array<{ ok: boolean }>
    expect(toolEnds.every((e) => e.ok)).toBe(true)
    const answer = events.filter((e) => e.type === 'delta').map((e) => (e as { text: string }).text).join('')
    expect(answer).toMatch(/kb:\/\/users\/demo\/samples\/\S+/)
    expect(answer).toContain('24')
    // Every cited URI really exists and was read in this turn.
    const readUris = new Set(
      output.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).filter((c) => c.function.name === 'read').map((c) => JSON.parse(c.function.arguments).uri as string),
    )
    const cited = [...answer.matchAll(/kb:\/\/users\/demo\/samples\/[^\s)*_`]+/g)].map((m) => m[0])
    expect(cited.length).toBeGreaterThan(0)
    for (const uri of cited) expect(readUris).toContain(uri)
    expect(events.filter((e) => e.type === 'done' || e.type === 'error')).toHaveLength(1)
    expect((await findTurn(database.db, turnId))!.status).toBe('done')
  })

  it('stops when the signal aborts: cancelled, never done, and the history stays valid', async () => {
    const demo = (await findUserByLogin(database.db, 'demo'))!
    const controller = new AbortController()
    const events: TurnEmitted[] = []
    const turnId = randomUUID()
    const output = await runTurn({
      db: database.db,
      caller: demo,
      model: makeLocalChatModel({ deltaDelayMs: 20 }),
      turnId,
      uri: 'kb://me/samples/',
      question: 'What does the operations runbook say about shutdown?',
      history: [],
      onEvent: (event) => {
        events.push(event)
        if (event.type === 'delta') controller.abort('user')
      },
      signal: controller.signal,
    })
    expect(output.status).toBe('cancelled')
    expect(events.filter((e) => e.type === 'done')).toHaveLength(0)
    const firstDelta = (events.find((e) => e.type === 'delta') as { text: string }).text
    expect(events.filter((e) => e.type === 'error')).toEqual([expect.objectContaining({ code: 'cancelled', partial: firstDelta })])
    expect(output.error?.partial).toBe(firstDelta)
    const row = (await findTurn(database.db, turnId))!
    expect(row.status).toBe('cancelled')
    const open = new Set<string>()
    for (const m of output.messages) {
      if (m.role === 'assistant') for (const c of m.tool_calls ?? []) open.add(c.id)
      if (m.role === 'tool') expect(open.delete(m.tool_call_id)).toBe(true)
    }
    expect(open.size).toBe(0)
  })
  // Regression: the machine marked its summarising request with one marker and the local model
  // looked for another, so the "summary" quoted the instruction back. One marker, one predicate.
  it('compacts a long conversation in a small window into a real summary, not the instruction quoted back', async () => {
    const demo = (await findUserByLogin(database.db, 'demo'))!
    const local = makeLocalChatModel({ deltaDelayMs: 0 })
    let history: ReadonlyArray<ChatMessage> = []
    for (const question of ['How many tool calls may a single turn make?', 'What does the operations runbook say about shutdown?']) {
      const earlier = await runTurn({
        db: database.db, caller: demo, model: local, turnId: randomUUID(), uri: 'kb://me/samples/', question, history,
        onEvent: () => {}, signal: new AbortController().signal,
      })
      expect(earlier.status).toBe('done')
      history = earlier.messages
    }
    // A window that holds the fixed part and this turn's work, but not the whole earlier conversation.
    const historyBytes = estimateMessagesBytes(history)
    const small = { ...local, info: { ...local.info, contextWindow: local.info.maxOutputTokens + 1024 + 12_000 + Math.floor(historyBytes / 3) } }
    const events: TurnEmitted[] = []
    const output = await runTurn({
      db: database.db, caller: demo, model: small, turnId: randomUUID(), uri: 'kb://me/samples/',
      question: 'How does the wiki compiler publish the overview?', history,
      onEvent: (event) => events.push(event), signal: new AbortController().signal,
    })
    expect(output.error).toBeUndefined()
    expect(output.status).toBe('done')
    expect(output.counters.compactions).toBeGreaterThanOrEqual(1)
    const summaries = output.messages.filter((m) => m.role === 'user' && m.content.startsWith(COMPACTION_SUMMARY_PREFIX))
    expect(summaries.length).toBeGreaterThanOrEqual(1)
    for (const summary of summaries) {
      const text = summary.content as string
      expect(text).toContain('References (URI — offsets seen):')
      expect(text).toMatch(/kb:\/\/users\/demo\/samples\/\S+/)
      expect(text).not.toContain('Summarise the conversation excerpt')
      expect(text).not.toContain('Here is what the workspace says')
    }
    const contexts = events.filter((e): e is Extract<TurnEmitted, { type: 'context' }> => e.type === 'context')
    expect(contexts.at(-1)!.compactions).toBe(output.counters.compactions)
    expect(contexts.at(-1)!.ratio).toBeLessThan(1)
  })
})
