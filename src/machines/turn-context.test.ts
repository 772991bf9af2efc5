import { describe, expect, it } from 'vitest'
import { renderContextBlock } from './context-blocks.ts'
import {
  acceptModelResult,
  acceptPreStep,
  addUsage,
  answerRejectedCall,
  boundToolOutput,
  buildTurnOutput,
  contextReport,
  fitToolOutput,
  initialTurnContext,
  machineErrorMessage,
  measureContext,
  preStepInput,
  type TurnContext,
} from './turn-context.ts'
import type { ChatMessage, ModelResult } from './turn-types.ts'

const base = (overrides: Partial<TurnContext> = {}): TurnContext => ({
  ...initialTurnContext({
    turnId: 't',
    uri: 'kb://users/a/',
    question: 'q',
    history: [],
    model: { contextWindow: 10_000, maxOutputTokens: 1_000, supportsNativeToolCalling: true },
  }),
  ...overrides,
})

const result = (overrides: Partial<ModelResult> = {}): ModelResult => ({
  text: 'answer',
  thinking: '',
  toolCalls: [],
  finishReason: 'stop',
  rawFinishReason: 'stop',
  usage: undefined,
  ...overrides,
})

describe('boundToolOutput', () => {
  it('passes output at the limit and turns one code point more into an explicit tool error', () => {
    const ok = { ok: true, content: '😀'.repeat(10), summary: 's' }
    expect(boundToolOutput({ output: ok, maxChars: 10 })).toBe(ok)
    const over = boundToolOutput({ output: { ...ok, content: '😀'.repeat(11) }, maxChars: 10 })
    expect(over.ok).toBe(false)
    expect(JSON.parse(over.content).error).toContain('11 characters, the limit is 10')
  })
})

describe('fitToolOutput', () => {
  // Input limit 10,000 − 1,000 − 1,024 = 7,976 bytes. Earlier history (compactable) is big; the
  // question and the current step's call are what no compaction removes.
  const question: ChatMessage = { role: 'user', content: 'q' }
  const call: ChatMessage = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }] }
  const history: ChatMessage[] = [
    { role: 'user', content: 'old question' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'h1', type: 'function', function: { name: 'read', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'h1', content: 'e'.repeat(5_000) },
  ]
  const context = base({ messages: [{ role: 'system', content: 'sys' }, ...history, question, call], questionMessage: question })
  const output = (chars: number) => ({ ok: true, content: 'x'.repeat(chars), summary: 'page' })

  it('keeps a result that is over the limit now but fits once the earlier history is compacted', () => {
    const kept = output(4_000)
    expect(measureContext({ ...context, messages: [...context.messages, { role: 'tool', tool_call_id: 'c1', content: kept.content }] }).contextUsed).toBeGreaterThan(7_976)
    expect(fitToolOutput(context, 'c1', kept)).toBe(kept)
  })

  it('turns a result that cannot fit beside the question even with everything compacted into a tool error with the room', () => {
    const refused = fitToolOutput(context, 'c1', output(7_900))
    expect(refused.ok).toBe(false)
    expect(JSON.parse(refused.content).error).toMatch(/^tool output too large for the context left \(\d+ bytes as the model counts input; \d+ bytes of room beside the system prompt, the question and this step's other results\)/)
    expect(refused.summary).toMatch(/^output too large for the context left/)
  })
})

describe('pre-step', () => {
  it('gives the hook the step about to run and the blocks placed now', () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 'sys' }, renderContextBlock({ source: 'c', content: 'x' }), { role: 'user', content: 'q' }]
    const input = preStepInput(base({ messages, counters: { modelSteps: 2, modelCalls: 3, toolCalls: 1, compactions: 1 } }))
    expect(input.step).toBe(3)
    expect(input.visibleBlocks).toEqual([{ source: 'c', content: 'x' }])
  })

  it('places blocks and turns a refused source and the hook warnings into warnings', () => {
    const context = base({ messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'q' }] })
    const accepted = acceptPreStep(context, { blocks: [{ source: 'ok', content: 'A' }, { source: 'no good', content: 'B' }], warnings: ['stale'] })
    expect(accepted.messages).toHaveLength(3)
    expect(accepted.warnings).toHaveLength(2)
    expect(accepted.warnings[1]).toBe('stale')
    expect(acceptPreStep(context, undefined)).toEqual({ messages: context.messages, warnings: [] })
  })
})

describe('usage and context', () => {
  it('adds usage fields present on either side and keeps absent ones absent', () => {
    expect(addUsage({ promptTokens: 3 }, { promptTokens: 4, completionTokens: 2 })).toEqual({ promptTokens: 7, completionTokens: 2, totalTokens: undefined })
    expect(addUsage({ promptTokens: 3 }, undefined)).toEqual({ promptTokens: 3 })
  })

  it('measures the input and plans a compaction only when over the limit', () => {
    const small = base({ messages: [{ role: 'user', content: 'q' }] })
    expect(measureContext(small).compactionPlan).toBeUndefined()
    const history: ChatMessage[] = Array.from({ length: 10 }, (_, i): ChatMessage[] => [
      { role: 'user', content: `question ${i} ${'x'.repeat(900)}` },
      { role: 'assistant', content: `answer ${i}` },
    ]).flat()
    const question: ChatMessage = { role: 'user', content: 'q' }
    const big = base({ messages: [{ role: 'system', content: 'sys' }, ...history, question], questionMessage: question })
    const measured = measureContext(big)
    expect(measured.contextUsed).toBeGreaterThan(10_000 - 1_000 - 1_024)
    expect(measured.compactionPlan?.kind).toBe('batch')
  })

  it('reports the ratio from the measured before and after', () => {
    const report = contextReport(base({ contextUsed: 500, lastCompaction: { before: 1000, after: 400 } }))
    expect(report).toMatchObject({ used: 500, limit: 10_000 - 1_000 - 1_024, before: 1000, after: 400, ratio: 0.4 })
  })
})

describe('model results and tool calls', () => {
  it('an answer goes into the history with its finish reason', () => {
    const accepted = acceptModelResult(base({ messages: [{ role: 'user', content: 'q' }] }), result({ finishReason: 'length' }), false)
    expect(accepted.finishReason).toBe('length')
    expect(accepted.messages?.at(-1)).toEqual({ role: 'assistant', content: 'answer' })
  })

  it('tool calls are planned: an unknown tool is rejected and answered with a tool error', () => {
    const context = base({ messages: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', function: { name: 'ls', description: '', parameters: {} } }] })
    const call = { index: 0, id: 'c1', name: 'rm', rawArguments: '{}', argumentsJson: '{}', argumentsError: undefined }
    const planned = { ...context, ...acceptModelResult(context, result({ text: '', toolCalls: [call], finishReason: 'tool_calls' }), true) }
    expect(planned.plannedCalls[0]?.kind).toBe('reject')
    const answered = answerRejectedCall(planned)
    expect(answered.answeredCalls).toBe(1)
    expect(answered.messages?.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1' })
  })
})

describe('errors and output', () => {
  it('says which limit was reached with the numbers', () => {
    const context = base({ counters: { modelSteps: 12, modelCalls: 12, toolCalls: 3, compactions: 0 } })
    expect(machineErrorMessage('limit.model_steps', context)).toBe('model step limit reached: 12 of 12 steps used and the model needs another step')
  })

  it('an output never carries system messages, and a turn that never prepared carries the question', () => {
    const output = buildTurnOutput(base())
    expect(output.status).toBe('failed')
    expect(output.messages).toEqual([{ role: 'user', content: 'q' }])
    const prepared = buildTurnOutput(base({ status: 'done', messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] }))
    expect(prepared.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
  })
})
