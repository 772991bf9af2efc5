// GET /metrics (issue 40): scraped before and after scripted turns, a tool call, a provider failure
// and a compile job, with the exact changes each makes; who may scrape (off by default, the token,
// this machine only); labels that never hold a user, a URI or a made-up tool name; and the request
// id an error body and the request's log lines share.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chatCompletionSse, scriptedModel, streamScript, textAnswerSse, toolCallsSse } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import type { ScriptedProvider } from '../support/scripted-provider.ts'
import { putText } from '../support/text-file.ts'
import { waitUntil } from '../support/wait-until.ts'

const METRICS_TOKEN = 'metrics-token-0123456789'
const API = '/api/v1/knowledge-agent'

/** Every sample of a scrape: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    out.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return out
}

describe('/metrics with metrics on', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let close: () => Promise<void>
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  const scrape = async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
    return res.text()
  }
  /** What one action changed: after − before, for the series that moved. */
  const changesOf = async (action: () => Promise<void>) => {
    const before = samples(await scrape())
    await action()
    const after = samples(await scrape())
    return (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0)
  }
  const ask = async (message: string) => {
    const res = await fetch(`${server.url}${API}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message }),
    })
    expect(res.status).toBe(200)
    return res.text()
  }

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      configure: (config) => ({ ...config, metrics: { enabled: true, token: METRICS_TOKEN } }),
      models: (provider) => [scriptedModel(provider, { maxRetries: 1 })],
      modelRegistry: { retryBaseDelayMs: 1 },
      compile: { worker: true },
    }))
    alice = await addUserWithToken(server, 'alice')
    await putText(server.database.db, { owner: alice.user, segments: ['notes', 'plan.md'], text: '# Plan\n\nThe launch is on Tuesday.' })
  })
  afterAll(() => close?.())

  it('refuses a scraper without the token, or with a wrong one', async () => {
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401)
    const wrong = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token' } })
    expect(wrong.status).toBe(401)
    // a signed-in user's own API token is not the metrics token
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${alice.token}` } })).status).toBe(401)
  })

  it('counts a turn with one tool call: started, first delta, ended done, two provider requests, one ls', async () => {
    const change = await changesOf(async () => {
      provider.enqueue(streamScript(toolCallsSse([{ id: 'call_1', name: 'ls', arguments: { uri: 'kb://me/notes/' } }])), streamScript(textAnswerSse('The launch is on Tuesday.')))
      const body = await ask('When is the launch?')
      expect(body).toContain('event: done')
    })
    expect(change('knowagent_turns_started_total{model="remote"}')).toBe(1)
    expect(change('knowagent_turns_ended_total{model="remote",outcome="done",code="none"}')).toBe(1)
    expect(change('knowagent_turn_first_delta_seconds_count{model="remote"}')).toBe(1)
    expect(change('knowagent_turn_duration_seconds_count{model="remote",outcome="done"}')).toBe(1)
    expect(change('knowagent_turn_model_steps_sum{model="remote"}')).toBe(2)
    expect(change('knowagent_turn_tool_calls_sum{model="remote"}')).toBe(1)
    expect(change('knowagent_provider_requests_total{model="remote",result="ok"}')).toBe(2)
    expect(change('knowagent_tool_calls_total{tool="ls",result="ok"}')).toBe(1)
    expect(change('knowagent_http_requests_total{method="POST",route="/api/v1/knowledge-agent/stream",status="200"}')).toBe(1)
  })

  it('counts the tool calls of an MCP client as a turn\'s; a made-up name is refused, never a label', async () => {
    const call = (id: number, name: string) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { uri: 'kb://me/notes/' } } }),
      }).then(async (res) => [res.status, await res.text()] as const)
    const change = await changesOf(async () => {
      expect((await call(1, 'ls'))[0]).toBe(200)
      expect((await call(2, 'made_up_tool_7c1e'))[0]).toBe(200)
    })
    expect(change('knowagent_tool_calls_total{tool="ls",result="ok"}')).toBe(1)
    expect(await scrape()).not.toContain('made_up_tool')
  })

  it('counts a provider failure by its status and the failed turn by its code', async () => {
    const change = await changesOf(async () => {
      provider.enqueue({ kind: 'response', status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'bad request' } }) })
      const body = await ask('Anything?')
      expect(body).toContain('"code":"provider.http"')
    })
    expect(change('knowagent_provider_requests_total{model="remote",result="http_400"}')).toBe(1)
    expect(change('knowagent_provider_retries_total{model="remote"}')).toBe(0)
    expect(change('knowagent_turns_ended_total{model="remote",outcome="failed",code="provider.http"}')).toBe(1)
    expect(change('knowagent_turns_ended_total{model="remote",outcome="done",code="none"}')).toBe(0)
  })

  it('counts a retried request: a 503 then an answer', async () => {
    const change = await changesOf(async () => {
      provider.enqueue({ kind: 'response', status: 503, body: 'busy', headers: { 'retry-after': '0' } }, streamScript(textAnswerSse('Fine.')))
      expect(await ask('Again?')).toContain('event: done')
    })
    expect(change('knowagent_provider_requests_total{model="remote",result="http_503"}')).toBe(1)
    expect(change('knowagent_provider_requests_total{model="remote",result="ok"}')).toBe(1)
    expect(change('knowagent_provider_retries_total{model="remote"}')).toBe(1)
  })

  it('shows a compile job in the queue gauges once it has run', async () => {
    const change = await changesOf(async () => {
      const res = await fetch(`${server.url}${API}/compile`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ uris: ['kb://me/notes/plan.md'], channel: 'llm', model_id: 'local' }),
      })
      expect(res.status).toBe(201)
      const id = ((await res.json()) as { jobs: Array<{ id: string }> }).jobs[0]!.id
      await waitUntil(
        async () => ((await (await fetch(`${server.url}${API}/jobs/${id}`, { headers: { authorization: `Bearer ${alice.token}` } })).json()) as { job: { status: string } }).job.status === 'succeeded',
        'the compile job to succeed',
        { timeoutMs: 30_000 },
      )
    })
    expect(change('knowagent_compile_jobs{status="succeeded"}')).toBe(1)
    expect(change('knowagent_compile_queue_depth')).toBe(0)
  })

  it('never makes a user, a URI, a message or a made-up tool name a label', async () => {
    const bob = await addUserWithToken(server, 'bob-the-labeller')
    const before = samples(await scrape())
    provider.enqueue(
      streamScript(toolCallsSse([{ id: 'call_x', name: 'steal_everything_9f8e7d', arguments: { uri: 'kb://users/alice/secret-plans/' } }])),
      streamScript(chatCompletionSse([{ text: 'I cannot.' }, { finish: 'stop' }, 'done'])),
    )
    const res = await fetch(`${server.url}${API}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'a very particular question 4b1d' }),
    })
    expect(await res.text()).toContain('event: done')
    await fetch(`${server.url}/workspace/file?uri=${encodeURIComponent('kb://users/bob-the-labeller/private/diary.md')}`, { headers: { authorization: `Bearer ${bob.token}` } })
    const text = await scrape()
    for (const leak of ['bob-the-labeller', 'alice', 'kb://', 'secret-plans', 'diary', '4b1d', 'steal_everything', bob.user.id, alice.user.id]) expect(text).not.toContain(leak)
    // the turn itself is counted (the made-up call was refused, never run: no tool series for it)
    const ended = 'knowagent_turns_ended_total{model="remote",outcome="done",code="none"}'
    expect(samples(text).get(ended)! - before.get(ended)!).toBe(1)
    // every label name is one of the bounded set
    const labelNames = new Set([...text.matchAll(/[{,]([a-z_]+)="/g)].map((match) => match[1]))
    expect([...labelNames].filter((name) => !['model', 'outcome', 'code', 'tool', 'result', 'method', 'route', 'status', 'state', 'quantile', 'le'].includes(name!))).toEqual([])
  })

  it('counts open streams while one is open', async () => {
    provider.enqueue(streamScript(textAnswerSse('Slowly.'), { end: 'hang' }))
    const controller = new AbortController()
    const res = await fetch(`${server.url}${API}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'Hang on' }),
      signal: controller.signal,
    })
    expect(res.status).toBe(200)
    expect(samples(await scrape()).get('knowagent_sse_streams_open')).toBe(1)
    controller.abort()
    await waitUntil(async () => samples(await scrape()).get('knowagent_sse_streams_open') === 0, 'the stream to be counted closed')
  })

  it('Admin → Status shows the last hour’s turns by outcome and the last errors by code, to administrators only', async () => {
    const admin = await signIn(server, 'alice', alice.password) // the first user is an administrator
    const page = await fetch(`${server.url}/admin/status`, { headers: { cookie: admin.cookie } })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toMatch(/data-table="turns-by-outcome"[\s\S]*<td>done<\/td>/)
    expect(html).toMatch(/data-table="recent-errors"[\s\S]*<code>provider\.http<\/code>/)
    expect(html).not.toContain('bad request') // the provider's message: never shown, only its code
    expect(html).toMatch(/data-figure="first-delta">\d+ ms \/ \d+ ms/)
    const panel = await fetch(`${server.url}/admin/status/panel`, { headers: { cookie: admin.cookie } })
    expect(await panel.text()).toMatch(/^<section id="status-panel"[^>]*hx-trigger="every 5s"/)

    const member = await addUserWithToken(server, 'dave')
    const memberSession = await signIn(server, 'dave', member.password)
    expect((await fetch(`${server.url}/admin/status`, { headers: { cookie: memberSession.cookie } })).status).toBe(403)
    expect((await fetch(`${server.url}/admin/status/panel`, { headers: { cookie: memberSession.cookie } })).status).toBe(403)
  })

  it('reports the process, the event loop and the pool', async () => {
    const scraped = samples(await scrape())
    expect(scraped.get('knowagent_process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(scraped.has('knowagent_event_loop_delay_seconds{quantile="0.99"}')).toBe(true)
    expect(scraped.get('knowagent_db_pool_connections{state="max"}')).toBeGreaterThan(0)
    expect(scraped.get('knowagent_db_pool_connections{state="waiting"}')).toBe(0)
  })
})

describe('/metrics access and request ids', () => {
  let off: TestServer
  let local: TestServer
  beforeAll(async () => {
    off = await startTestServer()
    local = await startTestServer({ databaseUrl: off.database.url, configure: (config) => ({ ...config, metrics: { enabled: true, token: undefined } }) })
  })
  afterAll(async () => {
    await local?.close()
    await off?.close()
  })

  it('is not there when metrics are off (the default)', async () => {
    const res = await fetch(`${off.url}/metrics`)
    expect(res.status).toBe(404)
  })

  it('without a token, answers this machine only: not a request a proxy forwarded', async () => {
    expect((await fetch(`${local.url}/metrics`)).status).toBe(200)
    const forwarded = await fetch(`${local.url}/metrics`, { headers: { 'x-forwarded-for': '203.0.113.9', accept: 'application/json' } })
    expect(forwarded.status).toBe(403)
    expect(((await forwarded.json()) as { error: { code: string } }).error.code).toBe('metrics_forbidden')
  })

  it('puts the request id in the error body, the response header and the request’s log lines', async () => {
    const { token } = await addUserWithToken(off, 'carol')
    const res = await fetch(`${off.url}/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/nothing-here.md')}`, { headers: { authorization: `Bearer ${token}` } })
    expect(res.status).toBe(404)
    const id = res.headers.get('x-request-id')
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(((await res.json()) as { error: { request_id: string } }).error.request_id).toBe(id)
    await waitUntil(() => off.logLines.some((line) => line.includes(id!)), 'the request’s log line')
    const lines = off.logLines.filter((line) => line.includes(id!)).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.every((line) => line.request_id === id)).toBe(true)
  })
})
