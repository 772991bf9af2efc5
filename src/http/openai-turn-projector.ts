// The OpenAI Chat Completions face of a turn (docs/openai-compatible.md). A third projection of
// the same runtime events: the answer becomes `choices[0].delta.content`, the model's thinking and
// what the agent did (tool calls, their progress and results, compactions, warnings) become
// `choices[0].delta.reasoning_content`, one short line each. A turn ends with exactly one finish
// chunk (`stop`, or `length` when a turn limit ended it), the usage chunk when asked for, then
// `[DONE]`; a failed turn ends with an in-stream `{"error":{…}}` object and no `[DONE]`, so a
// strict client reports a failure instead of a truncated success. The same frames, collected,
// make the non-streaming `chat.completion`.
import { PAGE_DEFAULT_LIMIT } from '../effects/workspace/text-paging.ts'
import type { Usage } from '../machines/index.ts'
import { TextBuffer } from '../effects/llm/text-buffer.ts'
import type { SseWriter } from './sse.ts'
import type { TurnOutcome, TurnProgressEvent, TurnProjector, TurnTerminal } from './turn-stream.ts'

export type OpenAiFinishReason = 'stop' | 'length' | 'content_filter'

export interface OpenAiUsage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

export interface ChatCompletionChunk {
  readonly id: string
  readonly object: 'chat.completion.chunk'
  readonly created: number
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly delta: { readonly role?: 'assistant'; readonly content?: string; readonly reasoning_content?: string }
    readonly logprobs: null
    readonly finish_reason: OpenAiFinishReason | null
  }>
  /** Only with `stream_options.include_usage`: null on every chunk but the last, which has no choices. */
  readonly usage?: OpenAiUsage | null
}

export interface ChatCompletion {
  readonly id: string
  readonly object: 'chat.completion'
  readonly created: number
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly message: { readonly role: 'assistant'; readonly content: string; readonly reasoning_content?: string; readonly refusal: null }
    readonly logprobs: null
    readonly finish_reason: OpenAiFinishReason
  }>
  readonly usage: OpenAiUsage
}

/** OpenAI's error object, as in `{"error": …}` bodies and in-stream error events. */
export interface OpenAiError {
  readonly message: string
  readonly type: string
  readonly code: string | null
  readonly param: string | null
}

export type OpenAiFrame =
  | { readonly kind: 'chunk'; readonly chunk: ChatCompletionChunk }
  /** The turn failed: the stream ends with this object and without `[DONE]`; `status` is for the non-streaming answer. */
  | { readonly kind: 'error'; readonly error: OpenAiError; readonly status: number }
  | { readonly kind: 'done' }

// ── the terminal event: a finish or an error ─────────────────────────────────────────────

/** The `type` of an OpenAI error object for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 429) return 'rate_limit_error'
  if (status >= 500) return 'server_error'
  return 'invalid_request_error'
}

/**
 * The HTTP status a failed turn is answered with when the client did not stream: the workspace
 * codes keep theirs (the selected node vanished or is not visible), an input too large for the
 * model is the client's to fix (400), a stop by server shutdown is 503, a token revoked
 * while the turn ran is 401, what the model provider
 * did wrong is 502, and anything else is a bug (500).
 */
export function turnErrorStatus(code: string): number {
  switch (code) {
    case 'invalid_uri':
    case 'context.over_limit':
      return 400
    case 'outside_scope':
      return 403
    case 'not_found':
      return 404
    case 'conflict':
      return 409
    case 'cancelled':
      return 503
    case 'auth.revoked':
      return 401
  }
  if (code.startsWith('provider.') || code.startsWith('compaction.') || code.startsWith('model.')) return 502
  return 500
}

/** The per-turn limits (`limit.model_steps`, `limit.tool_calls`, `limit.model_calls`) end an answer as `length`. */
export const isTurnLimitCode = (code: string): boolean => code.startsWith('limit.')

export type TerminalOutcome =
  | { readonly kind: 'finish'; readonly finishReason: OpenAiFinishReason }
  | { readonly kind: 'error'; readonly error: OpenAiError; readonly status: number }

export function classifyTerminal(terminal: TurnTerminal): TerminalOutcome {
  if (terminal.type === 'done') {
    const reason = terminal.finish_reason
    return { kind: 'finish', finishReason: reason === 'length' || reason === 'content_filter' ? reason : 'stop' }
  }
  if (isTurnLimitCode(terminal.code)) return { kind: 'finish', finishReason: 'length' }
  const status = turnErrorStatus(terminal.code)
  return { kind: 'error', status, error: { message: terminal.message, type: openAiErrorType(status), code: terminal.code, param: null } }
}

/** Token counts as the provider reported them over the whole turn; 0 where it reported none (the local model). */
export function toOpenAiUsage(usage: Usage | undefined): OpenAiUsage {
  const prompt = usage?.promptTokens ?? 0
  const completion = usage?.completionTokens ?? 0
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: usage?.totalTokens ?? prompt + completion }
}

// ── reasoning lines: what the agent did, one short line each ─────────────────────────────

const MAX_LINE_CHARS = 160

/** One line: whitespace and control characters collapsed, cut at `max` code points. */
export function oneLine(text: string, max = MAX_LINE_CHARS): string {
  const flat = text.replace(/[\s\u0000-\u001f\u007f]+/gu, ' ').trim()
  const points = Array.from(flat)
  return points.length <= max ? flat : points.slice(0, max - 1).join('') + '…'
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const stringArg = (args: Record<string, unknown>, key: string): string | undefined => (typeof args[key] === 'string' ? args[key] : undefined)
const intArg = (args: Record<string, unknown>, key: string): number | undefined =>
  typeof args[key] === 'number' && Number.isSafeInteger(args[key]) ? args[key] : undefined

/** `read kb://…/a.md @0–3000`, `search "q" in kb://…`, `ls kb://…`: what a tool call is about to do. */
export function describeToolCall(name: string, args: unknown): string {
  if (!isRecord(args)) return name
  const uri = stringArg(args, 'uri')
  const offset = intArg(args, 'offset')
  switch (name) {
    case 'read': {
      if (uri === undefined) break
      const from = offset ?? 0
      return `read ${uri} @${from}–${from + (intArg(args, 'limit') ?? PAGE_DEFAULT_LIMIT)}`
    }
    case 'search': {
      const query = stringArg(args, 'query')
      if (query === undefined) break
      return `search ${JSON.stringify(query)}${uri === undefined ? '' : ` in ${uri}`}${offset ? ` @${offset}` : ''}`
    }
    case 'ls':
    case 'status':
      return `${name}${uri === undefined ? '' : ` ${uri}`}${offset ? ` @${offset}` : ''}`
  }
  const json = JSON.stringify(args)
  return json === '{}' ? name : `${name} ${json}`
}

/** The reasoning line of a runtime event, or undefined when the event says nothing to a chat client. */
export function reasoningLineOf(event: Exclude<TurnProgressEvent, { type: 'delta' } | { type: 'thinking' }>, compactionsSoFar: number): string | undefined {
  switch (event.type) {
    case 'tool':
      if (event.phase === 'start') return `→ ${oneLine(describeToolCall(event.name, event.arguments))}`
      if (event.phase === 'progress') return `  … ${oneLine(event.text)}`
      return `  ${event.ok ? '✓' : '✗'} ${oneLine(event.summary)}`
    case 'warning':
      return `⚠ ${oneLine(event.message)}`
    case 'context':
      if (event.compactions <= compactionsSoFar) return undefined
      return event.before !== undefined && event.after !== undefined
        ? `compacted the conversation: ${event.before} → ${event.after} bytes`
        : 'compacted the conversation'
  }
}

// ── the projector ────────────────────────────────────────────────────────────────────────

export interface OpenAiProjectorOptions {
  /** `chatcmpl-<turn id>`: the same on every chunk. */
  readonly id: string
  /** Unix seconds, the same on every chunk. */
  readonly created: number
  /** `knowagent/<model id>`, as the client asked. */
  readonly model: string
  /** `stream_options.include_usage`: `usage: null` on every chunk and a last chunk with the usage and no choices. */
  readonly includeUsage: boolean
  readonly write: (frame: OpenAiFrame) => void
}

/**
 * Projects one turn's runtime events onto OpenAI frames. The first chunk (role) is written at
 * once, so a client sees the stream open before the first model step.
 */
export function openAiTurnProjector({ id, created, model, includeUsage, write }: OpenAiProjectorOptions): TurnProjector {
  let answered = false // some answer text was sent
  let toolSinceText = false // a tool ran since the last answer text: the next text starts a new paragraph
  let reasoningAtLineStart = true
  let compactions = 0

  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: OpenAiFinishReason | null = null): void =>
    write({
      kind: 'chunk',
      chunk: {
        id, object: 'chat.completion.chunk', created, model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
        ...(includeUsage ? { usage: null } : {}),
      },
    })
  const reasoning = (text: string): void => {
    if (text === '') return
    chunk({ reasoning_content: text })
    reasoningAtLineStart = text.endsWith('\n')
  }
  const reasoningLine = (line: string): void => reasoning(`${reasoningAtLineStart ? '' : '\n'}${line}\n`)

  chunk({ role: 'assistant', content: '' })
  return {
    progress: (event) => {
      switch (event.type) {
        case 'delta': {
          if (event.text === '') return
          chunk({ content: answered && toolSinceText ? `\n\n${event.text}` : event.text })
          answered = true
          toolSinceText = false
          return
        }
        case 'thinking':
          reasoning(event.text)
          return
        default: {
          const line = reasoningLineOf(event, compactions)
          if (event.type === 'tool') toolSinceText = true
          if (event.type === 'context') compactions = Math.max(compactions, event.compactions)
          if (line !== undefined) reasoningLine(line)
        }
      }
    },
    finish: (terminal: TurnTerminal, outcome?: TurnOutcome) => {
      const end = classifyTerminal(terminal)
      if (end.kind === 'error') {
        write({ kind: 'error', error: end.error, status: end.status })
        return
      }
      chunk({}, end.finishReason)
      if (includeUsage) {
        write({ kind: 'chunk', chunk: { id, object: 'chat.completion.chunk', created, model, choices: [], usage: toOpenAiUsage(outcome?.usage) } })
      }
      write({ kind: 'done' })
    },
  }
}

/** Writes frames as OpenAI does: `data: <chunk JSON>`, `data: {"error":…}`, `data: [DONE]` (unnamed SSE messages). */
export function sseFrameWriter(sse: Pick<SseWriter, 'sendText'>): (frame: OpenAiFrame) => void {
  return (frame) => {
    if (frame.kind === 'chunk') sse.sendText(JSON.stringify(frame.chunk))
    else if (frame.kind === 'error') sse.sendText(JSON.stringify({ error: frame.error }))
    else sse.sendText('[DONE]')
  }
}

// ── the non-streaming answer: the same frames, folded ────────────────────────────────────

export type CollectedCompletion =
  | { readonly ok: true; readonly completion: ChatCompletion }
  | { readonly ok: false; readonly status: number; readonly error: OpenAiError }

export interface CompletionCollector {
  readonly write: (frame: OpenAiFrame) => void
  /** After the projector finished; a turn that never finished is a 500. */
  readonly result: () => CollectedCompletion
}

/** Folds the frames of a projector (built with `includeUsage: true`) into one `chat.completion`. */
export function createCompletionCollector(): CompletionCollector {
  let id = ''
  let created = 0
  let model = ''
  const content = new TextBuffer()
  const reasoningContent = new TextBuffer()
  let finishReason: OpenAiFinishReason | undefined
  let usage: OpenAiUsage | undefined
  let failure: { status: number; error: OpenAiError } | undefined
  let done = false
  return {
    write: (frame) => {
      if (frame.kind === 'done') {
        done = true
        return
      }
      if (frame.kind === 'error') {
        failure = { status: frame.status, error: frame.error }
        return
      }
      const { chunk } = frame
      ;({ id, created, model } = chunk)
      if (chunk.usage) usage = chunk.usage
      for (const choice of chunk.choices) {
        content.append(choice.delta.content ?? '')
        reasoningContent.append(choice.delta.reasoning_content ?? '')
        if (choice.finish_reason !== null) finishReason = choice.finish_reason
      }
    },
    result: () => {
      if (failure) return { ok: false, ...failure }
      if (!done || finishReason === undefined) {
        return { ok: false, status: 500, error: { message: 'the turn ended without a result', type: 'server_error', code: 'internal_error', param: null } }
      }
      return {
        ok: true,
        completion: {
          id, object: 'chat.completion', created, model,
          choices: [{
            index: 0,
            message: { role: 'assistant', content: content.toString(), ...(reasoningContent.length === 0 ? {} : { reasoning_content: reasoningContent.toString() }), refusal: null },
            logprobs: null,
            finish_reason: finishReason,
          }],
          usage: usage ?? toOpenAiUsage(undefined),
        },
      }
    },
  }
}
