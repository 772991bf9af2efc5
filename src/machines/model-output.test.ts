import { describe, expect, it } from 'vitest'
import { classifyModelOutput } from './model-output.ts'
import type { AssembledToolCall, FinishReason, ModelResult } from './turn-types.ts'

const call: AssembledToolCall = { index: 0, id: 'c1', name: 'ls', rawArguments: '{}', argumentsJson: '{}', argumentsError: undefined }
const result = (finishReason: FinishReason, toolCalls: AssembledToolCall[] = []): ModelResult => ({
  text: 'text',
  thinking: '',
  toolCalls,
  finishReason,
  rawFinishReason: finishReason,
  usage: undefined,
})

describe('classifyModelOutput', () => {
  it.each([
    ['a provider failure', { ok: false as const, code: 'provider.incomplete', message: 'EOF', partialText: 'par' }, 'incomplete'],
    ['a cut answer (length)', { ok: true as const, result: result('length', [call]) }, 'stopped'],
    ['a filtered answer', { ok: true as const, result: result('content_filter') }, 'stopped'],
    ['tool calls', { ok: true as const, result: result('tool_calls', [call]) }, 'tools'],
    ['tool calls with finish_reason stop', { ok: true as const, result: result('stop', [call]) }, 'tools'],
    ['finish_reason tool_calls without calls', { ok: true as const, result: result('tool_calls') }, 'toolCallsMissing'],
    ['an answer', { ok: true as const, result: result('stop') }, 'answer'],
  ])('%s → %s', (_name, output, kind) => {
    expect(classifyModelOutput(output).kind).toBe(kind)
  })

  it('keeps the partial text of a failure, and none when nothing streamed', () => {
    expect(classifyModelOutput({ ok: false, code: 'provider.http', message: 'HTTP 500', partialText: 'Half an' })).toEqual({
      kind: 'incomplete',
      error: { code: 'provider.http', message: 'HTTP 500', partial: 'Half an' },
    })
    expect(classifyModelOutput({ ok: false, code: 'provider.http', message: 'HTTP 500', partialText: '' })).toEqual({
      kind: 'incomplete',
      error: { code: 'provider.http', message: 'HTTP 500', partial: undefined },
    })
  })
})
