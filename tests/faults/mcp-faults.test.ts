// Hostile input on /mcp (issue 39): malformed JSON-RPC, bodies that are too large or never end,
// batch floods and unknown methods get protocol errors — a JSON-RPC error object with the right
// code — and the server answers an ordinary client right after. A flood of slow calls is held to
// the per-user cap, and a client that goes away (or cancels) lets every call of its request go:
// the fake Bailian sees each of its requests closed, and a cancelled request gets no reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AppConfig } from '../../src/effects/config/app-config.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { CALLS_PER_USER } from '../../src/effects/tools/running-calls.ts'
import { STREAMS_PER_USER } from '../../src/http/mcp-server.ts'
import { MCP_MAX_BATCH } from '../../src/http/mcp.routes.ts'
import { decodeSseStream } from '../../src/sse/sse-decoder.ts'
import { type FakeBailian, stalledChat } from '../support/fake-bailian.ts'
import { connectMcp, MCP_PROTOCOL, startMcpBailian, useMcpBailian } from '../support/mcp-client.ts'
import { postNeverEnding, postRaw } from '../support/raw-http.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'
import { waitUntil } from '../support/wait-until.ts'

const PROTOCOL = MCP_PROTOCOL
/** kb_search and kb_chat calls per user a minute (limits.streamsPerMinute): room for this file's slow calls, few enough to reach. */
const RETRIEVAL_PER_MINUTE = 20

let fake: FakeBailian
let server: TestServer
let token: string

const configure = (config: AppConfig): AppConfig => ({
  ...config,
  streamsPerMinute: RETRIEVAL_PER_MINUTE,
  retrievalBailian: resolveBailianConfig({ endpointHost: fake.endpointHost }),
})

/** A user whose Bailian settings point at the fake. */
async function retrievalUser(target: TestServer, login: string) {
  const user = await addUserWithToken(target, login)
  await useMcpBailian(target, user.user.id)
  return user
}

beforeAll(async () => {
  fake = await startMcpBailian()
  server = await startTestServer({ retrieval: true, configure })
  const alice = await retrievalUser(server, 'alice')
  token = alice.token
  await putText(server.database.db, { owner: alice.user, segments: ['notes', 'a.md'], text: 'Queues and retries.' })
})
afterAll(async () => {
  await server?.close()
  await fake?.close()
})

const headers = (extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${token}`,
  'mcp-protocol-version': PROTOCOL,
  ...extra,
})

const post = (body: string, extra: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${server.url}/mcp`, { method: 'POST', headers: headers(extra), body, signal })

/** The JSON-RPC messages of an answer: a JSON body, or each `data:` of an SSE body. */
async function messagesOf(res: Response): Promise<Array<Record<string, unknown>>> {
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) return [await res.json()]
  const messages: Array<Record<string, unknown>> = []
  for await (const event of decodeSseStream(res.body!)) if (event.data !== '') messages.push(JSON.parse(event.data))
  return messages
}

const request = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params })

const connect = (url: string, bearer: string) => connectMcp(url, bearer)

/** An ordinary client still gets its answers. */
async function serverStillAnswers(): Promise<void> {
  const client = await connect(server.url, token)
  const { tools } = await client.listTools()
  expect(tools.map((tool) => tool.name)).toContain('read')
  await client.close()
}

describe('malformed JSON-RPC', () => {
  it.each([
    ['JSON that does not parse', 400, -32700, '{"jsonrpc":"2.0","id":1,'],
    ['a JSON string', 400, -32700, '"tools/list"'],
    ['null', 400, -32700, 'null'],
    ['an object that is no JSON-RPC message', 400, -32700, '{"hello":"world"}'],
    ['a request whose params are a string', 400, -32700, '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"all"}'],
    ['an empty batch', 400, -32600, '[]'],
    ['a NUL character in a string', 400, -32600, JSON.stringify(request(1, 'tools/call', { name: 'read', arguments: { uri: 'kb://me/a\u0000' } }))],
  ])('%s → HTTP %i, JSON-RPC error %i', async (_name, status, code, body) => {
    const res = await post(body)
    expect(res.status).toBe(status)
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code } })
  })

  it('what the transport requires: a JSON content type (415), an Accept with both types (406), a protocol version it speaks (400)', async () => {
    const body = JSON.stringify(request(1, 'tools/list'))
    expect((await post(body, { 'content-type': 'text/plain' })).status).toBe(415)
    expect((await post(body, { accept: 'application/json' })).status).toBe(406)
    const version = await post(body, { 'mcp-protocol-version': '1999-01-01' })
    expect(version.status).toBe(400)
    expect(await version.json()).toMatchObject({ error: { code: -32000, message: expect.stringContaining('Unsupported protocol version') } })
    expect((await post(body, { 'mcp-session-id': 'has spaces in it' })).status).toBe(400)
  })

  it('unknown methods and bad params are JSON-RPC errors of their request; notifications alone are 202', async () => {
    const res = await post(JSON.stringify([request(1, 'tools/destroy'), request(2, 'resources/read', { uri: 42 }), request(3, 'ping')]))
    expect(res.status).toBe(200)
    const byId = new Map((await messagesOf(res)).map((message) => [message['id'], message]))
    expect(byId.get(1)).toMatchObject({ error: { code: -32601 } })
    expect(byId.get(2)).toMatchObject({ error: { code: -32603 } })
    expect(byId.get(3)).toMatchObject({ result: {} })
    const notification = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/whatever', params: {} }))
    expect(notification.status).toBe(202)
    await serverStillAnswers()
  })

  it('a deeply nested body within the size limit is refused or answered, never a crash', async () => {
    const depth = 100_000
    const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"uri":${'['.repeat(depth)}${']'.repeat(depth)}}}}`
    const res = await post(body)
    expect(res.status).toBe(200)
    const [answer] = await messagesOf(res)
    expect(answer).toMatchObject({ id: 1, result: { isError: true, structuredContent: { error: { code: 'invalid_arguments' } } } })
    await serverStillAnswers()
  })
})

describe('oversize messages', () => {
  it('a body over the limit is 413 with a JSON-RPC error, also one that never ends (it is not read to its end)', async () => {
    const big = JSON.stringify(request(1, 'tools/call', { name: 'search', arguments: { query: 'x'.repeat(300 * 1024) } }))
    const res = await postRaw(`${server.url}/mcp`, { headers: headers(), body: Buffer.from(big) })
    expect(res.status).toBe(413)
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: -32600, data: { code: 'payload_too_large' } } })
    const endless = await postNeverEnding(`${server.url}/mcp`, { headers: { ...headers(), 'transfer-encoding': 'chunked' }, head: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"') })
    expect(endless.status).toBe(413)
    await serverStillAnswers()
  })
})

describe('batch floods', () => {
  it(`a batch over ${MCP_MAX_BATCH} messages is refused whole; a full batch of calls is answered call by call`, async () => {
    const tooMany = await post(JSON.stringify(Array.from({ length: MCP_MAX_BATCH + 1 }, (_, i) => request(i, 'ping'))))
    expect(tooMany.status).toBe(400)
    expect(await tooMany.json()).toMatchObject({ error: { code: -32600, data: { code: 'batch_too_large' } } })

    const calls = Array.from({ length: MCP_MAX_BATCH }, (_, i) => request(i, 'tools/call', { name: 'read', arguments: { uri: 'kb://me/notes/a.md' } }))
    const floods = await Promise.all(Array.from({ length: 6 }, () => post(JSON.stringify(calls)).then(messagesOf)))
    for (const answers of floods) {
      expect(answers.map((answer) => answer['id']).sort((a, b) => Number(a) - Number(b))).toEqual(calls.map((call) => call.id))
      for (const answer of answers) {
        const result = (answer as { result: { isError: boolean; structuredContent: Record<string, unknown> } }).result
        // Each call ran, or was refused by the per-user cap while the others ran.
        if (result.isError) expect(result.structuredContent).toMatchObject({ error: { code: 'too_many_calls' } })
        else expect(result.structuredContent).toMatchObject({ text: 'Queues and retries.' })
      }
    }
    await serverStillAnswers()
  })

  it(`slow calls past the cap are refused at once; the client going away closes every request of its batch to Bailian`, async () => {
    const slow = CALLS_PER_USER + 1
    for (let i = 0; i < CALLS_PER_USER; i++) fake.enqueue('chat', stalledChat())
    const before = fake.requests.length
    const chatsBefore = fake.requestsFor('chat').length
    const leave = new AbortController()
    const batch = Array.from({ length: slow }, (_, i) => request(i, 'tools/call', { name: 'kb_chat', arguments: { question: `q${i}`, agent_id: 'chat-docs' } }))
    const res = await post(JSON.stringify(batch), {}, leave.signal)
    expect(res.status).toBe(200)
    const refused = Promise.withResolvers<Record<string, unknown>>()
    const reading = (async () => {
      for await (const event of decodeSseStream(res.body!)) {
        const message = JSON.parse(event.data) as Record<string, unknown>
        if ('result' in message) refused.resolve(message)
      }
    })().catch(() => undefined)
    expect(await refused.promise).toMatchObject({ result: { isError: true, structuredContent: { error: { code: 'too_many_calls' } } } })
    await fake.waitForRequests(chatsBefore + CALLS_PER_USER, { operation: 'chat' })
    const chats = fake.requests.flatMap((entry, index) => (index >= before && entry.operation === 'chat' ? [index] : []))
    expect(chats).toHaveLength(CALLS_PER_USER)
    leave.abort()
    await reading
    for (const index of chats) expect((await fake.waitForClientClose(index)).clientClosedAt).toBeDefined()
    await serverStillAnswers()
  })
})

describe('cancellation on the wire', () => {
  it('notifications/cancelled ends the call and its response with no reply; Bailian sees its request closed', async () => {
    fake.enqueue('chat', stalledChat())
    const before = fake.requests.length
    const session = 'fault-suite-session'
    const res = await post(JSON.stringify(request(7, 'tools/call', { name: 'kb_chat', arguments: { question: 'slow', agent_id: 'chat-docs' }, _meta: { progressToken: 'p7' } })), {
      'mcp-session-id': session,
    })
    const messages: Array<Record<string, unknown>> = []
    const progressed = Promise.withResolvers<void>()
    const reading = (async () => {
      for await (const event of decodeSseStream(res.body!)) {
        messages.push(JSON.parse(event.data))
        progressed.resolve()
      }
    })()
    await progressed.promise
    expect(messages[0]).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'p7', progress: 1, message: 'Planning…\n' } })
    const cancel = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'stop' } }), { 'mcp-session-id': session })
    expect(cancel.status).toBe(202)
    await reading // the response ends
    expect(messages.filter((message) => 'id' in message)).toEqual([])
    const chat = fake.requests.findIndex((entry, index) => index >= before && entry.operation === 'chat')
    expect((await fake.waitForClientClose(chat)).clientClosedAt).toBeDefined()
  })
})

describe('limits and shutdown', () => {
  it(`kb_search and kb_chat count against the per-user rate limit (${RETRIEVAL_PER_MINUTE} a minute): then rate_limited with retry_after, other tools still run`, async () => {
    const bob = await retrievalUser(server, 'bob')
    const client = await connect(server.url, bob.token)
    const search = () => client.callTool({ name: 'kb_search', arguments: { query: 'queues', agent_id: 'search-docs' } })
    for (let i = 0; i < RETRIEVAL_PER_MINUTE; i++) expect((await search()).isError).toBe(false)
    const searches = fake.requestsFor('search').length
    const refused = await search()
    expect(refused).toMatchObject({ isError: true, structuredContent: { error: { code: 'rate_limited', retry_after: expect.any(Number) } } })
    expect(fake.requestsFor('search')).toHaveLength(searches) // refused before Bailian
    expect((await client.callTool({ name: 'ls', arguments: {} })).isError).toBe(false)
    await client.close()
  })

  it(`a user holds at most ${STREAMS_PER_USER} streams at once in a process: one more is 429 too_many_streams, and a closed one frees its place`, async () => {
    const dave = await addUserWithToken(server, 'dave')
    const open = (session: string, signal?: AbortSignal) =>
      fetch(`${server.url}/mcp`, { headers: { ...headers(), authorization: `Bearer ${dave.token}`, 'mcp-session-id': session }, signal })
    const leave = Array.from({ length: STREAMS_PER_USER }, () => new AbortController())
    const streams = await Promise.all(leave.map((controller, i) => open(`dave-${i}`, controller.signal)))
    expect(streams.map((res) => res.status)).toEqual(streams.map(() => 200))
    const refused = await open('dave-extra')
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ error: { data: { code: 'too_many_streams' } } })
    leave[0]!.abort()
    await streams[0]!.body?.cancel().catch(() => undefined)
    // The server sees the client go: then the place is free again.
    await waitUntil(async () => {
      const again = await open('dave-again')
      await again.body?.cancel()
      return again.status === 200
    }, 'the closed stream to free its place')
    for (const controller of leave) controller.abort()
  })

  it('shutdown stops a running call and ends the streams: the request to Bailian is closed and the responses end', async () => {
    const other = await startTestServer({ retrieval: true, configure, databaseUrl: server.database.url })
    try {
      const carol = await retrievalUser(other, 'carol')
      fake.enqueue('chat', stalledChat())
      const before = fake.requests.length
      const res = await fetch(`${other.url}/mcp`, {
        method: 'POST',
        headers: { ...headers(), authorization: `Bearer ${carol.token}` },
        body: JSON.stringify(request(1, 'tools/call', { name: 'kb_chat', arguments: { question: 'slow', agent_id: 'chat-docs' }, _meta: { progressToken: 1 } })),
      })
      const progressed = Promise.withResolvers<void>()
      const reading = (async () => {
        for await (const _event of decodeSseStream(res.body!)) progressed.resolve()
      })().catch(() => undefined)
      await progressed.promise
      const stream = await fetch(`${other.url}/mcp`, { headers: { ...headers(), authorization: `Bearer ${carol.token}`, 'mcp-session-id': 'carol-1' } })
      expect(stream.status).toBe(200)
      const streamEnded = stream.text()
      other.shutdownController.abort()
      await reading
      await streamEnded
      const chat = fake.requests.findIndex((entry, index) => index >= before && entry.operation === 'chat')
      expect((await fake.waitForClientClose(chat)).clientClosedAt).toBeDefined()
    } finally {
      await other.close()
    }
  })
})
