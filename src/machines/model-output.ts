// One classification of a model step's outcome, on which the turn decides its next state (a guard
// per kind on `callModel`'s done event — openai-agents-js `NextStep`), instead of re-checking the
// output in every branch.
import type { CallModelOutput, TurnError } from './turn-contract.ts'
import type { ModelResult } from './turn-types.ts'

export type ModelOutputClass =
  /** The provider failed or the stream was incomplete: the turn fails with its code and partial text. */
  | { readonly kind: 'incomplete'; readonly error: TurnError }
  /** Cut by `length` or `content_filter`: the turn ends `done` with that finish reason; no tool runs. */
  | { readonly kind: 'stopped'; readonly result: ModelResult }
  /** The model asked for tools. */
  | { readonly kind: 'tools'; readonly result: ModelResult }
  /** `finish_reason: "tool_calls"` without a single tool call received. */
  | { readonly kind: 'toolCallsMissing'; readonly result: ModelResult }
  /** A final answer. */
  | { readonly kind: 'answer'; readonly result: ModelResult }

export type ModelOutputKind = ModelOutputClass['kind']

export function classifyModelOutput(output: CallModelOutput): ModelOutputClass {
  if (!output.ok) {
    return {
      kind: 'incomplete',
      error: { code: output.code, message: output.message, partial: output.partialText === '' ? undefined : output.partialText },
    }
  }
  const { result } = output
  if (result.finishReason === 'length' || result.finishReason === 'content_filter') return { kind: 'stopped', result }
  if (result.toolCalls.length > 0) return { kind: 'tools', result }
  if (result.finishReason === 'tool_calls') return { kind: 'toolCallsMissing', result }
  return { kind: 'answer', result }
}

/** Each step's output classified once, for the turn's guards and its action alike. */
const classified = new WeakMap<CallModelOutput, ModelOutputClass>()
export function classifyOnce(output: CallModelOutput): ModelOutputClass {
  let known = classified.get(output)
  if (known === undefined) classified.set(output, (known = classifyModelOutput(output)))
  return known
}

/** Whether a model step's output is of `kind`. */
export const outputIs = (output: CallModelOutput, kind: ModelOutputKind): boolean => classifyOnce(output).kind === kind
