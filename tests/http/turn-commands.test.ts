// A turn by its id (issue 38), on one server: Stop as a command (owner-only, idempotent, through
// the machine's cancel path: the stream ends with its one terminal event and the server's history),
// numbered events, and a stream picked up again with Last-Event-ID (every delta once, in order).
// The grace period of a turn whose client is gone: tests/http/stream.test.ts; across instances:
// tests/faults/many-instances.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createKnowagentClient } from '../../src/client/index.ts'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { deltaText, readSseEvents, readSseEventsUntil, terminalEvents } from '../support/sse-frames.ts'
import { chatCompletionSse, type ScriptedProvider, streamScript, textAnswerSse } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { startStreamProxy } from '../support/stream-proxy.ts'
import { addUserWithToken, signIn, type TestServer } from '../support/test-server.ts'

const API = '/api/v1/knowledge-agent'

describe('a turn by its id', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  const auth = (token = alice.token) => ({ authorization: `Bearer ${token}` })
  const stream = (message = 'q', signal?: AbortSignal) =>
    fetch(`${server.url}${API}/stream`, {
      method: 'POST',
      signal,
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message }),
    })
  const stop = (turnId: string, token = alice.token) => fetch(`${server.url}${API}/turns/${turnId}/stop`, { method: 'POST', headers: auth(token) })
  const resume = (turnId: string, lastEventId?: string, token = alice.token) =>
    fetch(`${server.url}${API}/turns/${turnId}/events`, { headers: { ...auth(token), ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) } })
  /** An answer whose second half waits for `release`. */
  const heldAnswer = (release: Promise<void>) => ({
    kind: 'stream' as const,
    chunks: [
      { bytes: chatCompletionSse([{ text: 'one ' }, { text: 'two ' }]) },
      { bytes: chatCompletionSse([{ text: 'three ' }, { text: 'four' }, { finish: 'stop' }, 'done']), after: release },
    ],
  })

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer())
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
  })
  beforeEach(() => provider.setHandler(undefined))
  afterAll(() => close?.())

  it('numbers every event from 1 in order, the terminal one too', async () => {
    provider.enqueue(streamScript(textAnswerSse('numbered', { chunkChars: 2 })))
    const { events } = await readSseEvents(await stream())
    expect(events.map((e) => e.id)).toEqual(events.map((_, index) => String(index + 1)))
    expect(terminalEvents(events)).toEqual([events.at(-1)])
  })

  it('Stop from a command: the stream ends with one cancelled event carrying the partial answer in the history; the provider is let go; again is a no-op', async () => {
    provider.enqueue(streamScript(chatCompletionSse([{ text: 'Working on it' }]), { end: 'hang' }))
    const index = provider.requests.length
    const res = await stream('Take your time')
    const turnId = res.headers.get('x-turn-id')!
    let stopping: Promise<Response> | undefined
    const reading = readSseEvents(res, { onEvent: (event) => void (event.event === 'delta' && (stopping ??= stop(turnId))) })
    const { events } = await reading
    const answer = await stopping!
    expect(answer.status).toBe(202)
    expect(await answer.json()).toEqual({ turn_id: turnId, status: 'stopping' })
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled', message: 'the turn was stopped (user)', partial: 'Working on it', turn_id: turnId } })
    expect(events.at(-1)!.data.history).toEqual([
      { role: 'user', content: 'Take your time' },
      { role: 'assistant', content: 'Working on it\n\n[This answer was stopped by the user; the text above is incomplete.]' },
    ])
    await provider.waitForClientClose(index)
    expect(await findTurn(server.database.db, turnId)).toMatchObject({ status: 'cancelled', error_code: 'cancelled' })
    const again = await stop(turnId)
    expect(again.status).toBe(200)
    expect(await again.json()).toEqual({ turn_id: turnId, status: 'cancelled' })
  })

  it("refuses another person's turn, an unknown id and a malformed one alike (404), and a cookie session without CSRF (403)", async () => {
    const release = Promise.withResolvers<void>()
    provider.enqueue(heldAnswer(release.promise))
    const res = await stream()
    const turnId = res.headers.get('x-turn-id')!
    const reading = readSseEvents(res)
    for (const id of [turnId, crypto.randomUUID(), 'not-a-uuid', "1' or '1'='1"]) {
      for (const answer of [await stop(id, bob.token), await resume(id, undefined, bob.token)]) {
        expect(answer.status).toBe(404)
        expect((await answer.json()).error.code).toBe('turn_not_found')
      }
    }
    const { cookie } = await signIn(server, 'alice', alice.password)
    const noCsrf = await fetch(`${server.url}${API}/turns/${turnId}/stop`, { method: 'POST', headers: { cookie } })
    expect(noCsrf.status).toBe(403)
    release.resolve()
    const { events } = await reading
    expect(events.at(-1)!.event).toBe('done') // nothing above touched it
    expect(deltaText(events)).toBe('one two three four')
  })

  it('a stream cut mid-answer is picked up with Last-Event-ID: every delta once, in order, then the terminal; the ids go on', async () => {
    const release = Promise.withResolvers<void>()
    provider.enqueue(heldAnswer(release.promise))
    const res = await stream()
    const turnId = res.headers.get('x-turn-id')!
    const before = await readSseEventsUntil(res, (event) => event.event === 'delta' && event.data.text === 'two ') // then the client drops
    await vi.waitFor(() => expect(server.ctx.turns.get(turnId)!.clients()).toBe(0)) // the server saw it go
    expect((await findTurn(server.database.db, turnId))!.status).toBe('running') // not cancelled at once
    const resumed = await resume(turnId, before.at(-1)!.id)
    expect(resumed.status).toBe(200)
    expect(resumed.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const reading = readSseEvents(resumed)
    release.resolve()
    const { events: after } = await reading
    expect(deltaText(before) + deltaText(after)).toBe('one two three four')
    expect([...before, ...after].map((e) => Number(e.id))).toEqual([...before, ...after].map((_, index) => index + 1))
    expect(terminalEvents(after)).toHaveLength(1)
    expect(after.at(-1)).toMatchObject({ event: 'done', data: { turn_id: turnId } })

    // Later, the whole turn again from its first event, and nothing after the terminal (204).
    const { events: again } = await readSseEvents(await resume(turnId))
    expect(again).toEqual([...before, ...after])
    expect((await resume(turnId, after.at(-1)!.id)).status).toBe(204)
  })

  it('the typed client picks a cut stream up again by itself: every delta once, one terminal; it stops a turn by id', async () => {
    const proxy = await startStreamProxy(server.url)
    try {
      const client = createKnowagentClient({ baseUrl: proxy.url, token: alice.token })
      const release = Promise.withResolvers<void>()
      provider.enqueue(heldAnswer(release.promise))
      const deltas: string[] = []
      const cutDone = Promise.withResolvers<number>()
      const outcome = client.stream(
        { uri: 'kb://me/', model_id: 'remote', message: 'q' },
        {
          handlers: {
            onDelta: ({ text }) => {
              deltas.push(text)
              if (text === 'two ') cutDone.resolve(proxy.cut()) // the network drops mid-answer
            },
          },
        },
      )
      expect(await cutDone.promise).toBe(1)
      release.resolve()
      await expect(outcome).resolves.toMatchObject({ ok: true, text: 'one two three four', done: { finish_reason: 'stop' } })
      expect(deltas).toEqual(['one ', 'two ', 'three ', 'four'])

      // Stop by id from the client: the running turn ends with its one terminal, cancelled
      const held = Promise.withResolvers<void>()
      provider.enqueue(heldAnswer(held.promise))
      const started = Promise.withResolvers<string>()
      const answering = Promise.withResolvers<void>()
      const stopped = client.stream(
        { uri: 'kb://me/', model_id: 'remote', message: 'q' },
        { handlers: { onStart: ({ turnId }) => started.resolve(turnId), onDelta: ({ text }) => void (text === 'two ' && answering.resolve()) } },
      )
      const running = await started.promise
      await answering.promise
      await expect(client.stop(running)).resolves.toEqual({ turn_id: running, status: 'stopping' })
      await expect(stopped).resolves.toMatchObject({ ok: false, text: 'one two ', error: { code: 'cancelled' }, turnId: running })
      held.resolve()
    } finally {
      await proxy.close()
    }
  })

  it.each(['abc', '-1', '1.5', '12345678901', '1 2'])('refuses Last-Event-ID %j (400)', async (header) => {
    provider.enqueue(streamScript(textAnswerSse('short')))
    const res = await stream()
    await readSseEvents(res)
    const answer = await resume(res.headers.get('x-turn-id')!, header)
    expect(answer.status).toBe(400)
    expect((await answer.json()).error.code).toBe('invalid_request')
  })

  it('a turn whose events are no longer kept answers 410 events_expired', async () => {
    provider.enqueue(streamScript(textAnswerSse('soon forgotten')))
    const res = await stream()
    await readSseEvents(res)
    const turnId = res.headers.get('x-turn-id')!
    await server.database.db.deleteFrom('turn_event_batches').where('turn_id', '=', turnId).execute() // what the retention does
    const answer = await resume(turnId, '1')
    expect(answer.status).toBe(410)
    expect((await answer.json()).error.code).toBe('events_expired')
  })
})
