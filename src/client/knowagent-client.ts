// `knowagent/client`: a small typed client for the JSON + SSE API. It decodes the stream with
// the project's SSE decoder and follows the same rules as the browser: a stream cut before its
// terminal `done` or `error` event is picked up again from the last event received (GET
// turns/:id/events with Last-Event-ID, on any instance), and when it cannot be, it is a failure
// that keeps the text received so far.
import { decodeSseStream } from '../sse/sse-decoder.ts'
import type { ChatMessage } from '../machines/index.ts'
import { type ContextEvent, type DeltaEvent, type DoneEvent, type ErrorEvent, readWireEvent, type ThinkingEvent, type ToolEvent, type WarningEvent, type WireEvent } from './wire-events.ts'

export type { ContextEvent, DeltaEvent, DoneEvent, ErrorEvent, ThinkingEvent, ToolEvent, WarningEvent } from './wire-events.ts'
export type { ChatMessage } from '../machines/index.ts'

export interface StreamHandlers {
  /** The turn was admitted: its id, for `stop` (from anywhere) before the stream ends. */
  readonly onStart?: (turn: { readonly turnId: string }) => void
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
  /**
   * A stream cut before its terminal event is picked up again where it stopped, up to this many
   * times in a row (waiting 250 ms, 500 ms, 1 s… before each); 0: never. Default 3.
   */
  readonly resumeAttempts?: number
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

  /** Stops one of your turns wherever it runs (POST turns/:id/stop): its stream ends with its one terminal event. */
  async function stop(turnId: string): Promise<{ turn_id: string; status: string }> {
    const response = await doFetch(`${base}${API}/turns/${encodeURIComponent(turnId)}/stop`, { method: 'POST', headers: headersFor(options) })
    if (!response.ok) throw await failureOf(response)
    return (await response.json()) as { turn_id: string; status: string }
  }

  async function stream(body: StreamRequestBody, { signal, handlers = {} }: { signal?: AbortSignal; handlers?: StreamHandlers } = {}): Promise<StreamOutcome> {
    let text = ''
    let thinking = ''
    let turnId: string | undefined
    let lastEventId = ''
    let response: Response | undefined
    const fail = (error: ErrorEvent): StreamOutcome => ({ ok: false, text, thinking, status: response?.status ?? 0, turnId, error })
    const cancelled = (): StreamOutcome => fail({ code: 'cancelled', message: 'stopped by the client', partial: text })
    try {
      response = await doFetch(`${base}${API}/stream`, {
        method: 'POST',
        headers: headersFor(options, { 'content-type': 'application/json', accept: 'text/event-stream' }),
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      return signal?.aborted === true ? cancelled() : fail({ code: 'network', message: String((error as Error).message) })
    }
    turnId = response.headers.get('x-turn-id') ?? undefined
    if (!response.ok || !response.body) {
      const failure = await failureOf(response)
      return fail({ code: failure.code, message: failure.message })
    }
    if (turnId !== undefined) handlers.onStart?.({ turnId })

    /** Reads events until the terminal one (the outcome) or until the stream ends or breaks without it (why). */
    const follow = async (events: ReadableStream<Uint8Array>): Promise<{ readonly outcome: StreamOutcome } | { readonly cut: ErrorEvent }> => {
      try {
        for await (const event of decodeSseStream(events)) {
          let wire: WireEvent | undefined
          try {
            wire = readWireEvent(event.event, event.data)
          } catch {
            return { outcome: fail({ code: 'stream.protocol', message: `unreadable ${event.event} event`, partial: text }) }
          }
          if (event.id !== '') lastEventId = event.id
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
              return { outcome: { ok: true, text, thinking, done: wire.data, turnId } }
            case 'error':
              return { outcome: fail(wire.data) }
            case undefined:
              break // unknown events are ignored: new ones may be added
          }
        }
      } catch (error) {
        if (signal?.aborted === true) return { outcome: cancelled() }
        return { cut: { code: 'stream.interrupted', message: `the stream broke: ${(error as Error).message}`, partial: text } }
      }
      return { cut: { code: 'stream.incomplete', message: 'the stream ended without a done or error event', partial: text } }
    }

    const attempts = options.resumeAttempts ?? 3
    let events: ReadableStream<Uint8Array> = response.body
    for (let attempt = 1; ; attempt++) {
      const before = lastEventId
      const read = await follow(events)
      if ('outcome' in read) return read.outcome
      if (lastEventId !== before) attempt = 1 // it got further: a fresh run of attempts
      if (turnId === undefined || attempt > attempts) return fail(read.cut)
      const resumed = await resumeAfter(turnId, lastEventId, 250 * 2 ** (attempt - 1), signal)
      if (signal?.aborted === true) return cancelled()
      if (resumed instanceof KnowagentApiError) {
        // its events are gone (410), it is not yours (404), nothing is left (204): what arrived is all there is;
        // the network, a busy or draining instance (5xx, 429): another attempt, if any are left
        const final = resumed.status === 204 || (resumed.status >= 400 && resumed.status < 500 && resumed.status !== 408 && resumed.status !== 429)
        if (final) return fail({ ...read.cut, message: `${read.cut.message}; picking it up again was refused: ${resumed.code}` })
        continue
      }
      events = resumed
    }
  }

  /** GET turns/:id/events after `lastEventId`, once `waitMs` has passed: the event stream, or why not (status 0: the network). */
  async function resumeAfter(turnId: string, lastEventId: string, waitMs: number, signal: AbortSignal | undefined): Promise<ReadableStream<Uint8Array> | KnowagentApiError> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, waitMs)
      signal?.addEventListener('abort', done, { once: true })
      function done() {
        clearTimeout(timer)
        signal?.removeEventListener('abort', done)
        resolve()
      }
    })
    if (signal?.aborted === true) return new KnowagentApiError(0, 'cancelled', 'stopped by the client')
    try {
      const response = await doFetch(`${base}${API}/turns/${encodeURIComponent(turnId)}/events`, {
        headers: headersFor(options, { accept: 'text/event-stream', ...(lastEventId === '' ? {} : { 'last-event-id': lastEventId }) }),
        ...(signal ? { signal } : {}),
      })
      if (response.ok && response.status !== 204 && response.body) return response.body
      return response.status === 204 ? new KnowagentApiError(204, 'no_events', 'nothing after the last event') : await failureOf(response)
    } catch (error) {
      return new KnowagentApiError(0, 'network', String((error as Error).message))
    }
  }

  return { getOptions, command, stream, stop }
}
