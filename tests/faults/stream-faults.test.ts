// Faults under a running turn, against a real server and a scripted provider over real sockets:
// the provider stalls, resets or sends garbage; the database drops every connection (what a
// PostgreSQL restart does to its clients). Each turn ends with exactly one typed terminal event and
// a closed turn record, the provider's socket is released, and the server answers /healthz and
// /readyz and streams the next turn without a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { readSseEvents, terminalEvents } from '../support/sse-frames.ts'
import { chatCompletionSse, streamScript, textAnswerSse, type ScriptedProvider, scriptedModel } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, type TestServer } from '../support/test-server.ts'

const IDLE_MS = 300

describe('faults under a running turn', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  const stream = (modelId = 'remote') =>
    fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: modelId, message: 'q' }),
    })

  /** The server is whole again: health, readiness, no turn left running, and the next turn streams. */
  async function expectRecovered(): Promise<void> {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    expect(await (await fetch(`${server.url}/readyz`)).json()).toEqual({ ok: true, database: 'reachable' })
    const running = await server.database.db.selectFrom('turns').select('id').where('status', '=', 'running').execute()
    expect(running).toEqual([])
    provider.enqueue(streamScript(textAnswerSse('fine again')))
    const { events } = await readSseEvents(await stream())
    expect(events.at(-1)!.event).toBe('done')
    expect(events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe('fine again')
  }

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      models: (provider) => [
        scriptedModel(provider, { idleTimeoutMs: IDLE_MS }),
        // The default idle timeout: silent for as long as the test takes to drop the database's connections.
        scriptedModel(provider, { id: 'patient', name: 'Patient' }),
      ],
    }))
    alice = await addUserWithToken(server, 'alice')
  })
  afterAll(() => close?.())

  it.each([
    ['stalls after its first bytes', streamScript(chatCompletionSse([{ text: 'half' }]), { end: 'hang' }), 'provider.idle_timeout'],
    ['resets the connection mid-answer', streamScript(chatCompletionSse([{ text: 'half' }]), { end: 'reset' }), 'provider.incomplete'],
    ['sends garbage instead of events', streamScript('data: {"choices":[{"delta":{"content":"half"}}]}\n\ndata: {not json at all\n\n'), 'provider.protocol'],
  ])('a provider that %s: one typed error event, the turn closed failed, the server recovers', async (_what, script, code) => {
    provider.enqueue(script)
    const index = provider.requests.length
    const res = await stream()
    const turnId = res.headers.get('x-turn-id')!
    const { events } = await readSseEvents(res)
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code } })
    const turn = await findTurn(server.database.db, turnId)
    expect({ status: turn!.status, code: turn!.error_code }).toEqual({ status: 'failed', code })
    // A stalled answer is let go by the server itself; the others were ended by the provider.
    if (code === 'provider.idle_timeout') expect((await provider.waitForClientClose(index)).clientClosedAt).toBeDefined()
    await expectRecovered()
  })

  it('the database drops every connection mid-turn: the turn still ends with one terminal event and a closed record; no restart needed', async () => {
    const release = Promise.withResolvers<void>()
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: textAnswerSse('after the drop'), after: release.promise }] })
    const before = provider.requests.length
    const res = await stream('patient')
    const turnId = res.headers.get('x-turn-id')!
    const reading = readSseEvents(res)
    await expect.poll(() => provider.requests.length, { timeout: 5000 }).toBe(before + 1)

    const admin = new pg.Client({ connectionString: server.database.url })
    await admin.connect()
    try {
      const { rows } = await admin.query<{ terminated: boolean }>(
        'select pg_terminate_backend(pid) as terminated from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      )
      expect(rows.length).toBeGreaterThan(0)
      expect(rows.every((row) => row.terminated)).toBe(true)
    } finally {
      await admin.end()
    }
    release.resolve()

    const { events } = await reading
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)!.event).toBe('done')
    expect(events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe('after the drop')
    await expect.poll(async () => (await findTurn(server.database.db, turnId))?.status, { timeout: 5000 }).toBe('done')
    await expectRecovered()
  })

  it("holds no provider connection once the connection pool's idle window has passed (nothing leaked by the faults above)", async () => {
    await provider.waitForNoConnections({ timeoutMs: 15_000 })
    expect(provider.openConnections()).toBe(0)
  })
})

describe('a turn past its time limit (limits.turnSeconds)', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      models: (provider) => [scriptedModel(provider, { idleTimeoutMs: IDLE_MS })],
      configure: (config) => ({ ...config, turnSeconds: 1 }),
    }))
    alice = await addUserWithToken(server, 'alice')
  })
  afterAll(() => close?.())

  it('a provider that sends keep-alive comments for ever (each resets the idle timeout) is cut off: limit.turn_time with the partial text, the turn closed failed, the provider let go', async () => {
    // Half an answer, then an SSE comment every 50 ms (well inside the 300 ms idle timeout) for 60 s.
    const keepAlives = Array.from({ length: 1200 }, () => ({ bytes: ': keep-alive\n\n', delayMs: 50 }))
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: 'data: {"choices":[{"index":0,"delta":{"content":"half an answer"}}]}\n\n' }, ...keepAlives] })
    const index = provider.requests.length
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'q' }),
    })
    const turnId = res.headers.get('x-turn-id')!
    const { events } = await readSseEvents(res)
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'limit.turn_time', partial: 'half an answer' } })
    expect(events.at(-1)!.data.message).toContain('time limit of 1 s')
    const turn = await findTurn(server.database.db, turnId)
    expect({ status: turn!.status, code: turn!.error_code }).toEqual({ status: 'failed', code: 'limit.turn_time' })
    expect((await provider.waitForClientClose(index)).clientClosedAt).toBeDefined()
  })
})
