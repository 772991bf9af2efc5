import { describe, expect, it } from 'vitest'
import {
  applyCompactionSummary,
  buildSummaryMessage,
  collectKbUris,
  COMPACTION_INSTRUCTION,
  compactionCallBudget,
  COMPACTION_MARKER,
  COMPACTION_SUMMARY_PREFIX,
  ensureUrisKept,
  findQuestionIndex,
  groupCompactionUnits,
  isCompactionSummary,
  pickMessages,
  planCompactionBatch,
  renderCompactionTranscript,
} from './compaction-plan.ts'
import { estimateMessagesBytes } from './context-accounting.ts'
import { toolPairingProblems } from './turn-history.ts'
import type { ChatMessage } from './turn-types.ts'

const system: ChatMessage = { role: 'system', content: 'You are KnowAgent.' }

function exchange(id: string, uri: string, body = 'x'.repeat(200)): ChatMessage[] {
  return [
    { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: JSON.stringify({ uri }) } }] },
    { role: 'tool', tool_call_id: id, content: JSON.stringify({ uri, text: body }) },
  ]
}

const question: ChatMessage = { role: 'user', content: 'What does kb://users/a/plan.md decide?' }

const conversation: ChatMessage[] = [
  system,
  { role: 'user', content: 'earlier question' },
  ...exchange('h1', 'kb://users/a/old.md'),
  { role: 'assistant', content: 'earlier answer from kb://users/a/old.md' },
  question,
  ...exchange('t1', 'kb://users/a/one.md'),
  ...exchange('t2', 'kb://users/a/two.md'),
]

function assertPairing(messages: ReadonlyArray<ChatMessage>) {
  expect(toolPairingProblems(messages)).toEqual([])
}

describe('COMPACTION_INSTRUCTION', () => {
  it('carries the marker the local model recognises', () => {
    expect(COMPACTION_MARKER).toBe('[knowagent:compaction]')
    expect(COMPACTION_INSTRUCTION).toContain('[knowagent:compaction]')
  })

  it('asks to keep URIs, offsets, decisions and open uncertainties', () => {
    for (const word of ['kb://', 'offsets', 'decision', 'uncertaint']) expect(COMPACTION_INSTRUCTION).toContain(word)
  })
})

describe('findQuestionIndex', () => {
  it('finds the question by reference, then by content', () => {
    expect(findQuestionIndex({ messages: conversation, question })).toBe(5)
    expect(findQuestionIndex({ messages: conversation, question: { ...question } })).toBe(5)
    expect(findQuestionIndex({ messages: [system], question })).toBe(-1)
  })
})

describe('groupCompactionUnits', () => {
  it('keeps the system prompt and the question out, and a tool call with its results together', () => {
    const units = groupCompactionUnits({ messages: conversation, questionIndex: 5 })
    expect(units.map((u) => [u.indices, u.region, u.isToolExchange])).toEqual([
      [[1], 'history', false],
      [[2, 3], 'history', true],
      [[4], 'history', false],
      [[6, 7], 'turn', true],
      [[8, 9], 'turn', true],
    ])
    expect(units[1]!.bytes).toBe(estimateMessagesBytes(conversation.slice(2, 4)))
  })

  it('never makes a unit of a tool call whose results are missing', () => {
    const incomplete: ChatMessage[] = [
      system,
      question,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'ls', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'ls', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: '{}' },
    ]
    expect(groupCompactionUnits({ messages: incomplete, questionIndex: 1 })).toEqual([])
  })
})

describe('previous summaries', () => {
  it('join the unit after them, skipping kept messages, so a batch always brings new material', () => {
    const summary = buildSummaryMessage('earlier work on kb://users/a/zero.md')
    const messages: ChatMessage[] = [
      system,
      question,
      summary,
      { role: 'system', content: 'catalog' },
      ...exchange('t1', 'kb://users/a/one.md'),
      ...exchange('t2', 'kb://users/a/two.md'),
    ]
    const units = groupCompactionUnits({ messages, questionIndex: 1 })
    expect(units.map((u) => u.indices)).toEqual([[2, 4, 5], [6, 7]])
    expect(isCompactionSummary(summary)).toBe(true)
    expect(planCompactionBatch({ messages, questionIndex: 1, limit: 10, used: 1_000 })).toMatchObject({ indices: [2, 4, 5] })
  })

  it('stay with the protected latest exchange when nothing else follows them', () => {
    const messages = [system, question, buildSummaryMessage('s'), ...exchange('t1', 'kb://users/a/one.md')]
    expect(planCompactionBatch({ messages, questionIndex: 1, limit: 100_000, used: 200_000 })).toEqual({ kind: 'none' })
  })
})

describe('planCompactionBatch', () => {
  const bytesOf = (indices: number[]) => estimateMessagesBytes(indices.map((i) => conversation[i]!))
  const unitBytes = groupCompactionUnits({ messages: conversation, questionIndex: 5 }).map((unit) => unit.bytes)

  it('takes the oldest history first and does not cross the question', () => {
    const plan = planCompactionBatch({ messages: conversation, questionIndex: 5, limit: 100_000, used: 200_000 })
    expect(plan).toEqual({ kind: 'batch', indices: [1, 2, 3, 4], bytes: bytesOf([1, 2, 3, 4]) })
  })

  it('stops once the batch covers the overflow plus a quarter of the limit', () => {
    const limit = 4_000
    const used = limit - Math.floor(limit / 4) + unitBytes[0]! + 1
    expect(planCompactionBatch({ messages: conversation, questionIndex: 5, limit, used })).toMatchObject({ indices: [1, 2, 3] })
    expect(planCompactionBatch({ messages: conversation, questionIndex: 5, limit, used: used - 1 })).toMatchObject({ indices: [1] })
  })

  it('never takes more than one summarising call can hold, but always one unit', () => {
    const budget = unitBytes[0]! + unitBytes[1]!
    const limit = budget + compactionCallBudgetOverhead()
    expect(compactionCallBudget(limit)).toBe(budget)
    expect(planCompactionBatch({ messages: conversation, questionIndex: 5, limit, used: 1_000_000 })).toMatchObject({ indices: [1, 2, 3] })
    expect(planCompactionBatch({ messages: conversation, questionIndex: 5, limit: 10, used: 1_000_000 })).toMatchObject({ indices: [1] })
  })

  it('compacts completed exchanges of the turn but keeps the latest one', () => {
    const turnOnly = [system, question, ...exchange('t1', 'kb://users/a/one.md'), ...exchange('t2', 'kb://users/a/two.md')]
    expect(planCompactionBatch({ messages: turnOnly, questionIndex: 1, limit: 100_000, used: 200_000 })).toMatchObject({ indices: [2, 3] })
    const latestOnly = [system, question, ...exchange('t1', 'kb://users/a/one.md')]
    expect(planCompactionBatch({ messages: latestOnly, questionIndex: 1, limit: 100_000, used: 200_000 })).toEqual({ kind: 'none' })
  })
})

describe('applying a summary', () => {
  it('replaces the batch where it was and keeps pairing valid', () => {
    const plan = planCompactionBatch({ messages: conversation, questionIndex: 5, limit: 100_000, used: 200_000 })
    if (plan.kind !== 'batch') throw new Error('expected a batch')
    const summaryMessage = buildSummaryMessage('earlier: read kb://users/a/old.md')
    const compacted = applyCompactionSummary({ messages: conversation, indices: plan.indices, summaryMessage })
    expect(compacted).toEqual([system, summaryMessage, question, ...conversation.slice(6)])
    assertPairing(compacted)
    expect(summaryMessage).toMatchObject({ role: 'user' })
    expect(summaryMessage.content.startsWith(COMPACTION_SUMMARY_PREFIX)).toBe(true)
  })
})

describe('URIs survive compaction', () => {
  const batch = pickMessages({ messages: conversation, indices: [2, 3, 4] })

  it('collects every kb:// URI from contents and call arguments', () => {
    expect(collectKbUris(batch)).toEqual(['kb://users/a/old.md'])
    expect(collectKbUris([{ role: 'user', content: 'see kb://users/a/x.md, and (kb://users/a/dir/).' }])).toEqual([
      'kb://users/a/x.md',
      'kb://users/a/dir/',
    ])
  })

  it('appends the URIs the summariser dropped', () => {
    const summary = ensureUrisKept({ batch, summary: 'The user asked about an old plan.' })
    expect(summary).toContain('kb://users/a/old.md')
    expect(ensureUrisKept({ batch, summary: 'Read kb://users/a/old.md.' })).toBe('Read kb://users/a/old.md.')
  })
})

describe('renderCompactionTranscript', () => {
  it('renders calls, results and text', () => {
    const text = renderCompactionTranscript(conversation.slice(1, 5))
    expect(text).toContain('[user]\nearlier question')
    expect(text).toContain('[assistant called read {"uri":"kb://users/a/old.md"} as h1]')
    expect(text).toContain('[tool result h1]')
    expect(text).toContain('[assistant]\nearlier answer')
  })
})

function compactionCallBudgetOverhead(): number {
  return estimateMessagesBytes([{ role: 'system', content: COMPACTION_INSTRUCTION }])
}
