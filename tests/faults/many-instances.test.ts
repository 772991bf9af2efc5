// Issue 38, "Done means": three real `knowagent serve` processes on one PostgreSQL behind a
// round-robin proxy this test runs (no sticky sessions), with the scripted provider's short
// answers. 300 concurrent streams each end with exactly one terminal event; Stop sent through
// another instance than the stream's ends the turn through its cancel path; a stream cut
// mid-answer and resumed through a third instance gets every delta exactly once, in order; kill -9
// of one instance gives each of its clients one `turn.interrupted` while the others' turns go on;
// SIGTERM drains (no new turn, /readyz 503 and /healthz 200, a running turn finishes, the one
// still running at the drain's end is cancelled). Every assertion waits on events, never a clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { main } from '../../src/cli.ts'
import { type RoundRobinProxy, startRoundRobinProxy } from '../support/round-robin-proxy.ts'
import { chatCompletionSse, type ProviderScript, type ScriptedProvider, scriptedModel, startScriptedProvider, streamScript, textAnswerSse } from '../support/scripted-provider.ts'
import { type ServeOnDatabase, startServeOnDatabase, stopServeProcesses } from '../support/serve-process.ts'
import { deltaText, type ParsedEvent, readSseEvents, readSseEventsUntil, terminalEvents } from '../support/sse-frames.ts'
import { createPostgresDatabase } from '../support/test-database.ts'
import { waitUntil } from '../support/wait-until.ts'

const SECRET = 'many-instances-secret-0123456789'
const API = '/api/v1/knowledge-agent'
const burstAnswer = (n: number) => `Answer ${n}: short deltas 知识 😀.`

describe('three serve processes on one PostgreSQL behind a round-robin proxy', () => {
  let databaseUrl: string
  let dropDatabase: () => Promise<void>
  let dir: string
  let provider: ScriptedProvider
  let instances: ServeOnDatabase[]
  let proxy: RoundRobinProxy
  let token: string
  let query: pg.Client
  /** Answers the test releases: `held:<key>` sends two deltas, then two more once `gates[key]` resolves. */
  const gates = new Map<string, PromiseWithResolvers<void>>()
  const gate = (key: string) => {
    const made = Promise.withResolvers<void>()
    gates.set(key, made)
    return made
  }

  const scriptFor = (question: string): ProviderScript => {
    if (question.startsWith('burst:')) return streamScript(textAnswerSse(burstAnswer(Number(question.slice(6))), { chunkChars: 5 }))
    if (question === 'hang') return { kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'Working on it' }]) }], end: 'hang' }
    const held = gates.get(question.slice('held:'.length))
    if (!held) throw new Error(`no script for ${question}`)
    return {
      kind: 'stream',
      chunks: [
        { bytes: chatCompletionSse([{ text: 'one ' }, { text: 'two ' }]) },
        { bytes: chatCompletionSse([{ text: 'three ' }, { text: 'four' }, { finish: 'stop' }, 'done']), after: held.promise },
      ],
    }
  }

  const headers = { authorization: '', 'content-type': 'application/json' }
  const stream = (base: string, message: string) =>
    fetch(`${base}${API}/stream`, { method: 'POST', headers, body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message }) })
  const stop = (base: string, turnId: string) => fetch(`${base}${API}/turns/${turnId}/stop`, { method: 'POST', headers })
  const resume = (base: string, turnId: string, lastEventId: string) => fetch(`${base}${API}/turns/${turnId}/events`, { headers: { ...headers, 'last-event-id': lastEventId } })
  const turnStatus = async (id: string) => {
    const { rows } = await query.query<{ status: string; error_code: string | null }>('select status, error_code from turns where id = $1', [id])
    return [rows[0]?.status, rows[0]?.error_code].filter(Boolean).join(':')
  }
  /** Ids 1, 2, 3, … in order: every event once. */
  const consecutive = (events: ReadonlyArray<ParsedEvent>) => events.map((event) => Number(event.id)).every((id, index, ids) => index === 0 || id === ids[index - 1]! + 1)

  /** A stream opened on `base` and read until its first delta, still reading: `rest` resolves with every event, or the error that cut it. */
  async function runningStream(base: string, message: string) {
    const res = await stream(base, message)
    expect(res.status).toBe(200)
    const firstDelta = Promise.withResolvers<void>()
    const events: ParsedEvent[] = []
    const rest = readSseEvents(res, {
      onEvent: (event) => {
        events.push(event)
        if (event.event === 'delta') firstDelta.resolve()
      },
    }).then(
      () => ({ events, cut: undefined }),
      (error: unknown) => ({ events, cut: error }),
    )
    await Promise.race([firstDelta.promise, rest.then(() => Promise.reject(new Error(`the stream of ${message} ended before its first delta`)))])
    return { turnId: res.headers.get('x-turn-id')!, events, rest }
  }

  beforeAll(async () => {
    ;({ url: databaseUrl, drop: dropDatabase } = await createPostgresDatabase())
    dir = mkdtempSync(join(tmpdir(), 'knowagent-many-'))
    provider = await startScriptedProvider()
    provider.setHandler((request) => {
      const messages = (request.body as { messages: Array<{ role: string; content: string }> }).messages
      return scriptFor(messages.filter((message) => message.role === 'user').at(-1)!.content)
    })
    const configPath = join(dir, 'config.json')
    writeFileSync(
      configPath,
      JSON.stringify({
        models: [scriptedModel(provider)],
        limits: { streamsPerMinute: 10_000 },
        turns: { detachedGraceSeconds: 30, leaseSeconds: 3 },
        shutdown: { drainSeconds: 5 }, // room for the checks below to run inside the drain on a busy machine
      }),
    )
    const env = { DATABASE_URL: databaseUrl, KNOWAGENT_SECRET: SECRET }
    const out: string[] = []
    const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line), env }
    expect(await main(['user', 'add', 'alice', '--password', 'a-long-password'], io)).toBe(0)
    expect(await main(['token', 'create', 'alice'], io)).toBe(0)
    token = out.at(-1)!
    headers.authorization = `Bearer ${token}`
    query = new pg.Client({ connectionString: databaseUrl })
    await query.connect()
    instances = await Promise.all(['a', 'b', 'c'].map((name) => startServeOnDatabase({ databaseUrl, secret: SECRET, configPath, dataDir: join(dir, name) })))
    proxy = await startRoundRobinProxy(instances.map((instance) => instance.url))
  }, 180_000)

  afterAll(async () => {
    stopServeProcesses()
    await proxy?.close()
    await query?.end()
    await provider?.close()
    await dropDatabase?.()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('300 concurrent streams through the proxy each end with exactly one terminal event, every delta delivered, numbered in order', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 300 }, async (_, n) => {
        const res = await stream(proxy.url, `burst:${n}`)
        expect(res.status).toBe(200)
        return { n, upstream: res.headers.get('x-upstream'), events: (await readSseEvents(res)).events }
      }),
    )
    for (const { n, events } of outcomes) {
      expect(terminalEvents(events)).toHaveLength(1)
      expect(events.at(-1)!.event).toBe('done')
      expect(deltaText(events)).toBe(burstAnswer(n))
      expect(consecutive(events)).toBe(true)
    }
    expect(new Set(outcomes.map((outcome) => outcome.upstream))).toEqual(new Set(['0', '1', '2'])) // every instance took its share
  }, 120_000)

  it('Stop sent through another instance than the stream ends the turn through its cancel path: one terminal with the partial answer in the history', async () => {
    const requestIndex = provider.requests.length
    const res = await stream(proxy.url, 'hang')
    const upstream = Number(res.headers.get('x-upstream'))
    const turnId = res.headers.get('x-turn-id')!
    let stopping: Promise<Response> | undefined
    const { events } = await readSseEvents(res, {
      onEvent: (event) => void (event.event === 'delta' && (stopping ??= stop(instances[(upstream + 1) % 3]!.url, turnId))),
    })
    expect((await stopping!).status).toBe(202)
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled', message: 'the turn was stopped (user)', partial: 'Working on it', turn_id: turnId } })
    expect((events.at(-1)!.data.history as unknown[]).at(-1)).toEqual({ role: 'assistant', content: 'Working on it\n\n[This answer was stopped by the user; the text above is incomplete.]' })
    await provider.waitForClientClose(requestIndex) // the model call was let go
    expect(await turnStatus(turnId)).toBe('cancelled:cancelled')
  })

  it('a stream cut mid-answer and resumed through a third instance delivers every delta exactly once, in order', async () => {
    const release = gate('cut')
    const res = await stream(proxy.url, 'held:cut')
    const upstream = Number(res.headers.get('x-upstream'))
    const turnId = res.headers.get('x-turn-id')!
    const before = await readSseEventsUntil(res, (event) => event.event === 'delta' && event.data.text === 'two ') // then the connection drops
    const resumed = await resume(instances[(upstream + 2) % 3]!.url, turnId, before.at(-1)!.id)
    expect(resumed.status).toBe(200)
    const reading = readSseEvents(resumed)
    release.resolve() // the rest of the answer comes live, from the first instance through the store
    const { events: after } = await reading
    expect(deltaText(before) + deltaText(after)).toBe('one two three four')
    expect(consecutive([...before, ...after])).toBe(true)
    expect(terminalEvents([...before, ...after])).toEqual([after.at(-1)])
    expect(after.at(-1)).toMatchObject({ event: 'done', data: { turn_id: turnId } })
  })

  it("kill -9 of an instance: each of its clients, reconnecting, gets one terminal turn.interrupted with the partial text; another instance's turn goes on", async () => {
    const [survivor, , victim] = instances as [ServeOnDatabase, ServeOnDatabase, ServeOnDatabase]
    const dying = [await runningStream(victim.url, 'hang'), await runningStream(victim.url, 'hang')]
    const living = await runningStream(survivor.url, 'hang')
    // The partial text is what the dead instance had stored: wait until its delta is (a flush away).
    const storedDeltas = `select count(distinct turn_id)::int as n from turn_event_batches where turn_id = any($1) and position(E'\\nevent: delta\\n' in events) > 0`
    await waitUntil(async () => (await query.query<{ n: number }>(storedDeltas, [dying.map((d) => d.turnId)])).rows[0]!.n === 2, 'the deltas stored')
    expect((await victim.stop('SIGKILL')).signal).toBe('SIGKILL')
    proxy.remove(victim.url) // the load balancer's health check
    for (const client of dying) {
      const { cut } = await client.rest
      expect(cut).toBeDefined() // the connection died with its instance
      const { events } = await readSseEvents(await resume(proxy.url, client.turnId, client.events.at(-1)!.id))
      expect(terminalEvents(events)).toHaveLength(1)
      expect(events).toEqual([expect.objectContaining({ event: 'error', data: expect.objectContaining({ code: 'turn.interrupted', partial: 'Working on it', turn_id: client.turnId }) })])
      expect(await turnStatus(client.turnId)).toBe('failed:turn.interrupted')
    }
    expect(await turnStatus(living.turnId)).toBe('running')
    expect(terminalEvents(living.events)).toEqual([])
    expect((await stop(proxy.url, living.turnId)).status).toBe(202)
    const { events, cut } = await living.rest
    expect(cut).toBeUndefined()
    expect(terminalEvents(events)).toEqual([expect.objectContaining({ event: 'error', data: expect.objectContaining({ code: 'cancelled' }) })])
  })

  it('SIGTERM drains: no new turn (503 draining), /readyz 503 while /healthz answers, a running turn finishes, the one still running at the end is cancelled', async () => {
    const [survivor, draining] = instances as [ServeOnDatabase, ServeOnDatabase]
    const finishing = gate('finishing')
    gate('never')
    const finishes = await runningStream(draining.url, 'held:finishing')
    const outlasts = await runningStream(draining.url, 'held:never')
    const exited = draining.stop('SIGTERM')
    await waitUntil(async () => (await fetch(`${draining.url}/readyz`)).status === 503, '/readyz to say draining')
    expect(await (await fetch(`${draining.url}/readyz`)).json()).toEqual({ ok: false, reason: 'draining' })
    expect((await fetch(`${draining.url}/healthz`)).status).toBe(200)
    const refused = await stream(draining.url, 'burst:0')
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect((await refused.json()).error.code).toBe('draining')
    finishing.resolve()
    const finished = await finishes.rest
    expect(terminalEvents(finished.events)).toEqual([finished.events.at(-1)])
    expect(finished.events.at(-1)!.event).toBe('done')
    expect(deltaText(finished.events)).toBe('one two three four')
    const cancelled = await outlasts.rest
    expect(terminalEvents(cancelled.events)).toHaveLength(1)
    expect(cancelled.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled', message: 'the turn was stopped (shutdown)', partial: 'one two ' } })
    expect((await exited).code).toBe(0)
    expect(await turnStatus(finishes.turnId)).toBe('done')
    expect(await turnStatus(outlasts.turnId)).toBe('cancelled:cancelled')
    expect((await fetch(`${survivor.url}/readyz`)).status).toBe(200) // the others never noticed
  })
})
