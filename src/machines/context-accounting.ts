// Context accounting (SPEC §5): a conservative upper bound on input tokens, measured as
// UTF-8 bytes of what is sent. Not a tokenizer, not billing.
import type { ChatMessage, ToolSchema } from './turn-types.ts'

export const DEFAULT_PROTOCOL_RESERVE = 1024

const NON_ASCII = /[^\x00-\x7f]/

/** UTF-8 byte length of a string (lone surrogates count as the 3-byte replacement character). */
export function utf8ByteLength(text: string): number {
  // JSON of prompts and schemas is mostly ASCII: the native search skips that prefix (or all of it).
  const first = text.search(NON_ASCII)
  if (first === -1) return text.length
  let bytes = first
  for (let i = first; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff
}

/** Bytes of the JSON of the message sequence plus the JSON of the tool schemas (when any). */
export function estimateInputBytes({
  messages,
  tools,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSchema>
}): number {
  const messageBytes = utf8ByteLength(JSON.stringify(messages))
  return tools.length === 0 ? messageBytes : messageBytes + toolSchemaBytes(tools)
}

/** Tool schemas are fixed for a registry, and a turn measures them at every step: counted once per array. */
const toolBytesByArray = new WeakMap<ReadonlyArray<ToolSchema>, number>()

function toolSchemaBytes(tools: ReadonlyArray<ToolSchema>): number {
  let bytes = toolBytesByArray.get(tools)
  if (bytes === undefined) {
    bytes = utf8ByteLength(JSON.stringify(tools))
    toolBytesByArray.set(tools, bytes)
  }
  return bytes
}

/** Bytes of the JSON of some messages, as they contribute to `estimateInputBytes`. */
export function estimateMessagesBytes(messages: ReadonlyArray<ChatMessage>): number {
  return utf8ByteLength(JSON.stringify(messages))
}

/** Input limit = window − output reserve − protocol reserve (never negative). */
export function inputLimit({
  contextWindow,
  maxOutputTokens,
  protocolReserve,
}: {
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly protocolReserve: number
}): number {
  return Math.max(0, contextWindow - maxOutputTokens - protocolReserve)
}

export interface CompactionMeasurement {
  /** Estimated input bytes when the compaction cycle started. */
  readonly before: number
  /** Estimated input bytes after its last batch. */
  readonly after: number
}

/** after/before, from the measured estimates; undefined when nothing was measured. */
export function compactionRatio(measurement: CompactionMeasurement | undefined): number | undefined {
  if (measurement === undefined || measurement.before <= 0) return undefined
  return measurement.after / measurement.before
}
