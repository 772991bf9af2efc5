import { describe, expect, it } from 'vitest'
import { closeUnansweredToolCalls, CUT_ANSWER_MARKS, historyForNextTurn, keepStoppedAnswer, markCutAnswer, STOPPED_ANSWER_MARKS, toolPairingProblems } from './turn-history.ts'
import type { ChatMessage } from './turn-types.ts'

const calls: ChatMessage = {
  role: 'assistant',
  content: null,
  tool_calls: ['a', 'b', 'c'].map((id) => ({ id, type: 'function' as const, function: { name: 'ls', arguments: '{}' } })),
}

describe('closeUnansweredToolCalls', () => {
  it('answers every call that has no result, after the results that exist', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'q' }, calls, { role: 'tool', tool_call_id: 'a', content: 'ok' }]
    expect(closeUnansweredToolCalls({ messages, content: '{"error":"cancelled"}' })).toEqual([
      ...messages,
      { role: 'tool', tool_call_id: 'b', content: '{"error":"cancelled"}' },
      { role: 'tool', tool_call_id: 'c', content: '{"error":"cancelled"}' },
    ])
  })

  it('leaves a valid history unchanged', () => {
    const messages: ChatMessage[] = [calls, ...['a', 'b', 'c'].map((id) => ({ role: 'tool' as const, tool_call_id: id, content: 'ok' })), { role: 'assistant', content: 'done' }]
    expect(closeUnansweredToolCalls({ messages, content: 'x' })).toEqual(messages)
  })
})

describe('historyForNextTurn', () => {
  it('drops system messages only', () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 's' }, { role: 'user', content: 'q' }, { role: 'system', content: 'catalog' }, { role: 'assistant', content: 'a' }]
    expect(historyForNextTurn(messages)).toEqual([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }])
  })
})

describe('toolPairingProblems', () => {
  const result = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' })

  it('accepts a history where every call is answered right after it', () => {
    expect(toolPairingProblems([{ role: 'user', content: 'q' }, calls, result('a'), result('b'), result('c'), { role: 'assistant', content: 'x' }])).toEqual([])
  })

  it('reports an orphan tool message', () => {
    expect(toolPairingProblems([{ role: 'user', content: 'q' }, result('a')])).toHaveLength(1)
  })

  it('reports a call without a result, at the end or before the next message', () => {
    expect(toolPairingProblems([calls, result('a'), result('b')])).toEqual(['tool call "c" has no result before message 3'])
    expect(toolPairingProblems([calls, result('a'), result('b'), result('c'), calls])).toHaveLength(3)
  })

  it('reports a result for a call of an earlier assistant message', () => {
    expect(toolPairingProblems([calls, result('a'), result('b'), result('c'), { role: 'user', content: 'q' }, result('a')])).toHaveLength(1)
  })
})

describe('markCutAnswer', () => {
  const question: ChatMessage = { role: 'user', content: 'q' }

  it.each(['length', 'content_filter'] as const)('marks the last answer cut by %s as incomplete', (finishReason) => {
    const messages: ChatMessage[] = [question, { role: 'assistant', content: 'The answer is' }]
    expect(markCutAnswer({ messages, finishReason })).toEqual([
      question,
      { role: 'assistant', content: `The answer is\n\n${CUT_ANSWER_MARKS[finishReason]}` },
    ])
  })

  it('gives an empty cut answer the mark alone', () => {
    expect(markCutAnswer({ messages: [question, { role: 'assistant', content: null }], finishReason: 'length' }).at(-1)).toEqual({
      role: 'assistant',
      content: CUT_ANSWER_MARKS.length,
    })
  })

  it.each(['stop', undefined] as const)('leaves an answer that ended with %s as it is', (finishReason) => {
    const messages: ChatMessage[] = [question, { role: 'assistant', content: 'done' }]
    expect(markCutAnswer({ messages, finishReason })).toEqual(messages)
  })
})

describe('keepStoppedAnswer', () => {
  const question: ChatMessage = { role: 'user', content: 'q' }
  it.each(Object.entries(STOPPED_ANSWER_MARKS) as Array<[keyof typeof STOPPED_ANSWER_MARKS, string]>)('keeps the text a %s stop cut, with its mark', (reason, mark) => {
    expect(keepStoppedAnswer({ messages: [question], partial: 'Half of it', reason })).toEqual([question, { role: 'assistant', content: `Half of it\n\n${mark}` }])
  })

  it.each([undefined, ''])('adds nothing when no text was streamed (%j)', (partial) => {
    expect(keepStoppedAnswer({ messages: [question], partial, reason: 'user' })).toEqual([question])
  })
})
