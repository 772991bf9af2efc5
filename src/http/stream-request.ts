// Validation of POST stream bodies: the fields, sizes, and an OpenAI-shaped history whose tool
// results all answer an earlier assistant tool call (a provider would reject orphans).
import * as Schema from 'effect/Schema'
import { DEFAULT_PROTOCOL_RESERVE, estimateInputBytes, inputLimit } from '../machines/context-accounting.ts'
import { toolPairingProblems, type ChatMessage, type ToolSchema } from '../machines/index.ts'
import type { ModelInfo } from '../effects/llm/model.ts'
import { badRequest } from './http-errors.ts'

const ToolCallPart = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
  type: Schema.Literal('function'),
  function: Schema.Struct({ name: Schema.String.check(Schema.isMaxLength(256)), arguments: Schema.String }),
})

export const HistoryMessage = Schema.Union([
  Schema.Struct({ role: Schema.Literal('user'), content: Schema.String }),
  Schema.Struct({
    role: Schema.Literal('assistant'),
    content: Schema.NullOr(Schema.String),
    tool_calls: Schema.optional(Schema.Array(ToolCallPart).check(Schema.isMaxLength(64))),
  }),
  Schema.Struct({ role: Schema.Literal('tool'), tool_call_id: Schema.String, content: Schema.String }),
])

export const MAX_HISTORY_MESSAGES = 400
export const MAX_HISTORY_BYTES = 1_500_000

export const StreamRequest = Schema.Struct({
  uri: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096)),
  model_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)),
  message: Schema.String,
  history: Schema.optional(Schema.Array(HistoryMessage)), // its length: history_too_large below (the body limit bounds it)
})
export type StreamRequest = typeof StreamRequest.Type

/** Checks what the schema cannot: message size, history size and tool-call pairing. */
export function checkStreamRequest(request: StreamRequest, { maxMessageChars }: { maxMessageChars: number }): ReadonlyArray<ChatMessage> {
  if (request.message.trim() === '') throw badRequest('"message" is empty', 'invalid_request')
  if (request.message.length > maxMessageChars) {
    throw badRequest(`"message" is ${request.message.length} characters; the limit is ${maxMessageChars}`, 'message_too_large')
  }
  const history = (request.history ?? []) as ReadonlyArray<ChatMessage>
  if (history.length > MAX_HISTORY_MESSAGES) {
    throw badRequest(`"history" has ${history.length} messages; the limit is ${MAX_HISTORY_MESSAGES}`, 'history_too_large')
  }
  const bytes = Buffer.byteLength(JSON.stringify(history), 'utf8')
  if (bytes > MAX_HISTORY_BYTES) throw badRequest(`"history" is ${bytes} bytes; the limit is ${MAX_HISTORY_BYTES}`, 'history_too_large')
  const problems = toolPairingProblems(history)
  if (problems.length > 0) throw badRequest(`invalid history: ${problems.join('; ')}`, 'invalid_history')
  return history
}

/**
 * Room kept beside the question for the turn's first tool exchange (the model's call and a default
 * page of `read` — 3,000 code points — or a page of `search` hits):
 * the latest observation is never compacted (SPEC §5), so a question that left no room for it was
 * admitted only to end in `context.over_limit` at the first tool result.
 */
export const FIRST_OBSERVATION_RESERVE = 12_288

/**
 * Refuses a message that cannot fit the model's input even with no history: its bytes (as the
 * turn counts them, SPEC §5) plus the system prompt, the tool schemas and room for the first tool
 * result, over the model's input limit. Without this the turn would start, stream,
 * and end in `context.over_limit`.
 */
export function checkMessageFitsModel({
  message,
  model,
  systemPrompt,
  tools,
}: {
  message: string
  model: ModelInfo
  systemPrompt: string
  tools: ReadonlyArray<ToolSchema>
}): void {
  const limit = inputLimit({ contextWindow: model.contextWindow, maxOutputTokens: model.maxOutputTokens, protocolReserve: DEFAULT_PROTOCOL_RESERVE })
  // The workspace tools are there, natively or in the prompt; a small model keeps half its input for the question.
  const reserve = Math.min(FIRST_OBSERVATION_RESERVE, Math.floor(limit / 2))
  const total = estimateInputBytes({ messages: [{ role: 'system', content: systemPrompt }, { role: 'user', content: message }], tools }) + reserve
  if (total <= limit) return
  const fixed = estimateInputBytes({ messages: [{ role: 'system', content: systemPrompt }, { role: 'user', content: '' }], tools }) + reserve
  const messageBytes = total - fixed
  if (fixed >= limit) {
    // The question is not what is too long: the preferences (the OpenAI face's system messages) are.
    throw badRequest(
      `the system prompt with this request's preferences (system messages) and the tool schemas take ${fixed - reserve} bytes as the model counts input, ` +
        `and the first tool result needs ${reserve}; ` +
        `model "${model.id}" accepts at most ${limit} bytes of input: shorten the preferences or system messages`,
      'message_too_large',
    )
  }
  throw badRequest(
    `"message" is ${messageBytes} bytes as the model counts input; model "${model.id}" accepts at most ${limit} bytes of input ` +
      `(window ${model.contextWindow} − output reserve ${model.maxOutputTokens} − ${DEFAULT_PROTOCOL_RESERVE}), ` +
      `of which the system prompt and tool schemas take ${fixed - reserve} and the first tool result needs ${reserve}: ` +
      `shorten the message to at most ${Math.max(0, limit - fixed)} bytes`,
    'message_too_large',
  )
}
