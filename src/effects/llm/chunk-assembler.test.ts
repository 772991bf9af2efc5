import { describe, expect, test } from 'vitest'
import { planToolCalls } from '../../machines/index.ts'
import { createChunkAssembler, normaliseFinishReason, validateToolArguments } from './chunk-assembler.ts'

const choice = (delta: Record<string, unknown>, finishReason: string | null = null, index = 0) => ({
  choices: [{ index, delta, finish_reason: finishReason }],
})
const toolDelta = (call: Record<string, unknown>) => choice({ tool_calls: [call] })

function assemble(chunks: ReadonlyArray<unknown>) {
  const assembler = createChunkAssembler()
  const outcomes = chunks.map((chunk) => assembler.acceptChunk(chunk))
  return { outcomes, result: assembler.buildResult(), assembler }
}

describe('validateToolArguments', () => {
  test.each([
    ['', '{}'],
    ['   ', '{}'],
    ['{"b":1,"a":[1,2]}', '{"b":1,"a":[1,2]}'],
    [' {\n "query" : "x y" } ', '{"query":"x y"}'],
  ])('%j is valid → %s', (raw, json) => {
    expect(validateToolArguments(raw)).toEqual({ argumentsJson: json, argumentsError: undefined })
  })

  test.each([
    ['[1]', 'arguments must be a JSON object, got an array'],
    ['null', 'arguments must be a JSON object, got null'],
    ['"text"', 'arguments must be a JSON object, got a string'],
    ['42', 'arguments must be a JSON object, got a number'],
  ])('%j is not an object', (raw, error) => {
    expect(validateToolArguments(raw)).toEqual({ argumentsJson: undefined, argumentsError: error })
  })

  test('invalid JSON explains why', () => {
    const { argumentsJson, argumentsError } = validateToolArguments('{"query": ')
    expect(argumentsJson).toBeUndefined()
    expect(argumentsError).toMatch(/^arguments are not valid JSON: /)
  })
})

describe('normaliseFinishReason', () => {
  test.each([
    ['stop', false, 'stop'],
    ['stop', true, 'tool_calls'],
    ['', false, 'stop'],
    ['', true, 'tool_calls'],
    ['tool_calls', true, 'tool_calls'],
    ['function_call', true, 'tool_calls'],
    ['length', false, 'length'],
    ['length', true, 'length'],
    ['content_filter', false, 'content_filter'],
    ['recitation', false, 'other'],
  ] as const)('%j with tool calls=%s → %s', (rawFinishReason, hasToolCalls, expected) => {
    expect(normaliseFinishReason({ rawFinishReason, hasToolCalls })).toBe(expected)
  })
})

describe('createChunkAssembler', () => {
  test('text and reasoning deltas become events in order; reasoning_content wins over reasoning', () => {
    const { outcomes, result } = assemble([
      choice({ reasoning_content: 'R1', reasoning: 'ignored duplicate' }),
      choice({ reasoning: 'R2' }),
      choice({ content: 'T1' }),
      choice({ content: '' }),
      choice({ content: null }),
    ])
    expect(outcomes.flatMap((o) => (o.kind === 'events' ? o.events : []))).toEqual([
      { type: 'thinking', text: 'R1' },
      { type: 'thinking', text: 'R2' },
      { type: 'delta', text: 'T1' },
    ])
    expect(result).toMatchObject({ text: 'T1', thinking: 'R1R2', finishReason: 'stop', rawFinishReason: '' })
  })

  test('an id that arrives after the first delta of an index is attached to it', () => {
    const { result } = assemble([
      toolDelta({ index: 0, function: { name: 'search', arguments: '{"q"' } }),
      toolDelta({ index: 0, id: 'late-id', function: { arguments: ':1}' } }),
    ])
    expect(result.toolCalls).toEqual([
      { index: 0, id: 'late-id', name: 'search', rawArguments: '{"q":1}', argumentsJson: '{"q":1}', argumentsError: undefined },
    ])
  })

  test('an index reused by a different id starts a new call; id-less continuations follow the new one', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'a', function: { name: 'ls', arguments: '{}' } }),
      toolDelta({ index: 0, id: 'b', function: { name: 'read', arguments: '{"uri":' } }),
      toolDelta({ index: 0, function: { arguments: '"kb://me/x"}' } }),
    ])
    expect(result.toolCalls.map((c) => [c.id, c.name, c.argumentsJson])).toEqual([
      ['a', 'ls', '{}'],
      ['b', 'read', '{"uri":"kb://me/x"}'],
    ])
  })

  test('an id seen before under index 0 continues that call when the index is reused (Ollama)', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'a', function: { name: 'search', arguments: '{"query":' } }),
      toolDelta({ index: 0, id: 'b', function: { name: 'ls', arguments: '{}' } }),
      toolDelta({ index: 0, id: 'a', function: { arguments: '"x"}' } }),
    ])
    expect(result.toolCalls.map((c) => [c.index, c.id, c.argumentsJson])).toEqual([
      [0, 'a', '{"query":"x"}'],
      [1, 'b', '{}'],
    ])
  })

  // Regression (issue 33): index 5 carrying call 0's id was appended to call 0, so two calls
  // became one and the duplicate id never reached the turn's validation.
  test('two indexes with one id stay two calls with that id, never merged', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'a', function: { name: 'search', arguments: '{"query":"x"}' } }),
      toolDelta({ index: 1, id: 'b', function: { name: 'ls', arguments: '{}' } }),
      toolDelta({ index: 5, id: 'a', function: { name: 'read', arguments: '{"uri":' } }),
      toolDelta({ index: 5, function: { arguments: '"kb://me/x"}' } }),
      toolDelta({ index: 0, id: 'a', function: { arguments: '' } }),
    ])
    expect(result.toolCalls.map((c) => [c.index, c.id, c.name, c.argumentsJson])).toEqual([
      [0, 'a', 'search', '{"query":"x"}'],
      [1, 'b', 'ls', '{}'],
      [2, 'a', 'read', '{"uri":"kb://me/x"}'],
    ])
  })

  // Regression (issue 33): only the first fragment was kept, so "r" + "ead" called a tool "r".
  test('a name streamed in fragments is joined', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'c1', type: 'function', function: { name: 'r', arguments: '' } }),
      toolDelta({ index: 0, function: { name: 'ea' } }),
      toolDelta({ index: 0, function: { name: 'd', arguments: '{"uri":"kb://me/a"}' } }),
      toolDelta({ index: 1, id: 'c2', function: { name: 'l' } }),
      toolDelta({ index: 1, function: { name: 's', arguments: '{}' } }),
    ])
    expect(result.toolCalls.map((c) => [c.id, c.name, c.argumentsJson])).toEqual([
      ['c1', 'read', '{"uri":"kb://me/a"}'],
      ['c2', 'ls', '{}'],
    ])
  })

  test('a fragment equal to the whole name so far is a repeat (DashScope), also after a join', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'c1', function: { name: 'search', arguments: '{"query":' } }),
      toolDelta({ index: 0, id: '', function: { name: 'search', arguments: '"x"}' } }),
      toolDelta({ index: 0, id: '', function: { name: 'search' } }),
      toolDelta({ index: 1, id: 'c2', function: { name: 're' } }),
      toolDelta({ index: 1, function: { name: 'ad', arguments: '{"uri":"kb://me/a"}' } }),
      toolDelta({ index: 1, function: { name: 'read' } }),
    ])
    expect(result.toolCalls.map((c) => [c.id, c.name, c.argumentsJson])).toEqual([
      ['c1', 'search', '{"query":"x"}'],
      ['c2', 'read', '{"uri":"kb://me/a"}'],
    ])
  })

  test('without index and id, a delta continues the latest call', () => {
    const { result } = assemble([
      toolDelta({ id: 'only', function: { name: 'search', arguments: '{"query"' } }),
      toolDelta({ function: { arguments: ':"y"}' } }),
    ])
    expect(result.toolCalls.map((c) => c.argumentsJson)).toEqual(['{"query":"y"}'])
  })

  test('a stray empty delta does not make a phantom call', () => {
    const { result } = assemble([toolDelta({ index: 0, function: {} }), choice({}, 'stop')])
    expect(result.toolCalls).toEqual([])
    expect(result.finishReason).toBe('stop')
  })

  test('object arguments replace fragments (they are a complete value)', () => {
    const { result } = assemble([
      toolDelta({ index: 0, id: 'o', function: { name: 'read', arguments: '{"partial' } }),
      toolDelta({ index: 0, function: { arguments: { uri: 'kb://me/a', offset: 0 } } }),
    ])
    expect(result.toolCalls[0]?.argumentsJson).toBe('{"uri":"kb://me/a","offset":0}')
  })

  test('only choice 0 is assembled', () => {
    const { result } = assemble([choice({ content: 'zero' }), choice({ content: 'one' }, null, 1)])
    expect(result.text).toBe('zero')
  })

  test('usage from the chunk or from the choice; a later usage wins; usage: null is ignored', () => {
    const { result } = assemble([
      { choices: [{ index: 0, delta: { content: 'x' }, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }] },
      { choices: [], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } },
      { choices: [], usage: null },
    ])
    expect(result.usage).toEqual({ promptTokens: 5, completionTokens: 6, totalTokens: 11 })
  })

  test('error payloads are reported, not assembled', () => {
    const assembler = createChunkAssembler()
    assembler.acceptChunk(choice({ content: 'kept' }))
    expect(assembler.acceptChunk({ error: { code: 'rate_limit', message: 'slow down' } })).toEqual({
      kind: 'provider-error',
      error: { code: 'rate_limit', message: 'slow down' },
    })
    expect(assembler.partialText()).toBe('kept')
  })

  test('a chunk that is not an object is a protocol error', () => {
    expect(createChunkAssembler().acceptChunk([1, 2])).toEqual({
      kind: 'protocol-error',
      message: 'expected a JSON object chunk, got an array',
    })
  })

  test('hasFinishReason turns true with the first non-empty finish_reason', () => {
    const assembler = createChunkAssembler()
    assembler.acceptChunk(choice({ content: 'a' }, ''))
    expect(assembler.hasFinishReason()).toBe(false)
    assembler.acceptChunk(choice({}, 'length'))
    expect(assembler.hasFinishReason()).toBe(true)
  })
})

// What the turn's validation (src/machines/tool-call-validation.ts) makes of assembled calls: the
// assembler must hand every call over as sent, so that validation can refuse it explicitly.
describe('assembled calls through the turn validation', () => {
  const plan = (chunks: ReadonlyArray<unknown>) =>
    planToolCalls({ calls: assemble(chunks).result.toolCalls, toolNames: ['ls', 'read', 'search', 'status'], usedIds: new Set(), step: 2 })

  test('a split name runs as the whole tool, not as an unknown tool', () => {
    const [planned] = plan([
      toolDelta({ index: 0, id: 'c1', function: { name: 'r', arguments: '' } }),
      toolDelta({ index: 0, function: { name: 'ead', arguments: '{"uri":"kb://me/a"}' } }),
    ])
    expect(planned).toMatchObject({ kind: 'run', id: 'c1', name: 'read' })
  })

  test('the second call with one id is not run: a duplicate_id tool error under a fresh id', () => {
    const planned = plan([
      toolDelta({ index: 0, id: 'same', function: { name: 'search', arguments: '{"query":"x"}' } }),
      toolDelta({ index: 1, id: 'same', function: { name: 'read', arguments: '{"uri":"kb://me/a"}' } }),
    ])
    expect(planned.map((call) => [call.kind, call.id, call.name, call.kind === 'reject' ? call.reason : 'ran'])).toEqual([
      ['run', 'same', 'search', 'ran'],
      ['reject', 'kacall_2_1', 'read', 'duplicate_id'],
    ])
  })
})
