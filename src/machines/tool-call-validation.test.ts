import { describe, expect, it } from 'vitest'
import {
  collectToolCallIds,
  isValidToolCallId,
  planToolCalls,
  type PlannedToolCall,
  synthesizeToolCallId,
  toAssistantToolCalls,
  TOOL_CALL_ID_MAX_LENGTH,
  toolErrorContent,
} from './tool-call-validation.ts'
import type { AssembledToolCall } from './turn-types.ts'

function call({ id, name = 'read', args = { uri: 'kb://users/a/x.md' }, raw, error }: {
  id: string
  name?: string
  args?: Record<string, unknown>
  raw?: string
  error?: string
}): AssembledToolCall {
  if (raw !== undefined || error !== undefined) {
    return { index: 0, id, name, rawArguments: raw ?? '', argumentsJson: undefined, argumentsError: error ?? 'invalid JSON' }
  }
  const json = JSON.stringify(args)
  return { index: 0, id, name, rawArguments: json, argumentsJson: json, argumentsError: undefined }
}

const toolNames = ['ls', 'read', 'search', 'status']

function plan(calls: AssembledToolCall[], usedIds: string[] = []): PlannedToolCall[] {
  return planToolCalls({ calls, toolNames, usedIds: new Set(usedIds), step: 3 })
}

function rejected(planned: PlannedToolCall | undefined) {
  if (planned?.kind !== 'reject') throw new Error(`expected a rejected call, got ${JSON.stringify(planned)}`)
  return planned
}

describe('isValidToolCallId', () => {
  it.each([
    ['call_abc-123', true],
    ['toolu_01:x.y', true],
    ['x'.repeat(TOOL_CALL_ID_MAX_LENGTH), true],
    ['', false],
    ['x'.repeat(TOOL_CALL_ID_MAX_LENGTH + 1), false],
    ['call 1', false],
    ['call/1', false],
    ['appel_é', false],
  ])('%j → %s', (id, valid) => {
    expect(isValidToolCallId(id)).toBe(valid)
  })
})

describe('planToolCalls', () => {
  it('runs a valid call with its parsed arguments', () => {
    expect(plan([call({ id: 'c1' })])).toEqual([
      { kind: 'run', id: 'c1', name: 'read', arguments: { uri: 'kb://users/a/x.md' }, argumentsJson: '{"uri":"kb://users/a/x.md"}' },
    ])
  })

  it.each([
    ['empty', ''],
    ['too long', 'c'.repeat(TOOL_CALL_ID_MAX_LENGTH + 1)],
    ['bad characters', 'call\n1'],
  ])('rejects an invalid id (%s) under a fresh synthesised id', (_, id) => {
    const [planned] = plan([call({ id })], ['kacall_3_0'])
    const rejection = rejected(planned)
    expect(rejection.reason).toBe('invalid_id')
    expect(rejection.id).toBe('kacall_3_0_1')
    expect(rejection.receivedId).toBe(id)
    expect(rejection.message).toContain('was not run')
  })

  it('rejects the second use of an id within one step, keeping the first', () => {
    const [first, second] = plan([call({ id: 'c1' }), call({ id: 'c1', args: { uri: 'kb://users/a/y.md' } })])
    expect(first?.kind).toBe('run')
    const duplicate = rejected(second)
    expect(duplicate.reason).toBe('duplicate_id')
    expect(duplicate.id).not.toBe('c1')
  })

  it('rejects an id already used earlier in the conversation', () => {
    const [planned] = plan([call({ id: 'c1' })], ['c1'])
    expect(rejected(planned).reason).toBe('duplicate_id')
    expect(rejected(planned).id).not.toBe('c1')
  })

  it('rejects an unknown tool name, naming the tools that exist', () => {
    const [planned] = plan([call({ id: 'c1', name: 'shell' })])
    expect(rejected(planned).reason).toBe('unknown_tool')
    expect(rejected(planned).id).toBe('c1')
    expect(rejected(planned).message).toContain('available tools: ls, read, search, status')
  })

  it('says no tools exist when the model has none', () => {
    const [planned] = planToolCalls({ calls: [call({ id: 'c1' })], toolNames: [], usedIds: new Set(), step: 1 })
    expect(rejected(planned).message).toContain('no tools are available')
  })

  it.each([
    ['invalid JSON reported by the stream', call({ id: 'c1', raw: '{"uri": ', error: 'Unexpected end of JSON input' })],
    ['arguments that are not an object', { ...call({ id: 'c1' }), argumentsJson: '[1,2]' }],
    ['arguments that do not parse', { ...call({ id: 'c1' }), argumentsJson: '{nope' }],
    ['no arguments', { ...call({ id: 'c1' }), argumentsJson: undefined }],
  ])('rejects %s, keeping the history entry valid JSON', (_, assembled) => {
    const [planned] = plan([assembled])
    const rejection = rejected(planned)
    expect(rejection.reason).toBe('invalid_arguments')
    expect(rejection.argumentsJson).toBe('{}')
    expect(rejection.shownArguments).toBe(assembled.rawArguments)
  })

  it('never synthesises an id another call of the step uses', () => {
    const planned = plan([call({ id: '' }), call({ id: 'kacall_3_0' })])
    const ids = planned.map((p) => p.id)
    expect(new Set(ids).size).toBe(2)
    expect(planned[1]?.kind).toBe('run')
  })

  it('gives every call of a step a distinct id', () => {
    const planned = plan([call({ id: 'a' }), call({ id: 'a' }), call({ id: '' }), call({ id: '' }), call({ id: 'b' })], ['b'])
    expect(new Set(planned.map((p) => p.id)).size).toBe(5)
  })
})

describe('history helpers', () => {
  it('puts the ids and valid arguments of planned calls into the assistant tool_calls', () => {
    const planned = plan([call({ id: 'c1' }), call({ id: 'c1', name: 'nope' })])
    expect(toAssistantToolCalls(planned)).toEqual([
      { id: 'c1', type: 'function', function: { name: 'read', arguments: '{"uri":"kb://users/a/x.md"}' } },
      { id: planned[1]!.id, type: 'function', function: { name: 'nope', arguments: '{"uri":"kb://users/a/x.md"}' } },
    ])
  })

  it('writes tool errors as {"error": …}', () => {
    expect(JSON.parse(toolErrorContent('cancelled'))).toEqual({ error: 'cancelled' })
  })

  it('collects the tool-call ids of a conversation', () => {
    const ids = collectToolCallIds([
      { role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'x', content: '{}' },
      { role: 'tool', tool_call_id: 'orphan', content: '{}' },
    ])
    expect([...ids].sort()).toEqual(['orphan', 'x'])
  })

  it('synthesises ids that are valid and not taken', () => {
    const id = synthesizeToolCallId({ step: 2, index: 1, taken: new Set(['kacall_2_1', 'kacall_2_1_1']) })
    expect(id).toBe('kacall_2_1_2')
    expect(isValidToolCallId(id)).toBe(true)
  })
})
