// `knowagent/client`: a small typed client for the JSON + SSE API. It decodes the stream with
// the project's SSE decoder and follows the same rules as the browser: an EOF without a
// terminal `done` or `error` event is a failure that keeps the text received so far.
import { decodeSseStream } from '../sse/sse-decoder.ts'
import type { ChatMessage } from '../machines/index.ts'
import { type ContextEvent, type DeltaEvent, type DoneEvent, type ErrorEvent, readWireEvent, type ThinkingEvent, type ToolEvent, type WarningEvent, type WireEvent } from './wire-events.ts'

export type { ContextEvent, DeltaEvent, DoneEvent, ErrorEvent, ThinkingEvent, ToolEvent, WarningEvent } from './wire-events.ts'
export type { ChatMessage } from '../machines/index.ts'

export interface StreamHandlers {
  readonly onDelta?: (event: DeltaEvent) => void
  readonly onThinking?: (event: ThinkingEvent) => void
  readonly onTool?: (event: ToolEvent) => void
  readonly onContext?: (event: ContextEvent) => void
  readonly onWarning?: (event: WarningEvent) => void
}

export type StreamOutcome =
  | { readonly ok: true; readonly text: string; readonly thinking: string; readonly done: DoneEvent; readonly turnId: string | undefined }
  | { readonly ok: false; readonly text: string; readonly thinking: string; readonly error: ErrorEvent; readonly status: number; readonly turnId: string | undefined }

export interface ClientOptions {
  readonly baseUrl: string
  /** `Authorization: Bearer …` for programs. */
  readonly token?: string
  /** Extra headers (e.g. a cookie and `X-CSRF-Token` in a browser-like client). */
  readonly headers?: Record<string, string>
  readonly fetch?: typeof fetch
}

export interface StreamRequestBody {
  readonly uri: string
  readonly model_id: string
  readonly message: string
  readonly history?: ReadonlyArray<ChatMessage>
}

export class KnowagentApiError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

const API = '/api/v1/knowledge-agent'

function headersFor(options: ClientOptions, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers, ...extra }
}

async function failureOf(response: Response): Promise<KnowagentApiError> {
  const text = await response.text().catch(() => '')
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } }
    return new KnowagentApiError(response.status, body.error?.code ?? 'http_error', body.error?.message ?? text.slice(0, 500))
  } catch {
    return new KnowagentApiError(response.status, 'http_error', text.slice(0, 500) || response.statusText)
  }
}

export function createKnowagentClient(options: ClientOptions) {
  const doFetch = options.fetch ?? fetch
  const base = options.baseUrl.replace(/\/$/, '')

  async function getOptions() {
    const response = await doFetch(`${base}${API}/options`, { headers: headersFor(options) })
    if (!response.ok) throw await failureOf(response)
    return (await response.json()) as {
      models: Array<{ id: string; name: string; profile: string; context_window: number; supports_native_tool_calling: boolean; supports_reasoning_effort: boolean }>
      default_model_id: string
    }
  }

  async function command(body: { command: string; uri: string; offset?: number; limit?: number; query?: string }) {
    const response = await doFetch(`${base}${API}/command`, {
      method: 'POST',
      headers: headersFor(options, { 'content-type': 'application/json' }),
      body: JSON.stringify(body),
    })
    if (!response.ok) throw await failureOf(response)
    return (await response.json()) as { command: string; result: unknown; summary: string }
  }

  async function stream(body: StreamRequestBody, { signal, handlers = {} }: { signal?: AbortSignal; handlers?: StreamHandlers } = {}): Promise<StreamOutcome> {
    let text = ''
    let thinking = ''
    let turnId: string | undefined
    let response: Response | undefined
    const fail = (error: ErrorEvent): StreamOutcome => ({ ok: false, text, thinking, status: response?.status ?? 0, turnId, error })
    try {
      response = await doFetch(`${base}${API}/stream`, {
        method: 'POST',
        headers: headersFor(options, { 'content-type': 'application/json', accept: 'text/event-stream' }),
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      const aborted = signal?.aborted === true
      return fail({ code: aborted ? 'cancelled' : 'network', message: aborted ? 'stopped by the client' : String((error as Error).message) })
    }
    turnId = response.headers.get('x-turn-id') ?? undefined
    if (!response.ok || !response.body) {
      const failure = await failureOf(response)
      return fail({ code: failure.code, message: failure.message })
    }
    try {
      for await (const event of decodeSseStream(response.body)) {
        let wire: WireEvent | undefined
        try {
          wire = readWireEvent(event.event, event.data)
        } catch {
          return fail({ code: 'stream.protocol', message: `unreadable ${event.event} event`, partial: text })
        }
        switch (wire?.event) {
          case 'delta':
            text += wire.data.text
            handlers.onDelta?.(wire.data)
            break
          case 'thinking':
            thinking += wire.data.text
            handlers.onThinking?.(wire.data)
            break
          case 'tool':
            handlers.onTool?.(wire.data)
            break
          case 'context':
            handlers.onContext?.(wire.data)
            break
          case 'warning':
            handlers.onWarning?.(wire.data)
            break
          case 'done':
            return { ok: true, text, thinking, done: wire.data, turnId }
          case 'error':
            return fail(wire.data)
          case undefined:
            break // unknown events are ignored: new ones may be added
        }
      }
    } catch (error) {
      const aborted = signal?.aborted === true
      return fail({ code: aborted ? 'cancelled' : 'stream.interrupted', message: aborted ? 'stopped by the client' : `the stream broke: ${(error as Error).message}`, partial: text })
    }
    return fail({ code: 'stream.incomplete', message: 'the stream ended without a done or error event', partial: text })
  }

  return { getOptions, command, stream }
}
