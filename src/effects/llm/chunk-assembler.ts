// Assembles OpenAI-compatible `chat.completion.chunk` objects into a `ModelResult`.
// Pure: no I/O, no clock. Provider quirks handled here (each has a transcript in
// tests/fixtures/transcripts/):
// - reasoning as `reasoning_content` (DeepSeek, DashScope) or `reasoning` (OpenRouter, vLLM, Ollama)
// - tool calls keyed by `index`, falling back to `id` when `index` is missing (Gemini) or reused
//   by a different id (Gemini, Ollama send every call as index 0); an id that already belongs to
//   a call under another index is a second call with a duplicate id, kept apart (the turn refuses
//   it explicitly, see src/machines/tool-call-validation.ts), never merged into the first
// - names streamed in fragments are joined; a fragment equal to the whole name so far is a repeat
//   (DashScope repeats the whole name in later deltas)
// - `id` / `name` only in the first delta, or repeated as "" later (DashScope)
// - empty `function: {}` deltas, whole calls in one chunk, `arguments` as an object (Ollama)
// - chunks with `choices: []` (Azure content-filter results first, usage-only chunks last)
// - `finish_reason: "stop"` although tool calls were sent (Gemini) → tool_calls
// - error payloads in the stream (see provider-error-payload.ts)
// Arguments are validated once, when the result is built.
import type { AssembledToolCall, FinishReason, ModelResult, ModelStreamEvent, Usage } from './model.ts'
import { readProviderErrorPayload, type ProviderErrorPayload } from './provider-error-payload.ts'
import { TextBuffer } from './text-buffer.ts'

export type ChunkOutcome =
  | { readonly kind: 'events'; readonly events: ReadonlyArray<ModelStreamEvent> }
  | { readonly kind: 'provider-error'; readonly error: ProviderErrorPayload }
  | { readonly kind: 'protocol-error'; readonly message: string }

export interface ChunkAssembler {
  /**
   * Feed one parsed JSON chunk. With `emit`, its stream events go to `emit` as they are found
   * and the outcome's `events` is empty (the hot path: no array per chunk).
   */
  readonly acceptChunk: (chunk: unknown, emit?: ((event: ModelStreamEvent) => void) | undefined) => ChunkOutcome
  /**
   * Feed the content of a chunk that carried nothing else (see plain-content-chunk.ts): the same
   * as `acceptChunk` of that chunk, without the parsed object.
   */
  readonly acceptContent: (content: string, emit?: ((event: ModelStreamEvent) => void) | undefined) => void
  /** Text received so far (kept in every failure). */
  readonly partialText: () => string
  /** True once any choice carried a non-empty `finish_reason`. */
  readonly hasFinishReason: () => boolean
  /** The assembled result; finish reason inferred when the provider sent none. */
  readonly buildResult: () => ModelResult
}

interface ToolCallDraft {
  readonly position: number
  /** The `index` it was opened under (undefined when the provider sent none). */
  readonly index: number | undefined
  id: string
  name: string
  rawArguments: string
}

export function createChunkAssembler(): ChunkAssembler {
  const text = new TextBuffer()
  const thinking = new TextBuffer()
  let rawFinishReason = ''
  let usage: Usage | undefined
  const drafts: ToolCallDraft[] = []
  const draftByIndex = new Map<number, ToolCallDraft>()
  const draftById = new Map<string, ToolCallDraft>()

  const newDraft = ({ index, id }: { index: number | undefined; id: string | undefined }): ToolCallDraft => {
    const draft: ToolCallDraft = { position: drafts.length, index, id: id ?? '', name: '', rawArguments: '' }
    drafts.push(draft)
    if (index !== undefined) draftByIndex.set(index, draft)
    if (id !== undefined && !draftById.has(id)) draftById.set(id, draft)
    return draft
  }

  const findDraft = ({ index, id }: { index: number | undefined; id: string | undefined }): ToolCallDraft => {
    if (index !== undefined) {
      const byIndex = draftByIndex.get(index)
      const sameCall = byIndex !== undefined && (id === undefined || byIndex.id === '' || byIndex.id === id)
      if (sameCall) return byIndex
      const byId = id === undefined ? undefined : draftById.get(id)
      // Continues its call only where indexes are reused (Ollama) or absent (Gemini); a call opened
      // under another index is another call that repeats the id.
      if (byId !== undefined && (byId.index === undefined || byId.index === index)) {
        draftByIndex.set(index, byId)
        return byId
      }
      return newDraft({ index, id })
    }
    if (id !== undefined) return draftById.get(id) ?? newDraft({ index, id })
    return drafts.at(-1) ?? newDraft({ index, id })
  }

  const acceptToolCallDelta = (delta: unknown): void => {
    if (!isRecord(delta)) return
    const index = typeof delta['index'] === 'number' && Number.isInteger(delta['index']) ? delta['index'] : undefined
    const id = nonEmptyString(delta['id'])
    const draft = findDraft({ index, id })
    if (draft.id === '' && id !== undefined) {
      draft.id = id
      if (!draftById.has(id)) draftById.set(id, draft)
    }
    const fn = isRecord(delta['function']) ? delta['function'] : {}
    const name = nonEmptyString(fn['name'])
    if (name !== undefined && name !== draft.name) draft.name += name // equal to the name so far: a repeat
    const args = fn['arguments']
    if (typeof args === 'string') draft.rawArguments += args
    else if (isRecord(args) || Array.isArray(args)) draft.rawArguments = JSON.stringify(args) // a complete value
  }

  const acceptContent = (content: string, emit?: ((event: ModelStreamEvent) => void) | undefined): void => {
    if (content === '') return
    text.append(content)
    emit?.({ type: 'delta', text: content })
  }

  const acceptChoice = (choice: Record<string, unknown>, emit: (event: ModelStreamEvent) => void): void => {
    const delta = isRecord(choice['delta']) ? choice['delta'] : EMPTY_RECORD
    const reasoning = nonEmptyString(delta['reasoning_content']) ?? nonEmptyString(delta['reasoning'])
    if (reasoning !== undefined) {
      thinking.append(reasoning)
      emit({ type: 'thinking', text: reasoning })
    }
    const content = delta['content']
    if (typeof content === 'string') acceptContent(content, emit)
    const toolCalls = delta['tool_calls']
    if (Array.isArray(toolCalls)) for (const toolCall of toolCalls) acceptToolCallDelta(toolCall)
    const finishReason = nonEmptyString(choice['finish_reason'])
    if (finishReason !== undefined) rawFinishReason = finishReason
    const choiceUsage = readUsage(choice['usage'])
    if (choiceUsage !== undefined) usage = choiceUsage
  }

  const acceptChunk = (chunk: unknown, emit?: ((event: ModelStreamEvent) => void) | undefined): ChunkOutcome => {
    if (!isRecord(chunk)) return { kind: 'protocol-error', message: `expected a JSON object chunk, got ${describe(chunk)}` }
    const error = readProviderErrorPayload(chunk)
    if (error !== undefined) return { kind: 'provider-error', error }
    const events: ModelStreamEvent[] | undefined = emit === undefined ? [] : undefined
    const choices = chunk['choices']
    if (Array.isArray(choices)) {
      const choice = firstChoice(choices)
      if (choice !== undefined) acceptChoice(choice, emit ?? ((event) => events!.push(event)))
    }
    const chunkUsage = readUsage(chunk['usage'])
    if (chunkUsage !== undefined) usage = chunkUsage
    return events === undefined ? EMITTED : { kind: 'events', events }
  }

  const buildResult = (): ModelResult => {
    const toolCalls = drafts.filter(isMeaningfulDraft).map((draft, position) => finishToolCall({ draft, position }))
    return {
      text: text.toString(),
      thinking: thinking.toString(),
      toolCalls,
      finishReason: normaliseFinishReason({ rawFinishReason, hasToolCalls: toolCalls.length > 0 }),
      rawFinishReason,
      usage,
    }
  }

  return {
    acceptChunk,
    acceptContent,
    partialText: () => text.toString(),
    hasFinishReason: () => rawFinishReason !== '',
    buildResult,
  }
}

const EMPTY_RECORD: Record<string, unknown> = Object.freeze({})
const EMITTED: ChunkOutcome = Object.freeze({ kind: 'events', events: Object.freeze([]) })

/** The choice for index 0 (or the first one without an index). */
function firstChoice(choices: ReadonlyArray<unknown>): Record<string, unknown> | undefined {
  for (const choice of choices) {
    if (isRecord(choice) && (choice['index'] === 0 || choice['index'] === undefined)) return choice
  }
  return undefined
}

/** Maps a provider finish reason; "" (none received) and "stop"-with-tool-calls are inferred. */
export function normaliseFinishReason({
  rawFinishReason,
  hasToolCalls,
}: {
  readonly rawFinishReason: string
  readonly hasToolCalls: boolean
}): FinishReason {
  switch (rawFinishReason) {
    case '':
    case 'stop':
    case 'end_turn':
    case 'eos':
      return hasToolCalls ? 'tool_calls' : 'stop'
    case 'tool_calls':
    case 'function_call':
    case 'tool_use':
      return 'tool_calls'
    case 'length':
    case 'max_tokens':
      return 'length'
    case 'content_filter':
    case 'sensitive':
      return 'content_filter'
    default:
      return 'other'
  }
}

/** Validates complete arguments: "" means `{}`; anything else must be a JSON object. */
export function validateToolArguments(rawArguments: string): {
  readonly argumentsJson: string | undefined
  readonly argumentsError: string | undefined
} {
  if (rawArguments.trim() === '') return { argumentsJson: '{}', argumentsError: undefined }
  let parsed: unknown
  try {
    parsed = JSON.parse(rawArguments)
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    return { argumentsJson: undefined, argumentsError: `arguments are not valid JSON: ${reason}` }
  }
  if (!isRecord(parsed)) {
    return { argumentsJson: undefined, argumentsError: `arguments must be a JSON object, got ${describe(parsed)}` }
  }
  return { argumentsJson: JSON.stringify(parsed), argumentsError: undefined }
}

function finishToolCall({ draft, position }: { draft: ToolCallDraft; position: number }): AssembledToolCall {
  return {
    index: position,
    // A provider that never sends an id still needs one to pair the `role: tool` result.
    id: draft.id === '' ? `call_${position}` : draft.id,
    name: draft.name,
    rawArguments: draft.rawArguments,
    ...validateToolArguments(draft.rawArguments),
  }
}

/** A draft created by a stray empty delta (no id, no name, no arguments) is not a call. */
function isMeaningfulDraft(draft: ToolCallDraft): boolean {
  return draft.id !== '' || draft.name !== '' || draft.rawArguments !== ''
}

function readUsage(value: unknown): Usage | undefined {
  if (!isRecord(value)) return undefined
  const promptTokens = finiteNumber(value['prompt_tokens'])
  const completionTokens = finiteNumber(value['completion_tokens'])
  const totalTokens = finiteNumber(value['total_tokens'])
  if (promptTokens === undefined && completionTokens === undefined && totalTokens === undefined) return undefined
  return { promptTokens, completionTokens, totalTokens }
}

function finiteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return `a ${typeof value}`
}
