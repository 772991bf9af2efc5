// The benchmark's model provider: a local OpenAI-compatible `POST /v1/chat/completions` that
// streams the fixed answer (see protocol.ts) at a fixed pace per stream and records, for every
// answer delta, the `performance.now()` at which it was written to the socket. It runs in the
// orchestrator process, next to the clients, so send and receive times share one clock.
//
// Each stream is registered first (`register(id, plan)`); the provider recognises it by the
// `bench-stream-<id>` marker in whatever request body the system under test sends. In the
// tool-call variant the first request of a stream (no `"role":"tool"` message yet) gets a tool
// call, the second the answer.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { BENCH_MODEL, deltaText, findStreamId, TOOL_ARGUMENTS, TOOL_NAME, type Variant } from './protocol.ts'

export interface StreamPlan {
  readonly deltas: number
  /** Time between two frames of one stream; 0 = as fast as the socket takes them. */
  readonly intervalMs: number
  readonly variant: Variant
}

export interface StreamRecord {
  readonly plan: StreamPlan
  /** `performance.now()` when answer delta k was written (NaN until then). */
  readonly sentAt: Float64Array
  /** `performance.now()` when the stream's first model request arrived (NaN until then): the system's turn start is over. */
  firstRequestAt: number
  toolRequests: number
  answerRequests: number
  /** The answer request carried a tool result (the tool really ran and its output was sent back). */
  answerHadToolResult: boolean
  /** Text of the answer request's tool message, for the report. */
  toolResultSample: string | undefined
}

export interface BenchProvider {
  /** e.g. http://127.0.0.1:41234/v1 */
  readonly baseUrl: string
  readonly register: (id: number, plan: StreamPlan) => StreamRecord
  readonly record: (id: number) => StreamRecord | undefined
  readonly forget: (id: number) => void
  /** Requests that named no registered stream (must stay 0). */
  readonly strayRequests: () => number
  readonly activeStreams: () => number
  readonly close: () => Promise<void>
}

const encoder = new TextEncoder()
const frame = (payload: unknown): Uint8Array => encoder.encode(`data: ${JSON.stringify(payload)}\n\n`)
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: 'chatcmpl-bench',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: BENCH_MODEL,
  choices: [{ index: 0, delta, finish_reason: finishReason }],
})
const DONE = encoder.encode('data: [DONE]\n\n')
const USAGE = { prompt_tokens: 100, completion_tokens: 0, total_tokens: 100 }

/** The frames of one response, grouped into steps: one step is written per pacing tick. */
function answerSteps(deltaFrames: ReadonlyArray<Uint8Array>): Uint8Array[][] {
  const steps: Uint8Array[][] = deltaFrames.map((bytes) => [bytes])
  steps[0]?.unshift(frame(chunk({ role: 'assistant', content: '' })))
  const finish = frame({ ...chunk({}, 'stop'), usage: { ...USAGE, completion_tokens: deltaFrames.length, total_tokens: 100 + deltaFrames.length } })
  steps.at(-1)?.push(finish, DONE)
  return steps
}

function toolCallSteps(): Uint8Array[][] {
  const half = Math.floor(TOOL_ARGUMENTS.length / 2)
  return [
    [frame(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_bench_1', type: 'function', function: { name: TOOL_NAME, arguments: '' } }] }))],
    [frame(chunk({ tool_calls: [{ index: 0, function: { arguments: TOOL_ARGUMENTS.slice(0, half) } }] }))],
    [frame(chunk({ tool_calls: [{ index: 0, function: { arguments: TOOL_ARGUMENTS.slice(half) } }] }))],
    [frame({ ...chunk({}, 'tool_calls'), usage: { ...USAGE, completion_tokens: 3, total_tokens: 103 } }), DONE],
  ]
}

interface Playing {
  readonly res: ServerResponse
  readonly steps: ReadonlyArray<ReadonlyArray<Uint8Array>>
  /** Set for the answer: step k carries delta k. */
  readonly sentAt: Float64Array | undefined
  readonly intervalMs: number
  next: number
  due: number
}

export async function startBenchProvider(): Promise<BenchProvider> {
  const records = new Map<number, StreamRecord>()
  const deltaFrameCache: Uint8Array[] = []
  const deltaFrames = (count: number): Uint8Array[] => {
    for (let index = deltaFrameCache.length; index < count; index += 1) deltaFrameCache.push(frame(chunk({ content: deltaText(index) })))
    return deltaFrameCache.slice(0, count)
  }
  const answerCache = new Map<number, Uint8Array[][]>()
  const answerFor = (deltas: number) => {
    let steps = answerCache.get(deltas)
    if (!steps) answerCache.set(deltas, (steps = answerSteps(deltaFrames(deltas))))
    return steps
  }
  const toolSteps = toolCallSteps()
  let stray = 0

  // One scheduler for every paced stream: each tick writes every step that is due, so a late
  // tick sends the missed steps at once and the average pace stays exact.
  const playing = new Set<Playing>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let timerDue = Infinity

  const writeStep = (play: Playing): boolean => {
    const step = play.steps[play.next]!
    if (play.sentAt && play.next < play.sentAt.length) play.sentAt[play.next] = performance.now()
    let ok = true
    for (const bytes of step) ok = play.res.write(bytes)
    play.next += 1
    if (play.next === play.steps.length) play.res.end()
    return ok
  }

  const tick = (): void => {
    timer = undefined
    timerDue = Infinity
    const now = performance.now()
    let nextDue = Infinity
    for (const play of playing) {
      if (play.res.destroyed) {
        playing.delete(play)
        continue
      }
      while (play.next < play.steps.length && play.due <= now) {
        writeStep(play)
        play.due += play.intervalMs
      }
      if (play.next === play.steps.length) playing.delete(play)
      else nextDue = Math.min(nextDue, play.due)
    }
    arm(nextDue)
  }

  const arm = (due: number): void => {
    if (due === Infinity || due >= timerDue) return
    if (timer) clearTimeout(timer)
    timerDue = due
    timer = setTimeout(tick, Math.max(0, due - performance.now()))
  }

  /** Unpaced: write as fast as the socket drains, yielding between bursts so streams interleave. */
  const blast = (play: Playing): void => {
    const pump = (): void => {
      for (let burst = 0; burst < 64 && play.next < play.steps.length; burst += 1) {
        if (play.res.destroyed) return
        if (!writeStep(play)) {
          if (play.next < play.steps.length) play.res.once('drain', pump)
          return
        }
      }
      if (play.next < play.steps.length) setImmediate(pump)
    }
    pump()
  }

  const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
    const arrivedAt = performance.now()
    void readBody(req).then((body) => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        // knowagent-observed exports its spans here: received and discarded, as a collector would
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        return
      }
      const id = findStreamId(body)
      const record = id === undefined ? undefined : records.get(id)
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions') || record === undefined) {
        stray += 1
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no registered bench stream in ${req.method} ${req.url}` } }))
        return
      }
      if (Number.isNaN(record.firstRequestAt)) record.firstRequestAt = arrivedAt
      const wantsTool = record.plan.variant === 'tools' && !body.includes('"role":"tool"')
      if (wantsTool) record.toolRequests += 1
      else {
        record.answerRequests += 1
        if (record.plan.variant === 'tools') {
          const parsed = JSON.parse(body) as { messages?: Array<{ role?: string; content?: unknown }> }
          const toolMessage = parsed.messages?.find((message) => message.role === 'tool')
          const content = typeof toolMessage?.content === 'string' ? toolMessage.content : JSON.stringify(toolMessage?.content)
          record.toolResultSample = content?.slice(0, 160)
          record.answerHadToolResult = content !== undefined && content.includes('kb://users/bench/notes/')
        }
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      const play: Playing = {
        res,
        steps: wantsTool ? toolSteps : answerFor(record.plan.deltas),
        sentAt: wantsTool ? undefined : record.sentAt,
        intervalMs: record.plan.intervalMs,
        next: 0,
        due: performance.now(),
      }
      if (play.intervalMs <= 0) blast(play)
      else {
        playing.add(play)
        tick()
      }
    })
  })
  const sockets = new Set<Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    register: (id, plan) => {
      const record: StreamRecord = {
        plan,
        sentAt: new Float64Array(plan.deltas).fill(Number.NaN),
        firstRequestAt: Number.NaN,
        toolRequests: 0,
        answerRequests: 0,
        answerHadToolResult: false,
        toolResultSample: undefined,
      }
      records.set(id, record)
      return record
    },
    record: (id) => records.get(id),
    forget: (id) => void records.delete(id),
    strayRequests: () => stray,
    activeStreams: () => playing.size,
    close: async () => {
      if (timer) clearTimeout(timer)
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', reject)
  })
}
