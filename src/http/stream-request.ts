// Validation of POST stream bodies: the fields, sizes, and an OpenAI-shaped history whose tool
// results all answer an earlier assistant tool call (a provider would reject orphans).
import { Schema } from 'effect'
import { toolPairingProblems, type ChatMessage } from '../machines/index.ts'
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
  history: Schema.optional(Schema.Array(HistoryMessage).check(Schema.isMaxLength(MAX_HISTORY_MESSAGES))),
})
export type StreamRequest = typeof StreamRequest.Type

/** Checks what the schema cannot: message size, history size and tool-call pairing. */
export function checkStreamRequest(request: StreamRequest, { maxMessageChars }: { maxMessageChars: number }): ReadonlyArray<ChatMessage> {
  if (request.message.trim() === '') throw badRequest('"message" is empty', 'invalid_request')
  if (request.message.length > maxMessageChars) {
    throw badRequest(`"message" is ${request.message.length} characters; the limit is ${maxMessageChars}`, 'message_too_large')
  }
  const history = (request.history ?? []) as ReadonlyArray<ChatMessage>
  const bytes = Buffer.byteLength(JSON.stringify(history), 'utf8')
  if (bytes > MAX_HISTORY_BYTES) throw badRequest(`"history" is ${bytes} bytes; the limit is ${MAX_HISTORY_BYTES}`, 'history_too_large')
  const problems = toolPairingProblems(history)
  if (problems.length > 0) throw badRequest(`invalid history: ${problems.join('; ')}`, 'invalid_history')
  return history
}
