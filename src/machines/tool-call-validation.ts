// Validation of the tool calls a model step asked for (SPEC §3). Every call ends up either
// runnable or rejected with an explicit error that goes back to the model as its
// `role:"tool"` result, so the assistant/tool pairing in the history always stays valid.
//
// Ids: a call whose id is invalid (empty, too long, odd characters) or already taken (earlier
// in the conversation or earlier in the same step) is rejected, and both its assistant
// `tool_calls` entry and its tool result get a fresh synthesised id (`kacall_<step>_<index>`),
// because a provider would refuse a history holding that id twice or in that form.
import type { AssembledToolCall, ChatMessage, ToolCallMessagePart } from './turn-types.ts'

export const TOOL_CALL_ID_MAX_LENGTH = 128
const TOOL_CALL_ID_PATTERN = /^[A-Za-z0-9_.:-]+$/

export type ToolCallRejectionReason = 'invalid_id' | 'duplicate_id' | 'unknown_tool' | 'invalid_arguments'

export interface RunnableToolCall {
  readonly kind: 'run'
  readonly id: string
  readonly name: string
  readonly arguments: Record<string, unknown>
  readonly argumentsJson: string
}

export interface RejectedToolCall {
  readonly kind: 'reject'
  /** The id used in the history (synthesised when the received one was unusable). */
  readonly id: string
  readonly receivedId: string
  readonly name: string
  readonly reason: ToolCallRejectionReason
  /** Explains the rejection to the model (and the UI). */
  readonly message: string
  /** What the assistant `tool_calls` entry carries: the arguments when valid JSON, else `{}`. */
  readonly argumentsJson: string
  readonly rawArguments: string
  /** For the UI: the parsed arguments when valid, else the raw text. */
  readonly shownArguments: unknown
}

export type PlannedToolCall = RunnableToolCall | RejectedToolCall

export function isValidToolCallId(id: string): boolean {
  return id.length > 0 && id.length <= TOOL_CALL_ID_MAX_LENGTH && TOOL_CALL_ID_PATTERN.test(id)
}

/** The JSON body of a tool error result: `{"error": "..."}`. */
export function toolErrorContent(message: string): string {
  return JSON.stringify({ error: message })
}

/** Every tool-call id already present in a message sequence. */
export function collectToolCallIds(messages: ReadonlyArray<ChatMessage>): Set<string> {
  const ids = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) ids.add(call.id)
    if (message.role === 'tool') ids.add(message.tool_call_id)
  }
  return ids
}

export function synthesizeToolCallId({
  step,
  index,
  taken,
}: {
  readonly step: number
  readonly index: number
  readonly taken: ReadonlySet<string>
}): string {
  const base = `kacall_${step}_${index}`
  let candidate = base
  for (let n = 1; taken.has(candidate); n++) candidate = `${base}_${n}`
  return candidate
}

/** Decides, in order, what happens to each call of one model step. */
export function planToolCalls({
  calls,
  toolNames,
  usedIds,
  step,
}: {
  readonly calls: ReadonlyArray<AssembledToolCall>
  readonly toolNames: ReadonlyArray<string>
  /** Ids already used in the conversation before this step. */
  readonly usedIds: ReadonlySet<string>
  /** The step number, for synthesised ids. */
  readonly step: number
}): PlannedToolCall[] {
  const taken = new Set(usedIds)
  for (const call of calls) if (isValidToolCallId(call.id)) taken.add(call.id)
  const seenInStep = new Set<string>()
  return calls.map((call, index) => {
    const planned = planOneToolCall({ call, index, toolNames, usedIds, seenInStep, taken, step })
    taken.add(planned.id)
    seenInStep.add(call.id)
    return planned
  })
}

function planOneToolCall({
  call,
  index,
  toolNames,
  usedIds,
  seenInStep,
  taken,
  step,
}: {
  readonly call: AssembledToolCall
  readonly index: number
  readonly toolNames: ReadonlyArray<string>
  readonly usedIds: ReadonlySet<string>
  readonly seenInStep: ReadonlySet<string>
  readonly taken: ReadonlySet<string>
  readonly step: number
}): PlannedToolCall {
  const parsed = parseArguments(call)
  const reject = (reason: ToolCallRejectionReason, message: string, id = call.id): RejectedToolCall => ({
    kind: 'reject',
    id,
    receivedId: call.id,
    name: call.name,
    reason,
    message,
    argumentsJson: parsed.ok ? parsed.json : '{}',
    rawArguments: call.rawArguments,
    shownArguments: parsed.ok ? parsed.value : call.rawArguments,
  })
  const fresh = () => synthesizeToolCallId({ step, index, taken })
  if (!isValidToolCallId(call.id)) {
    const id = fresh()
    return reject(
      'invalid_id',
      `tool call id ${showText(call.id)} is invalid (it must be 1–${TOOL_CALL_ID_MAX_LENGTH} letters, digits, "_", "-", "." or ":"); ` +
        `the call was not run and was recorded under the id "${id}". Call the tool again.`,
      id,
    )
  }
  if (usedIds.has(call.id) || seenInStep.has(call.id)) {
    const id = fresh()
    return reject(
      'duplicate_id',
      `tool call id ${showText(call.id)} was already used in this conversation; the call was not run and was ` +
        `recorded under the id "${id}". Call the tool again with a new id.`,
      id,
    )
  }
  if (!toolNames.includes(call.name)) {
    return reject('unknown_tool', unknownToolMessage({ name: call.name, toolNames }))
  }
  if (!parsed.ok) {
    return reject(
      'invalid_arguments',
      `invalid arguments for tool "${call.name}": ${parsed.error}; the call was not run. ` +
        `Send the arguments as one JSON object. Received: ${showText(call.rawArguments)}`,
    )
  }
  return { kind: 'run', id: call.id, name: call.name, arguments: parsed.value, argumentsJson: parsed.json }
}

function unknownToolMessage({ name, toolNames }: { readonly name: string; readonly toolNames: ReadonlyArray<string> }) {
  const available = toolNames.length === 0 ? 'no tools are available in this turn' : `available tools: ${toolNames.join(', ')}`
  return `unknown tool ${showText(name)}; ${available}. The call was not run.`
}

type ParsedArguments =
  | { readonly ok: true; readonly value: Record<string, unknown>; readonly json: string }
  | { readonly ok: false; readonly error: string }

function parseArguments(call: AssembledToolCall): ParsedArguments {
  if (call.argumentsError !== undefined) return { ok: false, error: call.argumentsError }
  if (call.argumentsJson === undefined) return { ok: false, error: 'no arguments were received' }
  let value: unknown
  try {
    value = JSON.parse(call.argumentsJson)
  } catch {
    return { ok: false, error: 'the arguments are not valid JSON' }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'the arguments are not a JSON object' }
  }
  return { ok: true, value: value as Record<string, unknown>, json: call.argumentsJson }
}

const SHOWN_TEXT_MAX = 200

function showText(text: string): string {
  return JSON.stringify(text.length > SHOWN_TEXT_MAX ? `${text.slice(0, SHOWN_TEXT_MAX)}…` : text)
}

/** The assistant message's `tool_calls`, carrying the ids actually used in the history. */
export function toAssistantToolCalls(planned: ReadonlyArray<PlannedToolCall>): ToolCallMessagePart[] {
  return planned.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: call.argumentsJson },
  }))
}
