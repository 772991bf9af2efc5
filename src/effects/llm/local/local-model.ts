// The built-in, honestly labelled local model (SPEC §2): no network, no key, no LLM. It plans
// tool calls deterministically (search → read → answer quoting passages with their URIs) and
// writes extractive summaries. It implements the same `ChatModel` as a remote model, streams
// its answers as several `delta` events, and goes through the same turn machine.
import * as Effect from 'effect/Effect'
import { isCompactionRequest } from '../../../machines/compaction-plan.ts'
import { summariseForCompaction } from './compaction-summary.ts'
import { planLocalStep, type LocalStep } from './planner.ts'
import { validateToolArguments } from '../chunk-assembler.ts'
import { LOCAL_MODEL_ID } from '../model-config.ts'
import type { AssembledToolCall, ChatMessage, ChatModel, ModelInfo, ModelRequest, ModelResult, ModelStreamEvent } from '../model.ts'


export const LOCAL_MODEL_INFO: ModelInfo = {
  id: LOCAL_MODEL_ID,
  name: 'Local extractive (no LLM)',
  profile: 'builtin',
  contextWindow: 32_768,
  maxOutputTokens: 2_048,
  supportsNativeToolCalling: true,
}

/** Pause between streamed pieces, so streaming is visible in the browser. */
export const DEFAULT_LOCAL_DELTA_DELAY_MS = 10
const DELTA_MAX_CHARS = 48

export interface LocalChatModelOptions {
  /** 0 in tests. Default 10 ms. */
  readonly deltaDelayMs?: number | undefined
}

export function makeLocalChatModel(options: LocalChatModelOptions = {}): ChatModel {
  const deltaDelayMs = options.deltaDelayMs ?? DEFAULT_LOCAL_DELTA_DELAY_MS
  const stream = (request: ModelRequest): Effect.Effect<ModelResult> =>
    Effect.suspend(() => {
      const step = decideLocalStep(request)
      const events = streamEventsOf(step)
      const emitAll = Effect.forEach(
        events,
        (event, position) =>
          Effect.andThen(
            position > 0 && deltaDelayMs > 0 ? Effect.sleep(deltaDelayMs) : Effect.void,
            Effect.sync(() => request.onEvent?.(event)),
          ),
        { discard: true },
      )
      return Effect.as(emitAll, resultOf({ step, request }))
    })
  return { info: LOCAL_MODEL_INFO, stream }
}

function decideLocalStep(request: ModelRequest): LocalStep {
  if (isCompactionRequest(request.messages)) {
    return { kind: 'answer', thinking: 'Writing an extractive compaction summary.', text: summariseForCompaction(request.messages) }
  }
  return planLocalStep({ messages: request.messages, tools: request.tools })
}

function streamEventsOf(step: LocalStep): ModelStreamEvent[] {
  const thinking: ModelStreamEvent[] = step.thinking === '' ? [] : [{ type: 'thinking', text: step.thinking }]
  if (step.kind === 'tool_calls') return thinking
  return [...thinking, ...splitIntoDeltas(step.text).map((text): ModelStreamEvent => ({ type: 'delta', text }))]
}

/** Line by line, long lines in pieces of at most DELTA_MAX_CHARS code points. */
export function splitIntoDeltas(text: string): string[] {
  const pieces: string[] = []
  for (const line of text.split(/(?<=\n)/u)) {
    const chars = Array.from(line)
    for (let i = 0; i < chars.length; i += DELTA_MAX_CHARS) pieces.push(chars.slice(i, i + DELTA_MAX_CHARS).join(''))
  }
  return pieces
}

/**
 * Tool-call ids are `local_<step>_<index>`, unique across the conversation: the step is one more
 * than any step number still in the history (counting assistant messages is not enough once
 * compaction has replaced some of them — an id would come back and be refused as a duplicate).
 */
export function nextStepNumber(messages: ReadonlyArray<ChatMessage>): number {
  let highest = -1
  for (const message of messages) {
    if (message.role !== 'assistant') continue
    for (const call of message.tool_calls ?? []) {
      const step = /^local_(\d+)_\d+$/u.exec(call.id)?.[1]
      if (step !== undefined) highest = Math.max(highest, Number(step))
    }
  }
  return Math.max(highest + 1, messages.filter((m) => m.role === 'assistant').length)
}

function resultOf({ step, request }: { step: LocalStep; request: ModelRequest }): ModelResult {
  if (step.kind === 'answer') {
    return { text: step.text, thinking: step.thinking, toolCalls: [], finishReason: 'stop', rawFinishReason: 'stop', usage: undefined }
  }
  const stepNumber = nextStepNumber(request.messages)
  const toolCalls = step.calls.map((call, index): AssembledToolCall => {
    const rawArguments = JSON.stringify(call.arguments)
    return { index, id: `local_${stepNumber}_${index}`, name: call.name, rawArguments, ...validateToolArguments(rawArguments) }
  })
  return { text: '', thinking: step.thinking, toolCalls, finishReason: 'tool_calls', rawFinishReason: 'tool_calls', usage: undefined }
}
