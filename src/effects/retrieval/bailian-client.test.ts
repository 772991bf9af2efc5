// The Bailian client over real HTTP against the shared fake service: request shapes, paging and
// truncation, client-side top_k, typed errors (bodies cut to 500 characters, `code: message`
// first, the key never echoed), time limits, and interruption aborting the request.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import {
  agentNotFound,
  bailianError,
  chatStream,
  type FakeBailian,
  invalidApiKey,
  invalidParameter,
  jsonAnswer,
  manyServices,
  searchAnswer,
  serverError,
  stalledChat,
  startFakeBailian,
  throttling,
} from '../../../tests/support/fake-bailian.ts'
import type { BailianChatEvent } from './bailian-chat-stream.ts'
import { type BailianConnection, LIST_PAGE_SIZE, makeBailianClient } from './bailian-client.ts'
import type { BailianHttpError } from './bailian-errors.ts'

const API_KEY = 'sk-bailian-client-test-9d2f4c'
let fake: FakeBailian
let connection: BailianConnection
const client = makeBailianClient({ requestTimeoutMs: 2_000 })

beforeAll(async () => {
  fake = await startFakeBailian()
  connection = { apiKey: API_KEY, workspaceId: 'ws-client', endpointHost: fake.endpointHost }
})
afterAll(async () => {
  await fake.close()
})
beforeEach(() => {
  fake.setWorkspace('ws-client', {
    apiKey: API_KEY,
    services: [
      { agent_id: 'search-a', agent_name: 'HR handbook search', scene: 'search', modify_time: '2026-03-01 10:00:00' },
      { agent_id: 'search-draft', agent_name: 'Draft search', scene: 'search', status: 'draft' },
      { agent_id: 'chat-a', agent_name: 'Product Q&A', scene: 'chat' },
    ],
    searchNodes: {
      'search-a': [
        { score: 0.2, text: 'low', metadata: { doc_id: 'd3' } },
        { score: 0.9, text: 'high', metadata: { doc_id: 'd1', doc_name: 'policy.md', title: 'Leave' } },
        { score: 0.5, text: 'middle', metadata: { doc_id: 'd2', doc_name: 'faq.md' } },
      ],
    },
    chatAnswers: { 'chat-a': 'Twenty days of leave.' },
  })
})

async function failureOf<A, E>(effect: Effect.Effect<A, E>): Promise<E> {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`)
  const failure = exit.cause.reasons.find((reason) => reason._tag === 'Fail')
  if (failure === undefined) throw new Error(`not a typed failure: ${Cause.pretty(exit.cause)}`)
  return failure.error as E
}

describe('list', () => {
  // Issue 34: a service whose name echoed the key kept it in the catalog
  // cache, the settings page and the catalog block the model sees.
  test('a key echoed in a listed service is redacted where the list is decoded', async () => {
    fake.setWorkspace('ws-client', {
      apiKey: API_KEY,
      services: [{ agent_id: 'search-echo', agent_name: `Search for ${API_KEY}`, scene: 'search' }],
    })
    const listing = await Effect.runPromise(client.listScene(connection, 'search'))
    expect(listing.entries).toHaveLength(1)
    expect(JSON.stringify(listing)).not.toContain(API_KEY)
    expect(listing.entries[0]).toMatchObject({ agentId: 'search-echo', agentName: 'Search for [redacted]' })
  })

  test('queries each scene separately, deployed only, with the bearer key', async () => {
    const before = fake.requests.length
    const catalog = await Effect.runPromise(client.listCatalog(connection))
    expect(catalog.search).toEqual({
      scene: 'search',
      entries: [{ agentId: 'search-a', agentName: 'HR handbook search', scene: 'search', status: 'deployed', modifyTime: '2026-03-01 10:00:00', description: undefined }],
      total: 1,
      truncated: false,
    })
    expect(catalog.chat.entries.map((entry) => entry.agentId)).toEqual(['chat-a'])
    const sent = fake.requests.slice(before)
    expect(sent.map((request) => request.body)).toEqual([
      { agent_scene: 'search', agent_status: 'deployed', page_number: 1, page_size: LIST_PAGE_SIZE },
      { agent_scene: 'chat', agent_status: 'deployed', page_number: 1, page_size: LIST_PAGE_SIZE },
    ])
    for (const request of sent) {
      expect(request.path).toBe('/api/v1/indices/rag/app/list')
      expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`)
      expect(request.headers['content-type']).toBe('application/json')
    }
  })

  test.each([
    [150, 2, 150, false],
    [200, 3, 200, false],
    [250, 2, 200, true],
  ])('%i services: %i requests, %i kept, truncated %s', async (count, requests, kept, truncated) => {
    fake.setWorkspace('ws-client', { apiKey: API_KEY, services: manyServices('search', count) })
    const before = fake.requests.length
    const listing = await Effect.runPromise(client.listScene(connection, 'search'))
    expect(listing.entries).toHaveLength(kept)
    expect(listing.total).toBe(count)
    expect(listing.truncated).toBe(truncated)
    // Two full pages, then (200 exactly) one empty page is never asked for: at most two pages.
    expect(fake.requests.length - before).toBe(Math.min(requests, 2))
  })

  test('a failing scene fails the whole catalog', async () => {
    fake.enqueue('list', jsonAnswer({ success: true, data: { total_count: 0, rows: [] } }), serverError(503))
    const error = await failureOf(client.listCatalog(connection))
    expect(error).toMatchObject({ _tag: 'BailianHttpError', operation: 'list', status: 503, code: 'retrieval.server_error' })
  })

  test('a body without data.rows is a protocol failure', async () => {
    fake.enqueue('list', jsonAnswer({ success: true, data: { rows: 'nope' } }))
    expect(await failureOf(client.listScene(connection, 'chat'))).toMatchObject({ _tag: 'BailianProtocolError', code: 'retrieval.protocol' })
  })
})

describe('search', () => {
  test('applies top_k client-side to the score-ranked nodes; top_k is never sent', async () => {
    const result = await Effect.runPromise(client.search(connection, { agentId: 'search-a', query: 'leave days', topK: 2 }))
    expect(result.chunks).toEqual([
      { text: 'high', score: 0.9, doc_id: 'd1', doc_name: 'policy.md', title: 'Leave' },
      { text: 'middle', score: 0.5, doc_id: 'd2', doc_name: 'faq.md' },
    ])
    expect(result.returned).toBe(3)
    expect(fake.requests.at(-1)!.body).toEqual({ agent_id: 'search-a', query: 'leave days' })
    expect(fake.requests.at(-1)!.path).toBe('/api/v1/indices/knowledge/search')
  })

  test('forwards agent_version when configured', async () => {
    await Effect.runPromise(client.search({ ...connection, agentVersion: 'beta' }, { agentId: 'search-a', query: 'q', topK: 5 }))
    expect(fake.requests.at(-1)!.body).toEqual({ agent_id: 'search-a', query: 'q', agent_version: 'beta' })
  })

  test('checks `success`, not only the HTTP status', async () => {
    fake.enqueue('search', searchAnswer([], { success: false }))
    const error = await failureOf(client.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))
    expect(error).toMatchObject({ _tag: 'BailianHttpError', status: 200, serverCode: 'Index.InvalidParameter', detail: 'Index.InvalidParameter: The index is not ready.' })
    expect((error as BailianHttpError).isRejection).toBe(true)
  })

  test.each([
    ['InvalidApiKey (401)', invalidApiKey(), 401, 'InvalidApiKey', 'retrieval.rejected', true],
    ['InvalidParameter (400)', invalidParameter(), 400, 'InvalidParameter', 'retrieval.rejected', true],
    ['AgentApp.NotFound (400)', agentNotFound('x'), 400, 'AgentApp.NotFound', 'retrieval.rejected', true],
    ['Throttling (429)', throttling(), 429, 'Throttling', 'retrieval.throttled', false],
    ['5xx', serverError(502), 502, 'InternalError', 'retrieval.server_error', false],
  ])('%s → typed error, `code: message` first', async (_name, script, status, serverCode, code, rejection) => {
    fake.enqueue('search', script)
    const error = (await failureOf(client.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))) as BailianHttpError
    expect(error).toMatchObject({ _tag: 'BailianHttpError', operation: 'search', status, serverCode, code })
    expect(error.detail.startsWith(`${serverCode}: `)).toBe(true)
    expect(error.isRejection).toBe(rejection)
  })

  test('the default fake rejects an unknown agent and a wrong key like the service', async () => {
    expect(await failureOf(client.search(connection, { agentId: 'gone', query: 'q', topK: 5 }))).toMatchObject({ status: 400, serverCode: 'AgentApp.NotFound' })
    expect(await failureOf(client.search({ ...connection, apiKey: 'sk-wrong-key-000' }, { agentId: 'search-a', query: 'q', topK: 5 }))).toMatchObject({
      status: 401,
      serverCode: 'InvalidApiKey',
    })
  })

  test('error bodies are cut to 500 characters; plain-text bodies are kept as text', async () => {
    fake.enqueue('search', bailianError(400, 'InvalidParameter', 'x'.repeat(3_000)))
    const long = (await failureOf(client.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))) as BailianHttpError
    expect(Array.from(long.detail)).toHaveLength(500)
    expect(long.detail.endsWith('…')).toBe(true)
    fake.enqueue('search', { kind: 'response', status: 502, body: '<html>Bad gateway</html>' })
    const html = (await failureOf(client.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))) as BailianHttpError
    expect(html.detail).toBe('<html>Bad gateway</html>')
  })

  test('the API key never appears in an error, even when the service echoes it', async () => {
    fake.enqueue('search', bailianError(401, 'InvalidApiKey', `Invalid API-key provided: ${API_KEY}`))
    const error = await failureOf(client.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))
    expect(JSON.stringify(error)).not.toContain(API_KEY)
    expect(error.message).not.toContain(API_KEY)
    expect(error.message).toContain('[redacted]')
  })

  test('a slow answer is a timeout; the request is abandoned', async () => {
    const quick = makeBailianClient({ requestTimeoutMs: 100 })
    fake.enqueue('search', { kind: 'hang' })
    const index = fake.requests.length
    const error = await failureOf(quick.search(connection, { agentId: 'search-a', query: 'q', topK: 5 }))
    expect(error).toMatchObject({ _tag: 'BailianTimeout', operation: 'search', timeoutMs: 100, code: 'retrieval.timeout' })
    await fake.waitForClientClose(index)
  })

  test('an unreachable service is a connection error naming no host', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const error = await failureOf(client.search({ ...connection, endpointHost: `http://127.0.0.1:${port}` }, { agentId: 'a', query: 'q', topK: 1 }))
    expect(error).toMatchObject({ _tag: 'BailianConnectionError', reason: 'ECONNREFUSED', code: 'retrieval.connection' })
    expect(error.message).not.toContain('127.0.0.1')
  })
})

describe('chat', () => {
  test('streams steps as progress and the generating text as the answer', async () => {
    const events: BailianChatEvent[] = []
    const result = await Effect.runPromise(
      client.chat(connection, { agentId: 'chat-a', question: 'How many days?', timeoutMs: 5_000, onEvent: (event) => events.push(event) }),
    )
    expect(result.answer).toBe('Twenty days of leave.')
    expect(result.finishReason).toBe('stop')
    expect(result.steps).toEqual(['tool_calling', 'tool_return', 'plan_start', 'planning', 'plan_end', 'generation_start', 'generating', 'generation_end'])
    expect(events.filter((event) => event.type === 'step')).toHaveLength(8)
    expect(events.filter((event) => event.type === 'answer').map((event) => (event as { text: string }).text).join('')).toBe('Twenty days of leave.')
    expect(fake.requests.at(-1)!.path).toBe('/api/v2/apps/knowledge/chat')
  })

  test('a stalled chat times out with guidance, keeping nothing invented, and the request is closed', async () => {
    fake.enqueue('chat', stalledChat())
    const index = fake.requests.length
    const error = await failureOf(client.chat(connection, { agentId: 'chat-a', question: 'q', timeoutMs: 150 }))
    expect(error).toMatchObject({ _tag: 'BailianTimeout', operation: 'chat', timeoutMs: 150, partialText: '' })
    expect(error.message).toMatch(/multi-round retrieval/)
    expect(error.message).toMatch(/kb_search/)
    await fake.waitForClientClose(index)
  })

  test('a timeout after some answer text keeps the text', async () => {
    fake.enqueue('chat', chatStream([{ answer: 'Half of it' }], { end: 'hang' }))
    const error = await failureOf(client.chat(connection, { agentId: 'chat-a', question: 'q', timeoutMs: 150 }))
    expect(error).toMatchObject({ _tag: 'BailianTimeout', partialText: 'Half of it' })
  })

  test('interrupting the Effect aborts the request', async () => {
    fake.enqueue('chat', stalledChat())
    const index = fake.requests.length
    const controller = new AbortController()
    const running = Effect.runPromiseExit(client.chat(connection, { agentId: 'chat-a', question: 'q', timeoutMs: 60_000 }), { signal: controller.signal })
    await fake.waitForRequests(index + 1)
    controller.abort()
    const exit = await running
    expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
    await fake.waitForClientClose(index)
  })

  test('an HTTP error before the stream is a typed error', async () => {
    expect(await failureOf(client.chat(connection, { agentId: 'nope', question: 'q', timeoutMs: 5_000 }))).toMatchObject({
      _tag: 'BailianHttpError',
      operation: 'chat',
      status: 400,
      serverCode: 'AgentApp.NotFound',
    })
  })

  test('a JSON refusal where a stream was expected is a typed error', async () => {
    fake.enqueue('chat', jsonAnswer({ success: false, code: 'InvalidParameter', message: 'bad messages' }))
    expect(await failureOf(client.chat(connection, { agentId: 'chat-a', question: 'q', timeoutMs: 5_000 }))).toMatchObject({
      _tag: 'BailianHttpError',
      status: 200,
      detail: 'InvalidParameter: bad messages',
    })
  })

  test('an error event after content fails with the text kept', async () => {
    fake.enqueue('chat', chatStream([{ answer: 'Begun' }, { error: { code: 'InternalError', message: 'boom' } }]))
    expect(await failureOf(client.chat(connection, { agentId: 'chat-a', question: 'q', timeoutMs: 5_000 }))).toMatchObject({
      _tag: 'BailianStreamError',
      code: 'retrieval.stream_error',
      partialText: 'Begun',
      detail: 'InternalError: boom',
    })
  })
})
