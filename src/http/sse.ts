// Server-sent events over an express response: headers sent at once (with the first events when
// they come in the same turn of the event loop), the events of one synchronous run in one write,
// keep-alive comments on idle, and a close that is safe to call twice.
import type { Response } from 'express'
import type { ServiceMetrics } from '../effects/observability/metrics.ts'

/** An event's `id:` (a turn's event number): what a client sends back as Last-Event-ID to resume after it. */
export type SseId = number | undefined

export interface SseWriter {
  readonly send: (event: string, data: unknown, id?: SseId) => boolean
  /** `send` for data already serialised as JSON (one line): the per-delta path, no object to stringify. */
  readonly sendJson: (event: string, json: string, id?: SseId) => boolean
  /** An unnamed message whose data is `text` as is (one `data:` line per line; htmx swaps it). */
  readonly sendText: (text: string, id?: SseId) => boolean
  /** A whole frame made elsewhere (a turn's event as numbered and stored: turn-events.ts), written as it is. */
  readonly sendFrame: (frame: string) => boolean
  readonly comment: (text: string) => void
  readonly close: () => void
  readonly closed: () => boolean
}

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no', // nginx must not buffer SSE
  Connection: 'keep-alive',
} as const

const idLine = (id: SseId): string => (id === undefined ? '' : `id: ${id}\n`)

/** One SSE frame. JSON never contains a raw newline, so `data` is always one line. */
export function formatSseEvent(event: string, data: unknown, id?: SseId): string {
  return `${idLine(id)}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}

/** An unnamed SSE message carrying text (HTML); every line, whatever its ending, becomes a `data:` line. */
export function formatSseText(text: string, id?: SseId): string {
  return idLine(id) + text.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`).join('') + '\n'
}

export function openSse(res: Response, { keepAliveMs = 15_000 }: { keepAliveMs?: number } = {}): SseWriter {
  res.status(200).set(SSE_HEADERS)
  // The headers leave with the first events when a turn's first event (its context) follows in
  // this turn of the event loop, as it does: one write to the socket fewer per turn start (each
  // costs the event loop ~0.2 ms on a busy machine); otherwise alone, before any I/O waits.
  const headers = setImmediate(() => {
    if (!res.headersSent && !res.writableEnded && !res.destroyed) res.flushHeaders()
  })
  res.socket?.setNoDelay(true) // each event leaves at once, no Nagle delay
  // The open-streams gauge: down when the response closes, however it ends (create-app.ts sets res.locals.metrics).
  const metrics = res.locals?.metrics as ServiceMetrics | undefined
  if (metrics?.enabled) res.once('close', metrics.streamOpened())
  let closed = false
  let lastWriteAt = performance.now()
  // One self-rearming timer per stream, not one per write: a write only records its time.
  const checkEveryMs = Math.max(5, Math.floor(keepAliveMs / 4))
  const timer = setInterval(() => {
    if (closed) return
    if (performance.now() - lastWriteAt >= keepAliveMs) write(': keep-alive\n\n')
  }, checkEveryMs)
  timer.unref()
  // Events produced in one synchronous run (every delta decoded from one read of the provider's
  // stream) leave in one `res.write`, flushed as a microtask: no delay, far less per-event work
  // in Node's http and stream layers when the provider sends bursts.
  let pending = ''
  let flushQueued = false
  const flush = (): void => {
    flushQueued = false
    if (pending === '') return
    const chunk = pending
    pending = ''
    if (!res.writableEnded && !res.destroyed) res.write(chunk)
    lastWriteAt = performance.now()
  }
  function write(chunk: string): boolean {
    if (closed || res.writableEnded || res.destroyed) return false
    pending += chunk
    if (!flushQueued) {
      flushQueued = true
      queueMicrotask(flush)
    }
    return true
  }
  return {
    send: (event, data, id) => write(formatSseEvent(event, data, id)),
    sendJson: (event, json, id) => write(`${idLine(id)}event: ${event}\ndata: ${json}\n\n`),
    sendText: (text, id) => write(formatSseText(text, id)),
    sendFrame: (frame) => write(frame),
    comment: (text) => void write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`),
    close: () => {
      if (closed) return
      closed = true
      clearInterval(timer)
      clearImmediate(headers)
      flush()
      if (!res.writableEnded && !res.destroyed) res.end()
    },
    closed: () => closed,
  }
}
