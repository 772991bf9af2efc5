// What a signed-in user sends is checked the same way everywhere: numbers in range (400
// invalid_request, never a 500 or a silent correction), the CSRF token in the header or the form
// field but never the URL, Authorization schemes that are not ours ignored, notices from fixed
// codes, messages the chosen model can actually take, and a CSP that loads no remote image.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { putFile } from '../../src/effects/workspace/store.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { readSseEvents } from '../support/sse-frames.ts'
import { putText } from '../support/text-file.ts'
import { postNeverEnding } from '../support/raw-http.ts'

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let session: { cookie: string; csrf: string }

beforeAll(async () => {
  server = await startTestServer({ configure: (config) => ({ ...config, streamsPerMinute: 1000 }) })
  alice = await addUserWithToken(server, 'alice')
  for (const name of ['a.md', 'b.md', 'c.md']) {
    await putText(server.database.db, { owner: alice.user, segments: ['docs', name], text: name })
  }
  session = await signIn(server, 'alice', alice.password)
})
afterAll(async () => {
  await server?.close()
})

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${alice.token}`, ...(init.headers as Record<string, string>) } })

describe('numeric parameters', () => {
  it.each(['offset=1e400', 'offset=99999999999999999999', 'offset=-1', 'offset=1.5', 'limit=-1', 'limit=abc', 'limit=0', 'limit=501', 'limit=1&limit=2'])(
    'GET /api/v1/workspace/node?%s is 400 invalid_request',
    async (query) => {
      const res = await api(`/api/v1/workspace/node?uri=kb://me/docs/&${query}`)
      expect(res.status).toBe(400)
      expect((await res.json()).error.code).toBe('invalid_request')
    },
  )

  it('pages with valid numbers', async () => {
    const page = await (await api('/api/v1/workspace/node?uri=kb://me/docs/&offset=1&limit=1')).json()
    expect(page).toMatchObject({ total: 3, next_offset: 2, entries: [{ name: 'b.md' }] })
    const past = await (await api('/api/v1/workspace/node?uri=kb://me/docs/&offset=9007199254740991')).json()
    expect(past).toMatchObject({ total: 3, entries: [], next_offset: null })
  })

  it.each([{ offset: 1e20 }, { offset: -1 }, { limit: 0 }, { limit: 2.5 }])('POST command with %j is 400 invalid_request', async (numbers) => {
    const res = await api('/api/v1/knowledge-agent/command', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'ls', uri: 'kb://me/docs/', ...numbers }),
    })
    expect(res.status).toBe(400)
    expect((await res.json()).error.code).toBe('invalid_request')
  })
})

describe('CSRF token', () => {
  const command = (fields: Record<string, string>, { query = '', headers = {} }: { query?: string; headers?: Record<string, string> } = {}) =>
    fetch(`${server.url}/workspace/chat/command${query}`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ command: 'ls', uri: 'kb://me/docs/', ...fields }),
    })

  it('is accepted in the documented _csrf form field', async () => {
    const res = await command({ _csrf: session.csrf })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('a.md')
  })

  it('is not accepted from the query string (URLs end up in logs and Referer headers)', async () => {
    const res = await command({}, { query: `?_csrf=${encodeURIComponent(session.csrf)}` })
    expect(res.status).toBe(403)
  })

  it('is accepted in the X-CSRF-Token header', async () => {
    expect((await command({}, { headers: { 'x-csrf-token': session.csrf } })).status).toBe(200)
  })
})

describe('Authorization header', () => {
  const page = (authorization: string) => fetch(`${server.url}/workspace`, { redirect: 'manual', headers: { cookie: session.cookie, authorization } })

  it.each(['Basic YWxpY2U6cGFzc3dvcmQ=', '', 'Digest username="alice"', 'Token abc'])('a %j header (not Bearer) is ignored: the cookie still signs in', async (authorization) => {
    expect((await page(authorization)).status).toBe(200)
  })

  it('without a cookie, a Basic header is simply not signed in', async () => {
    const res = await fetch(`${server.url}/api/v1/workspace/node`, { headers: { authorization: 'Basic YWxpY2U6cGFzc3dvcmQ=' } })
    expect(res.status).toBe(401)
    expect((await res.json()).error.code).toBe('unauthorized')
  })

  it.each(['Bearer', 'Bearer ', `Bearer ${'x'} y`, 'bearer ka_wrong'])('a malformed or wrong Bearer credential %j is 401 even with a cookie', async (authorization) => {
    const res = await fetch(`${server.url}/api/v1/workspace/node`, { headers: { cookie: session.cookie, authorization } })
    expect(res.status).toBe(401)
  })
})

describe('notices', () => {
  const workspace = (query: string) => fetch(`${server.url}/workspace?${query}`, { headers: { cookie: session.cookie } })

  it('a notice is one of a fixed set of codes: arbitrary text is refused, never shown', async () => {
    const phishing = 'Your session expired. Sign in again at https://evil.example'
    const res = await workspace(`notice=${encodeURIComponent(phishing)}`)
    expect(res.status).toBe(400)
    expect(await res.text()).not.toContain('evil.example')
  })

  it('shows the text of a known code with its counts', async () => {
    const html = await (await workspace('notice=uploaded&added=2&updated=0&unchanged=1&unparsed=0')).text()
    expect(html).toContain('<p class="notice" role="status">Upload stored: 2 added, 0 updated, 1 unchanged.</p>')
  })

  it('the upload form redirects with codes and counts, not names or parser messages', async () => {
    const form = new FormData()
    form.append('_csrf', session.csrf)
    form.append('file', new Blob(['# new']), 'Sign in again at evil.example.md')
    const res = await fetch(`${server.url}/workspace/upload?uri=${encodeURIComponent('kb://me/docs/')}`, { method: 'POST', redirect: 'manual', headers: { cookie: session.cookie }, body: form })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/workspace?uri=${encodeURIComponent('kb://users/alice/docs/')}&notice=uploaded&added=1&updated=0&unchanged=0&unparsed=0`)
  })
})

describe('message size against the chosen model', () => {
  const stream = (body: Record<string, unknown>) =>
    api('/api/v1/knowledge-agent/stream', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri: 'kb://me/docs/', model_id: 'local', ...body }) })

  it('a message over the model\'s input limit is refused before streaming, with both numbers', async () => {
    const res = await stream({ message: 'x'.repeat(28_000) }) // under limits.maxMessageChars (32,000), over the local model's input
    expect(res.status).toBe(400)
    const { error } = await res.json()
    expect(error.code).toBe('message_too_large')
    expect(error.message).toMatch(/^"message" is 28000 bytes as the model counts input; model "local" accepts at most 29696 bytes of input \(window 32768 − output reserve 2048 − 1024\), of which the system prompt and tool schemas take \d+ and the first tool result needs 12288: shorten the message to at most \d+ bytes$/)
    const { turns } = await server.database.db.selectFrom('turns').select((eb) => eb.fn.countAll().as('turns')).executeTakeFirstOrThrow()
    expect(Number(turns)).toBe(0)
  })

  it('the limit is exact: the largest message that fits is streamed, one byte more is refused', async () => {
    const refused = await (await stream({ message: 'x'.repeat(28_000) })).json()
    const room = Number(/shorten the message to at most (\d+) bytes/.exec(refused.error.message)![1])
    expect((await stream({ message: 'x'.repeat(room + 1) })).status).toBe(400)
    const res = await stream({ message: 'x'.repeat(room) })
    expect(res.status).toBe(200)
    const { events } = await readSseEvents(res)
    expect(events.filter((e) => e.event === 'done' || e.event === 'error')).toHaveLength(1)
  })

  it('the limit follows the kind of the node the URI names (the system prompt says which), whichever way the turn is admitted', async () => {
    const slots = async () => {
      const row = await server.database.db.selectFrom('rate_limit_hits').select('hits').where('key', '=', `stream:${alice.user.id}`).executeTakeFirst()
      return row?.hits.length ?? 0
    }
    const turns = async () => Number((await server.database.db.selectFrom('turns').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
    const room = Number(/shorten the message to at most (\d+) bytes/.exec((await (await stream({ message: 'x'.repeat(28_000) })).json()).error.message)![1])
    // One byte over the directory's room fits beside a file's shorter prompt: admitted only once the node's kind is known.
    const [slotsBefore, turnsBefore] = [await slots(), await turns()]
    expect((await stream({ message: 'x'.repeat(room + 1) })).status).toBe(400)
    expect([await slots(), await turns()]).toEqual([slotsBefore, turnsBefore]) // refused: no slot taken, no turn recorded
    const res = await stream({ uri: 'kb://me/docs/a.md', message: 'x'.repeat(room + 1) })
    expect(res.status).toBe(200)
    const turnId = res.headers.get('x-turn-id')!
    const { events } = await readSseEvents(res)
    const terminal = events.filter((e) => e.event === 'done' || e.event === 'error')
    expect(terminal).toHaveLength(1)
    expect(terminal[0]!.data).toMatchObject({ turn_id: turnId }) // (this text-only model also gets the file's first page, which it cannot fit: an error event, after admission)
    expect([await slots(), await turns()]).toEqual([slotsBefore + 1, turnsBefore + 1])
    expect(await server.database.db.selectFrom('turns').select(['uri', 'error_code']).where('id', '=', turnId).executeTakeFirst()).toEqual({ uri: 'kb://me/docs/a.md', error_code: terminal[0]!.event === 'error' ? (terminal[0]!.data as { code: string }).code : null })
  })

  it('the largest message the refusal allows leaves room for the first tool result: the turn ends done, not context.over_limit', async () => {
    const words = 'compaction keeps evidence and turn limits '
    for (const [i, name] of ['one.md', 'two.md', 'three.md', 'four.md'].entries()) {
      const text = `# Notes ${i}\n\n${Array.from({ length: 60 }, (_, k) => `Paragraph ${k}: ${words.repeat(6)}`).join('\n\n')}`
      await putText(server.database.db, { owner: alice.user, segments: ['fit', name], text })
    }
    const refused = await (await stream({ uri: 'kb://me/fit/', message: words.repeat(700) })).json()
    const room = Number(/shorten the message to at most (\d+) bytes/.exec(refused.error.message)![1])
    const message = words.repeat(Math.ceil(room / words.length)).slice(0, room)
    const res = await stream({ uri: 'kb://me/fit/', message })
    expect(res.status).toBe(200)
    const { events } = await readSseEvents(res)
    expect(events.filter((e) => e.event === 'tool').length).toBeGreaterThan(0) // it searched or read
    const terminal = events.filter((e) => e.event === 'done' || e.event === 'error')
    expect(terminal.map((e) => e.event), JSON.stringify(terminal)).toEqual(['done'])
  })

  it('a history over 1.5 MB is 400 history_too_large', async () => {
    const history = Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'y'.repeat(40_000) }))
    const res = await stream({ message: 'hi', history })
    expect(res.status).toBe(400)
    expect((await res.json()).error).toMatchObject({ code: 'history_too_large', message: expect.stringMatching(/^"history" is \d+ bytes; the limit is 1500000$/) })
  })

  it('a history of 401 messages is 400 history_too_large, as documented; 400 are taken', async () => {
    const history = (length: number) => Array.from({ length }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'y' }))
    const over = await stream({ message: 'hi', history: history(401) })
    expect(over.status).toBe(400)
    expect((await over.json()).error).toEqual({ code: 'history_too_large', message: '"history" has 401 messages; the limit is 400', request_id: expect.any(String) })
    const atLimit = await stream({ message: 'hi', history: history(400) })
    expect(atLimit.status).toBe(200)
    await atLimit.body?.cancel()
  })
})

describe('Content-Security-Policy', () => {
  it('allows images only from this origin and data: URIs', async () => {
    const csp = (await fetch(`${server.url}/login`)).headers.get('content-security-policy')!
    expect(csp.split('; ')).toContain("img-src 'self' data:")
  })
})

describe('a NUL character (U+0000), which PostgreSQL cannot store', () => {
  const nulRefused = async (res: Response) => {
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('must not contain the NUL character (U+0000)')
  }
  const logged = () => server.logLines.filter((line) => line.includes('request failed')).length

  it('is 400 in a search query, a token label and a sign-in, never a 500 (nothing is logged as a failure)', async () => {
    const before = logged()
    await nulRefused(await api('/api/v1/workspace/search?q=%00'))
    await nulRefused(await fetch(`${server.url}/workspace/search?q=a%00b`, { headers: { cookie: session.cookie } }))
    await nulRefused(
      await fetch(`${server.url}/settings/tokens`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: session.csrf, label: 'a\u0000b' }),
      }),
    )
    // Without signing in: the login form's own CSRF pair, then a login with a NUL in it.
    const page = await fetch(`${server.url}/login`)
    const loginCookie = page.headers.getSetCookie().find((c) => c.startsWith('ka_login='))!.split(';')[0]!
    const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
    await nulRefused(
      await fetch(`${server.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
        body: new URLSearchParams({ login: 'a\u0000b', password: 'whatever', _login_csrf: loginCsrf }),
      }),
    )
    expect(logged()).toBe(before)
    expect((await api('/api/v1/workspace/search?q=a.md')).status).toBe(200) // the server goes on
  })

  it('is 400 in any field of a JSON body — a chat message, a history, a command query, an OpenAI-face message — before any turn starts', async () => {
    const post = (path: string, body: unknown) => api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const turns = async () => Number((await server.database.db.selectFrom('turns').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
    const before = await turns()
    await nulRefused(await post('/api/v1/knowledge-agent/stream', { uri: 'kb://me/docs/', model_id: 'local', message: 'hi\u0000there' }))
    await nulRefused(await post('/api/v1/knowledge-agent/stream', { uri: 'kb://me/docs/', model_id: 'local', message: 'hi', history: [{ role: 'user', content: 'a\u0000' }, { role: 'assistant', content: 'b' }] }))
    await nulRefused(await post('/api/v1/knowledge-agent/command', { command: 'search', uri: 'kb://me/docs/', query: 'a\u0000b' }))
    await nulRefused(await post('/v1/chat/completions', { model: 'knowagent/local', messages: [{ role: 'user', content: 'x\u0000y' }] }))
    await nulRefused(await post('/api/v1/knowledge-agent/stream', { uri: 'kb://me/docs/', model_id: 'local', message: 'ok', ['k\u0000']: 1 }))
    expect(await turns()).toBe(before)
  })
})

describe('pages that show a problem or a label', () => {
  it('a problem page shows at most 300 characters of a very long requested URI, then says how long it was', async () => {
    const uri = `kb://me/${'a'.repeat(5000)}`
    const res = await fetch(`${server.url}/workspace?uri=${encodeURIComponent(uri)}`, { headers: { cookie: session.cookie } })
    const html = await res.text()
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(html).not.toContain('a'.repeat(700))
    expect(html).toMatch(/… \(\d{4} characters\)/)
  })

  it('refuses a token label with a bidi override or an invisible character', async () => {
    const res = await fetch(`${server.url}/settings/tokens`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: session.csrf, label: 'ci\u202Eyek' }),
    })
    expect(res.status).toBe(400)
    const html = await res.text()
    expect(html).toContain('U+202E')
    expect(html).not.toContain('\u202E')
  })

  it("a file whose text could not be extracted says its raw bytes are kept once, not twice", async () => {
    await putFile(server.database.db, { owner: alice.user, segments: ['docs', 'blob.bin'], bytes: new Uint8Array([0, 1, 2]), parsed: { ok: false, mime: 'application/octet-stream', error: 'unsupported file type (.bin, application/octet-stream); raw bytes kept' } })
    const html = await (await fetch(`${server.url}/workspace/content?uri=${encodeURIComponent('kb://me/docs/blob.bin')}`, { headers: { cookie: session.cookie } })).text()
    expect(html).toContain('unsupported file type (.bin, application/octet-stream). Its raw bytes are kept')
    expect(html.match(/raw bytes (are )?kept/g)).toHaveLength(1)
  })
})

describe('a refused name is quoted so that it cannot reverse or hide the message', () => {
  it('writes bidi overrides and invisible characters as code points, for a new folder and an upload alike', async () => {
    const name = 'invoice\u202Efdp.md'
    const folder = await api('/api/v1/workspace/directory', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri: 'kb://me/', name }) })
    expect(folder.status).toBe(400)
    const folderMessage = (await folder.json()).error.message as string
    expect(folderMessage).toBe('the name "invoice\\u{202E}fdp.md" is not allowed: invisible or control character U+202E is not allowed in a name')
    const body = new FormData()
    body.append('file', new Blob(['x']), 'zero\u200Bwidth.md')
    const upload = await api('/api/v1/workspace/upload?uri=kb://me/docs/', { method: 'POST', body })
    expect(upload.status).toBe(400)
    const uploadMessage = (await upload.json()).error.message as string
    expect(uploadMessage).toContain('file name "zero\\u{200B}width.md" is not allowed')
    for (const message of [folderMessage, uploadMessage]) expect(message).not.toMatch(/[\u200B\u202E]/)
  })
})

describe('the search page', () => {
  it('refuses a query over 200 characters with a message, as the API does (it was cut to 200 silently)', async () => {
    const res = await fetch(`${server.url}/workspace/search?q=${'x'.repeat(201)}`, { headers: { cookie: session.cookie } })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('at most 200 characters')
    expect((await fetch(`${server.url}/workspace/search?q=${'x'.repeat(200)}`, { headers: { cookie: session.cookie } })).status).toBe(200)
  })
})

describe('a body that is valid JSON but not an object', () => {
  it.each(['null', '5', '"text"', 'true', '[]'])('%s is 400 invalid_body on every JSON endpoint (not invalid_json: it parses)', async (body) => {
    for (const path of ['/api/v1/knowledge-agent/stream', '/api/v1/knowledge-agent/command', '/api/v1/workspace/directory']) {
      const res = await api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      expect([path, res.status, (await res.json()).error.code]).toEqual([path, 400, 'invalid_body'])
    }
    const openai = await api('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect([openai.status, (await openai.json()).error.code]).toEqual([400, 'invalid_body'])
  })
})

describe('bodies the server cannot read', () => {
  it('a charset other than UTF-8 is 415 unsupported_media_type; an unknown or doubled Content-Encoding is 415 unsupported_content_encoding', async () => {
    const post = (headers: Record<string, string>) => api('/api/v1/knowledge-agent/command', { method: 'POST', headers, body: '{"command":"ls","uri":"kb://me/"}' })
    const latin1 = await post({ 'content-type': 'application/json; charset=latin1' })
    expect([latin1.status, (await latin1.json()).error.code]).toEqual([415, 'unsupported_media_type'])
    for (const encoding of ['gzip, gzip', 'compress']) {
      const res = await post({ 'content-type': 'application/json', 'content-encoding': encoding })
      expect([encoding, res.status, (await res.json()).error.code]).toEqual([encoding, 415, 'unsupported_content_encoding'])
    }
    const plain = await post({ 'content-type': 'application/json' })
    expect(plain.status).toBe(200)
  })

  // Each request below keeps sending until it has an answer: it gets one only if the server
  // answers while the body is still arriving (express's parsers read a too-large body to its end first).
  it('a JSON body that never ends is 413 payload_too_large once it passes the limit', async () => {
    const head = Buffer.from('{"uri":"kb://me/","model_id":"local","message":"')
    for (const path of ['/api/v1/knowledge-agent/stream', '/v1/chat/completions']) {
      const res = await postNeverEnding(`${server.url}${path}`, { headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, head })
      expect([path, res.status, JSON.parse(res.body).error.code]).toEqual([path, 413, 'payload_too_large'])
      expect(JSON.parse(res.body).error.message).toBe('the request body is over 2 MB')
    }
  })

  it('a body declared longer than the limit is 413 before any of it is read', async () => {
    const res = await postNeverEnding(`${server.url}/api/v1/knowledge-agent/command`, {
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json', 'content-length': String(10 * 1024 ** 3) },
      head: Buffer.from('{"command":"ls","uri":"kb://me/","x":"'),
    })
    expect([res.status, JSON.parse(res.body).error.code]).toEqual([413, 'payload_too_large'])
  })

  it('a form that never ends is 413 too (the sign-in form, 16 KB), and the server still answers', async () => {
    const res = await postNeverEnding(`${server.url}/login`, { headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' }, head: Buffer.from('login=alice&password=') })
    expect(res.status).toBe(413)
    expect(res.body).toContain('the request body is over 16 KB')
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200)
  })
})
