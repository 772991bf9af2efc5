// The benchmark client: one HTTP request per stream (node:http, keep-alive), the body decoded
// incrementally as it arrives with the project's SSE decoder, and for every answer delta the
// receive time minus the provider's send time. It lives in the orchestrator process, with the
// provider, so both times come from the same `performance.now()` clock.
import { Agent, request } from 'node:http'
import { createSseDecoder, type SseEvent } from '../../src/sse/sse-decoder.ts'
import { DELTA_BYTES, speaksKnowagent, type SystemName, type Variant } from './protocol.ts'

export interface StreamTarget {
  readonly system: SystemName
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export interface StreamOutcome {
  readonly status: number
  readonly startedAt: number
  readonly endedAt: number
  /** First answer delta decoded, from request start (ms). */
  readonly ttfdMs: number
  /** Last answer delta decoded − first (ms). */
  readonly answerSpanMs: number
  /** Receive − send for each delta, in order (ms). */
  readonly latencyMs: Float64Array
  /** The provider's send time of each delta (performance.now(), ms). */
  readonly sentAt: Float64Array
  readonly text: string
  /** Answer-text events decoded (a system may merge or split deltas). */
  readonly textEvents: number
  readonly terminalEvents: number
  readonly terminalKinds: ReadonlyArray<string>
  readonly errors: ReadonlyArray<string>
  /** Tool results the system reported on its stream (knowagent `tool` end ok, AI SDK tool output). */
  readonly toolResultsShown: number
  readonly bytes: number
}

const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 })

/** Extracts answer text, terminal events, errors and tool results from one decoded event. */
interface Sink {
  text: (piece: string) => void
  terminal: (kind: string) => void
  error: (message: string) => void
  toolResult: () => void
}

type EventReader = (event: SseEvent, sink: Sink) => void

const readers: Record<Exclude<SystemName, 'knowagent-observed' | 'floor'>, EventReader> = {
  // The provider's own chat-completion chunks, passed through untouched.
  raw: (event, sink) => {
    if (event.data === '[DONE]') return sink.terminal('[DONE]')
    const parsed = JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: unknown } }>; error?: { message?: string } }
    if (parsed.error) return sink.error(parsed.error.message ?? 'provider error')
    const content = parsed.choices?.[0]?.delta?.content
    if (typeof content === 'string' && content !== '') sink.text(content)
  },
  // knowagent: named events `delta` {text}, `tool`, `context`, … and one `done` or `error`.
  knowagent: (event, sink) => {
    switch (event.event) {
      case 'delta':
        return sink.text((JSON.parse(event.data) as { text: string }).text)
      case 'tool': {
        const data = JSON.parse(event.data) as { phase?: string; ok?: boolean }
        if (data.phase === 'end' && data.ok === true) sink.toolResult()
        return
      }
      case 'done':
        return sink.terminal('done')
      case 'error': {
        const data = JSON.parse(event.data) as { code?: string; message?: string }
        sink.terminal('error')
        return sink.error(`${data.code}: ${data.message}`)
      }
      default:
        return
    }
  },
  // AI SDK UI message stream: `data: {"type": …}` parts, then `data: [DONE]`.
  'ai-sdk': (event, sink) => {
    if (event.data === '[DONE]') return
    const part = JSON.parse(event.data) as { type: string; delta?: string; errorText?: string }
    switch (part.type) {
      case 'text-delta':
        return sink.text(part.delta ?? '')
      case 'tool-output-available':
        return sink.toolResult()
      case 'finish':
        return sink.terminal('finish')
      case 'error':
        sink.terminal('error')
        return sink.error(part.errorText ?? 'error part')
      default:
        return
    }
  },
}

export function runStream({
  target,
  sentAt,
  timeoutMs,
}: {
  readonly target: StreamTarget
  /** The provider's send times for this stream (filled as it writes). */
  readonly sentAt: Float64Array
  readonly timeoutMs: number
}): Promise<StreamOutcome> {
  const deltas = sentAt.length
  const latencyMs = new Float64Array(deltas).fill(Number.NaN)
  const pieces: string[] = []
  let textLength = 0
  let completed = 0 // 8-byte deltas fully received
  let firstDeltaAt = Number.NaN
  let lastDeltaAt = Number.NaN
  let textEvents = 0
  let toolResultsShown = 0
  const terminalKinds: string[] = []
  const errors: string[] = []
  let bytes = 0
  let receivedAt = 0
  const read = readers[speaksKnowagent(target.system) ? 'knowagent' : (target.system as 'raw' | 'ai-sdk')]
  const sink: Sink = {
    text: (piece) => {
      textEvents += 1
      pieces.push(piece)
      textLength += piece.length
      const nowComplete = Math.min(deltas, Math.floor(textLength / DELTA_BYTES))
      if (completed === 0 && nowComplete > 0) firstDeltaAt = receivedAt
      for (; completed < nowComplete; completed += 1) latencyMs[completed] = receivedAt - sentAt[completed]!
      lastDeltaAt = receivedAt
    },
    terminal: (kind) => void terminalKinds.push(kind),
    error: (message) => void errors.push(message),
    toolResult: () => void (toolResultsShown += 1),
  }
  const decoder = createSseDecoder()
  const startedAt = performance.now()

  return new Promise<StreamOutcome>((resolve, reject) => {
    const finish = (status: number) => {
      clearTimeout(timer)
      for (const event of decoder.end()) read(event, sink)
      resolve({
        status,
        startedAt,
        endedAt: performance.now(),
        ttfdMs: firstDeltaAt - startedAt,
        answerSpanMs: lastDeltaAt - firstDeltaAt,
        latencyMs,
        sentAt,
        text: pieces.join(''),
        textEvents,
        terminalEvents: terminalKinds.length,
        terminalKinds,
        errors,
        toolResultsShown,
        bytes,
      })
    }
    const req = request(target.url, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...target.headers } })
    const timer = setTimeout(() => req.destroy(new Error(`stream timed out after ${timeoutMs} ms (${completed}/${deltas} deltas)`)), timeoutMs)
    req.on('socket', (socket) => socket.setNoDelay(true))
    req.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    req.on('response', (res) => {
      const status = res.statusCode ?? 0
      if (status !== 200) {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (part: string) => (text += part))
        res.on('end', () => {
          errors.push(`HTTP ${status}: ${text.slice(0, 300)}`)
          finish(status)
        })
        return
      }
      res.on('data', (part: Buffer) => {
        receivedAt = performance.now()
        bytes += part.byteLength
        for (const event of decoder.push(part)) read(event, sink)
      })
      res.on('end', () => finish(status))
      res.on('error', (error) => {
        clearTimeout(timer)
        reject(error)
      })
    })
    req.end(target.body)
  })
}

export function destroyClientAgent(): void {
  agent.destroy()
}

/**
 * Closes the client's idle keep-alive connections. A phase that reused one left idle since an
 * earlier phase could send its request just as the server closed it (Node's servers close an idle
 * connection after 5 s): "socket hang up", a failure of the harness, not of the system. Every
 * phase starts on fresh connections instead, the same for every system.
 */
export function closeIdleClientConnections(): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy()
}

/** Checks one stream against the fixed answer; returns what is wrong ([] when all is right). */
export function verifyStream({
  outcome,
  expectedText,
  deltas,
  variant,
  system,
  toolRequests,
  answerRequests,
  answerHadToolResult,
}: {
  readonly outcome: StreamOutcome
  readonly expectedText: string
  readonly deltas: number
  readonly variant: Variant
  readonly system: SystemName
  readonly toolRequests: number
  readonly answerRequests: number
  readonly answerHadToolResult: boolean
}): string[] {
  const problems: string[] = []
  if (outcome.status !== 200) problems.push(`HTTP status ${outcome.status}`)
  if (outcome.errors.length > 0) problems.push(`errors on the stream: ${outcome.errors.join(' | ')}`)
  const received = Math.floor(outcome.text.length / DELTA_BYTES)
  if (received !== deltas) problems.push(`received ${received} of ${deltas} deltas`)
  if (outcome.text !== expectedText) {
    let at = 0
    while (at < outcome.text.length && outcome.text[at] === expectedText[at]) at += 1
    problems.push(`text differs from the fixed answer at byte ${at}: got ${JSON.stringify(outcome.text.slice(at, at + 24))}, expected ${JSON.stringify(expectedText.slice(at, at + 24))}`)
  }
  if (outcome.terminalEvents !== 1) problems.push(`expected exactly one terminal event, got ${outcome.terminalEvents} (${outcome.terminalKinds.join(', ') || 'none'})`)
  else if (outcome.terminalKinds[0] === 'error') problems.push('the terminal event is an error')
  if (outcome.latencyMs.some((value) => Number.isNaN(value))) problems.push('some deltas have no latency sample')
  const expectedToolRequests = variant === 'tools' ? 1 : 0
  if (toolRequests !== expectedToolRequests) problems.push(`the provider saw ${toolRequests} tool-call requests, expected ${expectedToolRequests}`)
  if (answerRequests !== 1) problems.push(`the provider saw ${answerRequests} answer requests, expected 1`)
  if (variant === 'tools') {
    if (!answerHadToolResult) problems.push('the answer request did not carry the tool result')
    if (system !== 'raw' && outcome.toolResultsShown !== 1) problems.push(`the stream showed ${outcome.toolResultsShown} tool results, expected 1`)
  }
  return problems
}
