// The browser chat's HTTP routes (/workspace/chat/*): cookie + CSRF, an SSE stream of HTML
// fragments ending with exactly one named terminal event, and errors as escaped HTML (htmx parses
// every body as HTML, so an echoed URI or model id must never become markup).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeSseStream, type SseEvent } from '../../src/sse/sse-decoder.ts'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { streamScript, textAnswerSse, type ScriptedProvider } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

describe('/workspace/chat', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let session: { cookie: string; csrf: string }
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer())
    alice = await addUserWithToken(server, 'alice')
    await addUserWithToken(server, 'bob')
    await putText(server.database.db, { owner: alice.user, segments: ['docs', 'a.md'], text: 'alpha' })
    session = await signIn(server, 'alice', alice.password)
  })
  afterAll(() => close?.())

  const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = { 'x-csrf-token': session.csrf }) =>
    fetch(`${server.url}/workspace/chat/${path}`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true', ...headers },
      body: new URLSearchParams(fields),
    })
  const readEvents = async (res: Response) => {
    const events: SseEvent[] = []
    for await (const event of decodeSseStream(res.body!)) events.push(event)
    return events
  }
  const question = { uri: 'kb://me/docs/', model_id: 'remote', message: 'What is in a.md?', history: '[]', message_key: 'k-1' }

  it('streams HTML fragments for the message and ends with exactly one named done event carrying the history', async () => {
    provider.enqueue(streamScript(textAnswerSse('It says *alpha*.')))
    const res = await post('stream', question)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(res.headers.get('x-accel-buffering')).toBe('no')
    const events = await readEvents(res)
    const terminals = events.filter((e) => e.event === 'done' || e.event === 'error')
    expect(terminals).toHaveLength(1)
    expect(events.at(-1)!.event).toBe('done')
    const fragments = events.filter((e) => e.event === 'message').map((e) => e.data)
    expect(fragments.some((html) => html.includes('hx-target="#context-summary"'))).toBe(true)
    expect(fragments.join('')).toContain('<em>alpha</em>')
    const done = JSON.parse(events.at(-1)!.data) as { turn_id: string; history: Array<{ role: string; content: string }> }
    expect(done.turn_id).toBe(res.headers.get('x-turn-id'))
    expect(done.history.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect((await findTurn(server.database.db, done.turn_id))!.status).toBe('done')
  })

  it('carries the page’s history into the turn', async () => {
    provider.enqueue(streamScript(textAnswerSse('Yes.')))
    const history = JSON.stringify([{ role: 'user', content: 'earlier question' }, { role: 'assistant', content: 'earlier answer' }])
    await readEvents(await post('stream', { ...question, history, message: 'And now?' }))
    const sent = provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> }
    expect(sent.messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(
      expect.arrayContaining(['earlier question', 'earlier answer', 'And now?']),
    )
  })

  it('requires the CSRF token of the session', async () => {
    const before = provider.requests.length
    const res = await post('stream', question, {})
    expect(res.status).toBe(403)
    expect(provider.requests.length).toBe(before)
  })

  it.each([
    [{ model_id: '<img src=x onerror=alert(1)>' }, 400, 'unknown model id'],
    [{ uri: 'kb://users/bob/' }, 403, 'another user'],
    [{ message_key: 'a"><img src=x>' }, 400, 'message_key'],
    [{ history: '{not json' }, 400, 'not valid JSON'],
    [{ history: '[{"role":"tool","tool_call_id":"x","content":"y"}]' }, 400, 'answers no open assistant tool call'],
  ])('refuses %j before any stream with %i and an escaped HTML reason', async (change, status, reason) => {
    const before = provider.requests.length
    const res = await post('stream', { ...question, ...change })
    expect(res.status).toBe(status)
    expect(res.headers.get('content-type')).toContain('text/html')
    const html = await res.text()
    expect(html).toContain(reason)
    expect(html).not.toMatch(/<img/i)
    expect(provider.requests.length).toBe(before)
  })

  it('a search card that stopped short offers to search from the later file where the index finds every word', async () => {
    // zebras in f040, where Continue goes on anyway, and in f043: the card offers f043
    for (let i = 0; i < 45; i++) await putText(server.database.db, { owner: alice.user, segments: ['pile', `f${String(i).padStart(3, '0')}.txt`], text: i === 40 || i === 43 ? 'the zebra note' : `plain ${i}` })
    const html = await (await post('command', { command: 'search', uri: 'kb://users/alice/pile/', query: 'zebra', message_key: 'c-9' })).text()
    expect(html).toContain('0 hits for “zebra” in 40 files · scan not complete')
    expect(html).toMatch(/data-run-command="search"[^>]*data-offset="40"[^>]*>\s*Continue search/)
    expect(html).toMatch(/data-run-command="search"[^>]*data-query="zebra"[^>]*data-offset="43"[^>]*aria-label="Search from kb:\/\/users\/alice\/pile\/f043.txt, where the index finds every word"[^>]*>\s*Search from f043.txt \(file 44\)/)
    const scanned = async (offset: string) => (await (await post('command', { command: 'search', uri: 'kb://users/alice/pile/', query: 'zebra', offset, message_key: 'c-10' })).text()).match(/hits? for “zebra” in [^·]*/u)?.[0]
    // the files this call scanned
    expect(await scanned('43')).toBe('hit for “zebra” in files 44–45 ')
    expect(await scanned('44')).toBe('hits for “zebra” in file 45 ')
    expect(await scanned('50')).toBe('hits for “zebra” in 0 files ')
  })

  it('runs an explicit command into a card, relative to the current directory, without the model', async () => {
    const before = provider.requests.length
    const res = await post('command', { command: 'read', uri: 'kb://users/alice/docs/', path: 'a.md', message_key: 'c-1' })
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('<article class="msg command" id="c-c-1">')
    expect(html).toContain('<pre class="read-text">alpha</pre>')
    const outside = await (await post('command', { command: 'ls', uri: 'kb://users/alice/docs/', path: 'kb://users/alice/', message_key: 'c-2' })).text()
    expect(outside).toContain('outside_scope')
    const hostile = await (await post('command', { command: 'read', uri: 'kb://users/alice/docs/', path: '<img src=x onerror=alert(1)>.md' })).text()
    expect(hostile).toContain('&lt;img src=x onerror=alert(1)&gt;.md')
    expect(hostile).not.toMatch(/<img/i)
    expect(provider.requests.length).toBe(before)
  })
})

describe('an htmx request after the session ended', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(async () => {
    await server?.close()
  })

  it.each([
    ['POST', '/workspace/chat/stream'],
    ['GET', '/workspace/chat/welcome?uri=kb://me/'],
    ['GET', '/workspace/content?uri=kb://me/'],
    ['GET', '/workspace/tree?uri=kb://me/'],
  ])('%s %s gets 401 with HX-Redirect to sign in (never the sign-in page as a fragment)', async (method, path) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      redirect: 'manual',
      headers: { 'hx-request': 'true', 'hx-current-url': `${server.url}/workspace?uri=kb%3A%2F%2Fme%2Fdocs%2F` },
    })
    expect(res.status).toBe(401)
    expect(res.headers.get('hx-redirect')).toBe(`/login?next=${encodeURIComponent('/workspace?uri=kb%3A%2F%2Fme%2Fdocs%2F')}`)
  })
})
