// A `POST /v1/chat/completions` body read as a KnowAgent turn (docs/openai-compatible.md): the
// model, the scope (`kb_uri` or `metadata.kb_uri`, else the caller's root), the client's
// system/developer messages as preferences, the user/assistant turns as history and the last
// user message as the question. What KnowAgent cannot honour is refused with a 400 that names
// the parameter — client tools above all (KnowAgent's own tools run on the server) — and the
// usual sampling knobs are accepted and ignored (a turn has its own limits).
import * as Schema from 'effect/Schema'
import type { ChatMessage } from '../machines/index.ts'
import { HttpError } from './http-errors.ts'
import { checkStreamRequest, MAX_HISTORY_MESSAGES } from './stream-request.ts'

export const OPENAI_MODEL_PREFIX = 'knowagent/'
export const DEFAULT_KB_URI = 'kb://me/'

/** A 4xx in OpenAI's error shape, with the offending parameter when there is one. */
export class OpenAiRequestError extends HttpError {
  readonly param: string | null
  constructor(status: number, code: string, message: string, param: string | null = null) {
    super(status, code, message)
    this.param = param
  }
}

const invalid = (message: string, param: string | null, code = 'invalid_request') => new OpenAiRequestError(400, code, message, param)

const ContentPart = Schema.Record(Schema.String, Schema.Unknown)
const Content = Schema.NullOr(Schema.Union([Schema.String, Schema.Array(ContentPart)]))

const RequestMessage = Schema.Struct({
  role: Schema.String,
  content: Schema.optional(Content),
  tool_calls: Schema.optional(Schema.Unknown),
  function_call: Schema.optional(Schema.Unknown),
})

/** The fields read; any other field is accepted and ignored (clients send many: temperature, user, seed, …). */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
  messages: Schema.Array(RequestMessage).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_HISTORY_MESSAGES + 64)),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.NullOr(Schema.Boolean)) }))),
  kb_uri: Schema.optional(Schema.NullOr(Schema.String)),
  metadata: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  tools: Schema.optional(Schema.Unknown),
  tool_choice: Schema.optional(Schema.Unknown),
  functions: Schema.optional(Schema.Unknown),
  function_call: Schema.optional(Schema.Unknown),
  n: Schema.optional(Schema.Unknown),
  response_format: Schema.optional(Schema.Unknown),
  logprobs: Schema.optional(Schema.Unknown),
  audio: Schema.optional(Schema.Unknown),
  modalities: Schema.optional(Schema.Unknown),
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

/** Decodes the body; failures are a 400 that says what is wrong. */
export function decodeChatCompletionRequest(body: unknown): ChatCompletionRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('expected a JSON object body (Content-Type: application/json)', null, 'invalid_body')
  }
  try {
    return Schema.decodeUnknownSync(ChatCompletionRequest)(body, { errors: 'all' })
  } catch (error) {
    throw invalid(`invalid request: ${(error as Error).message.replace(/\n\s*/g, ' ')}`, null)
  }
}

/** What a chat-completions request asks of KnowAgent. */
export interface ChatTurnRequest {
  /** The registry id, without the `knowagent/` prefix. */
  readonly modelId: string
  readonly uri: string
  readonly stream: boolean
  readonly includeUsage: boolean
  /** The client's system/developer messages, in order; undefined when there were none. */
  readonly preferences: string | undefined
  readonly history: ReadonlyArray<ChatMessage>
  readonly question: string
}

const isPresent = (value: unknown): boolean => value !== undefined && value !== null

/** Refuses what KnowAgent cannot do rather than silently doing something else. */
function refuseUnsupported(request: ChatCompletionRequest): void {
  const toolsHint = "KnowAgent's own tools (ls, read, search, status) run on the server; send no client tools"
  if (isPresent(request.tools) && !(Array.isArray(request.tools) && request.tools.length === 0)) {
    throw invalid(`"tools" is not supported: ${toolsHint}`, 'tools', 'tools_not_supported')
  }
  if (isPresent(request.tool_choice) && request.tool_choice !== 'none' && request.tool_choice !== 'auto') {
    throw invalid(`"tool_choice" is not supported: ${toolsHint}`, 'tool_choice', 'tools_not_supported')
  }
  if (isPresent(request.functions) && !(Array.isArray(request.functions) && request.functions.length === 0)) {
    throw invalid(`"functions" is not supported: ${toolsHint}`, 'functions', 'tools_not_supported')
  }
  if (isPresent(request.function_call) && request.function_call !== 'none' && request.function_call !== 'auto') {
    throw invalid(`"function_call" is not supported: ${toolsHint}`, 'function_call', 'tools_not_supported')
  }
  if (isPresent(request.n) && request.n !== 1) throw invalid('"n" must be 1: a turn gives one answer', 'n', 'unsupported_parameter')
  const format = request.response_format
  if (isPresent(format) && !(typeof format === 'object' && (format as { type?: unknown }).type === 'text')) {
    throw invalid('"response_format" must be {"type":"text"}: KnowAgent answers in text (markdown) with citations', 'response_format', 'unsupported_parameter')
  }
  if (request.logprobs === true) throw invalid('"logprobs" are not available', 'logprobs', 'unsupported_parameter')
  if (isPresent(request.audio)) throw invalid('audio output is not supported', 'audio', 'unsupported_parameter')
  if (isPresent(request.modalities) && !(Array.isArray(request.modalities) && request.modalities.every((m) => m === 'text'))) {
    throw invalid('only the "text" modality is supported', 'modalities', 'unsupported_parameter')
  }
}

/** A message's text: a string, or text parts joined by newlines; any other part is refused. */
function textOf(content: typeof Content.Type | undefined, { param, role }: { param: string; role: string }): string {
  if (content === undefined || content === null) return ''
  if (typeof content === 'string') return content
  return content
    .map((part, index) => {
      if (part['type'] === 'text' && typeof part['text'] === 'string') return part['text']
      if (role === 'assistant' && part['type'] === 'refusal' && typeof part['refusal'] === 'string') return part['refusal']
      if (part['type'] === 'text') throw invalid('a content part of type "text" needs "text", a string', `${param}.content[${index}].text`)
      const type = typeof part['type'] === 'string' ? part['type'] : 'untyped'
      throw invalid(
        `content part of type "${oneWord(type)}" is not supported: KnowAgent reads text only (put files in the workspace and ask about them)`,
        `${param}.content[${index}]`,
        'unsupported_content',
      )
    })
    .join('\n')
}

const oneWord = (text: string): string => text.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 40)

/** The scope: `kb_uri`, or `metadata.kb_uri`, or the caller's root; both given must agree. */
function scopeOf(request: ChatCompletionRequest): string {
  const direct = request.kb_uri ?? undefined
  const fromMetadata = request.metadata?.['kb_uri']
  if (fromMetadata !== undefined && typeof fromMetadata !== 'string') throw invalid('"metadata.kb_uri" must be a string', 'metadata.kb_uri')
  if (direct !== undefined && fromMetadata !== undefined && direct !== fromMetadata) {
    throw invalid('"kb_uri" and "metadata.kb_uri" differ: send one', 'kb_uri')
  }
  const uri = direct ?? fromMetadata ?? DEFAULT_KB_URI
  if (uri.length === 0 || uri.length > 4096) throw invalid('"kb_uri" must be 1–4096 characters', direct !== undefined ? 'kb_uri' : 'metadata.kb_uri')
  return uri
}

/**
 * Reads a decoded request as a turn, or throws an OpenAiRequestError (400). `maxMessageChars`
 * bounds the question and, separately, the client's preferences; history is checked like the
 * stream API's (size, pairing).
 */
export function readChatTurnRequest(request: ChatCompletionRequest, { maxMessageChars }: { maxMessageChars: number }): ChatTurnRequest {
  if (!request.model.startsWith(OPENAI_MODEL_PREFIX) || request.model.length === OPENAI_MODEL_PREFIX.length) {
    throw new OpenAiRequestError(404, 'model_not_found', `unknown model "${request.model}": models are named knowagent/<id>; GET /v1/models lists them`, 'model')
  }
  refuseUnsupported(request)
  const preferences: string[] = []
  const conversation: Array<Extract<ChatMessage, { role: 'user' | 'assistant' }>> = []
  request.messages.forEach((message, index) => {
    const param = `messages[${index}]`
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content, { param, role: message.role }).trim()
        if (text !== '') preferences.push(text)
        return
      }
      case 'user':
        conversation.push({ role: 'user', content: textOf(message.content, { param, role: 'user' }) })
        return
      case 'assistant': {
        const calls = message.tool_calls
        if ((isPresent(calls) && !(Array.isArray(calls) && calls.length === 0)) || isPresent(message.function_call)) {
          throw invalid('assistant tool calls are not supported in the history: KnowAgent runs its own tools on the server', `${param}.tool_calls`, 'tools_not_supported')
        }
        conversation.push({ role: 'assistant', content: textOf(message.content, { param, role: 'assistant' }) })
        return
      }
      case 'tool':
      case 'function':
        throw invalid(`"${message.role}" messages are not supported: KnowAgent runs its own tools on the server`, `${param}.role`, 'tools_not_supported')
      default:
        throw invalid(`unknown role "${oneWord(message.role)}" (expected system, developer, user or assistant)`, `${param}.role`)
    }
  })
  const last = conversation.at(-1)
  if (last === undefined || last.role !== 'user') throw invalid('the last user or assistant message must be a user message: the question', 'messages')
  const question = last.content
  if (question.trim() === '') throw invalid('the question (the last user message) is empty', 'messages')
  if (question.length > maxMessageChars) {
    throw invalid(`the question (the last user message) is ${question.length} characters; the limit is ${maxMessageChars}`, 'messages', 'message_too_large')
  }
  const joinedPreferences = preferences.join('\n\n')
  if (joinedPreferences.length > maxMessageChars) {
    throw invalid(`the system messages are ${joinedPreferences.length} characters together; the limit is ${maxMessageChars}`, 'messages', 'message_too_large')
  }
  const history = conversation.slice(0, -1)
  if (history.length > MAX_HISTORY_MESSAGES) {
    throw invalid(`the conversation has ${history.length} earlier messages; the limit is ${MAX_HISTORY_MESSAGES}`, 'messages', 'history_too_large')
  }
  const uri = scopeOf(request)
  const modelId = request.model.slice(OPENAI_MODEL_PREFIX.length)
  // The stream API's checks on the same turn (history size and pairing): one rule for both faces.
  checkStreamRequest({ uri, model_id: modelId, message: question, history }, { maxMessageChars })
  return {
    modelId,
    uri,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    preferences: joinedPreferences === '' ? undefined : joinedPreferences,
    history,
    question,
  }
}
