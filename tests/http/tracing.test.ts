// Traces (issue 40): `knowagent serve`'s own start-up (startServer) with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a tiny OTLP/HTTP receiver run here; one turn with a tool call; the spans it received
// form the tree request → turn → model call / tool call → provider request / database statement,
// with the turn id and model id as attributes and nothing a user wrote. Without the variable,
// nothing is created: no provider, so every span is a no-op.
import { createServer, type Server } from 'node:http'
import { trace } from '@opentelemetry/api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/effects/config/app-config.ts'
import { createLogger } from '../../src/effects/logging/logger.ts'
import { startTracing } from '../../src/effects/observability/tracing.ts'
import { type RunningServer, startServer } from '../../src/server.ts'
import { scriptedModel, type ScriptedProvider, startScriptedProvider, streamScript, textAnswerSse, toolCallsSse } from '../support/scripted-provider.ts'
import { createPostgresDatabase } from '../support/test-database.ts'
import { createApiTokenFor, createUser } from '../../src/effects/auth/users.ts'
import { TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'
import { waitUntil } from '../support/wait-until.ts'

interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: Record<string, unknown>
}

const SECRET = 'tracing-secret-0123456789'

/** The OTLP/HTTP JSON a receiver gets: resourceSpans → scopeSpans → spans, attributes as key/value pairs. */
function spansOf(body: unknown): ReceivedSpan[] {
  const out: ReceivedSpan[] = []
  for (const resource of (body as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> }).resourceSpans ?? []) {
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        const attributes: Record<string, unknown> = {}
        for (const { key, value } of (span.attributes as Array<{ key: string; value: Record<string, unknown> }>) ?? []) attributes[key] = Object.values(value)[0]
        out.push({ traceId: String(span.traceId), spanId: String(span.spanId), parentSpanId: span.parentSpanId ? String(span.parentSpanId) : undefined, name: String(span.name), attributes })
      }
    }
  }
  return out
}

describe('traces over OTLP/HTTP', () => {
  let receiver: Server
  let receiverUrl: string
  const received: ReceivedSpan[] = []
  const contentTypes = new Set<string>()
  let provider: ScriptedProvider
  let database: { url: string; drop: () => Promise<void> }
  let running: RunningServer | undefined

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        contentTypes.add(String(req.headers['content-type']))
        if (req.url === '/v1/traces') received.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const address = receiver.address()
    receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
    provider = await startScriptedProvider()
    database = await createPostgresDatabase()
  })
  afterAll(async () => {
    await running?.shutdown()
    await provider?.close()
    await database?.drop()
    await new Promise<void>((resolve) => receiver?.close(() => resolve()))
  })

  it('sends the span tree of a turn with a tool call: request → turn → steps → provider requests and statements', async () => {
    const base = loadConfig({
      env: { DATABASE_URL: database.url, KNOWAGENT_SECRET: SECRET, PORT: '0', KNOWAGENT_DATA_DIR: '/nonexistent', KNOWAGENT_DEMO_PASSWORD: 'demo-password-1', OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl },
      cwd: '/',
    })
    const config = { ...base, file: { ...base.file, models: [scriptedModel(provider)] } }
    running = await startServer({ config, logger: createLogger({ level: 'error', write: () => {} }), announce: () => {} })
    const user = await createUser(running.database.db, { login: 'tracy', password: 'password-tracy', hashCost: TEST_PASSWORD_COST })
    const token = await createApiTokenFor(running.database.db, { secret: SECRET, login: 'tracy' })
    await putText(running.database.db, { owner: user, segments: ['notes', 'plan.md'], text: 'The launch is on Tuesday.' })

    provider.enqueue(streamScript(toolCallsSse([{ id: 'call_1', name: 'ls', arguments: { uri: 'kb://me/notes/' } }])), streamScript(textAnswerSse('It is on Tuesday.')))
    const res = await fetch(`${running.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'When is the secret launch?' }),
    })
    expect(await res.text()).toContain('event: done')
    const turnId = res.headers.get('x-turn-id')!
    const queued = await fetch(`${running.url}/api/v1/knowledge-agent/compile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uris: ['kb://me/notes/plan.md'], channel: 'llm', model_id: 'local' }),
    })
    expect(queued.status).toBe(201)
    const jobId = ((await queued.json()) as { jobs: Array<{ id: string }> }).jobs[0]!.id
    const jobStatus = async () =>
      ((await (await fetch(`${running!.url}/api/v1/knowledge-agent/jobs/${jobId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { job: { status: string } }).job.status
    await waitUntil(async () => (await jobStatus()) === 'succeeded', 'the compile job to succeed', { timeoutMs: 30_000 })
    await running.shutdown() // flushes what is buffered
    running = undefined

    expect([...contentTypes]).toEqual(['application/json'])
    const byId = new Map(received.map((span) => [span.spanId, span]))
    const parentOf = (span: ReceivedSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined)
    const turn = received.find((span) => span.name === 'turn' && span.attributes['knowagent.turn_id'] === turnId)!
    expect(turn).toBeDefined()
    expect(turn.attributes['knowagent.model_id']).toBe('remote')
    expect(turn.attributes['knowagent.turn_status']).toBe('done')
    const request = parentOf(turn)!
    expect(request.name).toBe('POST /api/v1/knowledge-agent/stream')
    expect(request.attributes['http.response.status_code']).toBe(200)

    const children = received.filter((span) => span.parentSpanId === turn.spanId)
    const names = children.map((span) => span.name)
    expect(names.filter((name) => name === 'model.call')).toHaveLength(2)
    expect(names).toContain('turn.prepare')
    const tool = children.find((span) => span.name === 'tool.call')!
    expect(tool.attributes).toMatchObject({ 'knowagent.tool': 'ls', 'knowagent.turn_id': turnId })
    for (const call of children.filter((span) => span.name === 'model.call')) {
      expect(call.attributes['knowagent.model_id']).toBe('remote')
      const requests = received.filter((span) => span.parentSpanId === call.spanId && span.name === 'provider.request')
      expect(requests).toHaveLength(1)
    }
    const statements = received.filter((span) => span.name === 'db.query' && span.parentSpanId === tool.spanId)
    expect(statements.length).toBeGreaterThan(0)
    expect(statements.every((span) => typeof span.attributes['db.query.text'] === 'string')).toBe(true)
    // a compile job: its attempt, under it the machine's stages
    const job = received.find((span) => span.name === 'compile.job' && span.attributes['knowagent.job_id'] === jobId)!
    expect(job).toBeDefined()
    const stages = received.filter((span) => span.parentSpanId === job.spanId).map((span) => span.name)
    expect(stages).toEqual(expect.arrayContaining(['begin', 'parse', 'summarise', 'publish']))
    // one trace, and nothing a user wrote or a token in any span
    expect(new Set([request, turn, ...children].map((span) => span.traceId)).size).toBe(1)
    const everything = JSON.stringify(received)
    for (const leak of ['secret launch', 'Tuesday', token, 'tracy']) expect(everything).not.toContain(leak)
  })

  it('creates nothing without an endpoint: every span is a no-op', () => {
    expect(startTracing({ env: {}, serviceName: 'knowagent' })).toBeUndefined()
    const span = trace.getTracer('knowagent').startSpan('anything')
    expect(span.isRecording()).toBe(false)
    span.end()
  })
})
