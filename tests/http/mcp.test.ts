// The workspace as an MCP server (issue 39), through the SDK's own client over real HTTP: the
// handshake, the registry's tools with their schemas, every tool called (scope narrowed by kb_uri,
// refusals as tool errors), the workspace as paged kb:// resources, subscriptions to a file's new
// versions, kb_chat's progress, a cancel that closes the request to Bailian — also when the cancel
// reaches another server process — and the token: only a bearer token, and a revoked one refused
// at once, even mid-call or mid-stream.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiTokenFor, listApiTokens, revokeApiTokens } from '../../src/effects/auth/users.ts'
import type { AppConfig } from '../../src/effects/config/app-config.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { putFile, putFileInTransaction } from '../../src/effects/workspace/store.ts'
import { RESOURCES_PER_PAGE } from '../../src/http/mcp-resources.ts'
import { type FakeBailian, stalledChat } from '../support/fake-bailian.ts'
import { connectMcp, MCP_BAILIAN_KEY, openMcpStream, sessionOf, startMcpBailian, useMcpBailian } from '../support/mcp-client.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const KEY = MCP_BAILIAN_KEY
const LONG = 'Queues hold work. '.repeat(500) // 9,000 code points: two pages of resources/read
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3, 254, 255])

let fake: FakeBailian
let server: TestServer
let close: () => Promise<void>
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let bob: Awaited<ReturnType<typeof addUserWithToken>>

const configure = (config: AppConfig): AppConfig => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: fake.endpointHost }) })

const connect = (token: string, url = server.url, sent?: Array<{ id?: unknown; method?: string }>) => connectMcp(url, token, { sent })
/** The server's log lines of MCP streams that ended, and why. */
const streamEnds = () => server.logLines.filter((line) => line.includes('"MCP stream ended"'))

beforeAll(async () => {
  fake = await startMcpBailian()
  ;({ server, close } = await startScriptedServer({ retrieval: true, configure }))
  await server.ctx.feed!.ready()
  alice = await addUserWithToken(server, 'alice')
  bob = await addUserWithToken(server, 'bob')
  const db = server.database.db
  await putText(db, { owner: alice.user, segments: ['docs', 'queues.md'], text: `# Queues\n\n${LONG}` })
  await putText(db, { owner: alice.user, segments: ['docs', 'notes.txt'], text: 'A note about queues and retries.' })
  await putFile(db, { owner: alice.user, segments: ['docs', 'logo.png'], bytes: PNG, parsed: { ok: false, mime: 'image/png', error: 'not a text format' } })
  await putText(db, { owner: bob.user, segments: ['secret.md'], text: 'Bob only.' })
  await useMcpBailian(server, alice.user.id)
})
afterAll(async () => {
  await close?.()
  await fake?.close()
})

const updated = (uri: string) => ({ method: 'notifications/resources/updated', params: { uri } })

/** The index in `fake.requests` of the first chat request at or after `from` (a catalog list may come first). */
const chatIndex = (from: number) => fake.requests.findIndex((request, index) => index >= from && request.operation === 'chat')

const call = (client: Client, name: string, args: Record<string, unknown>, options?: Parameters<Client['callTool']>[2]) =>
  client.callTool({ name, arguments: args }, CallToolResultSchema, options)

describe('tools', () => {
  it('initialize names the server and its capabilities; tools/list is the registry with its derived schemas and kb_uri', async () => {
    const client = await connect(alice.token)
    expect(client.getServerVersion()?.name).toBe('knowagent')
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: { subscribe: true } })
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(server.ctx.tools.schemas.map((schema) => schema.function.name))
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['ls', 'read', 'search', 'status', 'kb_search', 'kb_chat']))
    for (const tool of tools) {
      const registered = server.ctx.tools.schemas.find((schema) => schema.function.name === tool.name)!.function
      expect(tool.description).toBe(registered.description)
      const { kb_uri, ...own } = tool.inputSchema.properties as Record<string, unknown>
      expect(own).toEqual(registered.parameters['properties'])
      expect(kb_uri).toMatchObject({ type: 'string' })
    }
    await client.close()
  })

  it('each workspace tool answers as structured content plus the same JSON as text', async () => {
    const client = await connect(alice.token)
    const ls = await call(client, 'ls', { uri: 'kb://me/docs/' })
    expect(ls.isError).toBe(false)
    expect(ls.structuredContent).toMatchObject({ uri: 'kb://users/alice/docs/', total: 3, next_offset: null })
    expect(JSON.parse((ls.content as Array<{ text: string }>)[0]!.text)).toEqual(ls.structuredContent)

    const read = await call(client, 'read', { uri: 'kb://me/docs/queues.md', limit: 100 })
    expect(read.structuredContent).toMatchObject({ uri: 'kb://users/alice/docs/queues.md', offset: 0, next_offset: 100, text: `# Queues\n\n${LONG}`.slice(0, 100) })

    const search = await call(client, 'search', { query: 'retries' })
    expect((search.structuredContent as { hits: Array<{ uri: string }> }).hits.map((hit) => hit.uri)).toEqual(['kb://users/alice/docs/notes.txt'])

    const status = await call(client, 'status', { uri: 'kb://me/docs/notes.txt' })
    expect(status.structuredContent).toMatchObject({ kind: 'file', uri: 'kb://users/alice/docs/notes.txt', body: { kind: 'parse', status: 'succeeded' } })
    await client.close()
  })

  it('kb_uri narrows the scope as /v1 does: outside it, another user\'s tree and a bad URI are tool errors with the API\'s codes', async () => {
    const client = await connect(alice.token)
    const inside = await call(client, 'read', { kb_uri: 'kb://me/docs/', uri: 'kb://me/docs/notes.txt' })
    expect(inside.isError).toBe(false)
    const defaulted = await call(client, 'ls', { kb_uri: 'kb://me/docs/' })
    expect(defaulted.structuredContent).toMatchObject({ uri: 'kb://users/alice/docs/' })

    const outside = await call(client, 'ls', { kb_uri: 'kb://me/docs/', uri: 'kb://me/' })
    expect(outside).toMatchObject({ isError: true, structuredContent: { error: { code: 'outside_scope' } } })
    const foreign = await call(client, 'read', { uri: 'kb://users/bob/secret.md' })
    expect(foreign).toMatchObject({ isError: true, structuredContent: { error: { code: 'outside_scope' } } })
    expect(JSON.stringify(foreign)).not.toContain('Bob only')
    const foreignScope = await call(client, 'ls', { kb_uri: 'kb://users/bob/' })
    expect(foreignScope).toMatchObject({ isError: true, structuredContent: { error: { code: 'outside_scope' } } })
    const traversal = await call(client, 'read', { uri: 'kb://me/docs/../../users/bob/secret.md' })
    expect(traversal).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_uri' } } })
    const badArgs = await call(client, 'read', { uri: 'kb://me/docs/notes.txt', limit: 1_000_000 })
    expect(badArgs).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_arguments' } } })
    await expect(call(client, 'rm', {})).rejects.toThrow(/unknown tool "rm"/)
    await client.close()
  })

  it('kb_search and kb_chat reach the person\'s Bailian service; kb_chat sends progress while the service streams', async () => {
    const client = await connect(alice.token)
    const search = await call(client, 'kb_search', { query: 'queues', agent_id: 'search-docs', top_k: 2 })
    expect(search.structuredContent).toMatchObject({ agent_id: 'search-docs', chunks: [{ text: 'Passage 1 from Docs search.' }, { text: 'Passage 2 from Docs search.' }] })

    const progress: Progress[] = []
    const chat = await call(client, 'kb_chat', { question: 'What are queues?', agent_id: 'chat-docs' }, { onprogress: (update) => progress.push(update) })
    expect(chat.structuredContent).toMatchObject({ agent_id: 'chat-docs', answer: 'Answer from Docs Q&A.', finish_reason: 'stop' })
    expect(progress.map((update) => update.progress)).toEqual(progress.map((_, index) => index + 1))
    expect(progress.map((update) => update.message).join('')).toBe('Searching the knowledge base…\nPlanning…\nWriting the answer:\nAnswer from Docs Q&A.')
    expect(fake.requestsFor('chat').at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(JSON.stringify(chat)).not.toContain(KEY)
    await client.close()
  })

  it('a cancelled kb_chat stops: the request to Bailian is closed and the call is let go', async () => {
    const client = await connect(alice.token)
    fake.enqueue('chat', stalledChat())
    const index = fake.requests.length
    const cancel = new AbortController()
    const planning = Promise.withResolvers<void>()
    const running = call(client, 'kb_chat', { question: 'slow', agent_id: 'chat-docs' }, { signal: cancel.signal, onprogress: () => planning.resolve() })
    await planning.promise // the service is streaming: the call runs
    cancel.abort('no longer needed')
    await expect(running).rejects.toThrow()
    const closed = await fake.waitForClientClose(chatIndex(index))
    expect(closed.operation).toBe('chat')
    expect(closed.clientClosedAt).toBeDefined()
    expect((await call(client, 'ls', {})).isError).toBe(false) // the client goes on
    await client.close()
  })
})

describe('resources', () => {
  it('resources/list pages through every file and folder once, in path order; a bad cursor is invalid params', async () => {
    const db = server.database.db
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < RESOURCES_PER_PAGE; i++) {
        const text = `note ${i}`
        await putFileInTransaction(trx, { owner: alice.user, segments: ['many', `n${String(i).padStart(3, '0')}.txt`], bytes: Buffer.from(text), parsed: { ok: true, mime: 'text/plain', text } })
      }
    })
    const client = await connect(alice.token)
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor })
      seen.push(...page.resources.map((resource) => resource.uri))
      cursor = page.nextCursor
      pages += 1
    } while (cursor !== undefined && pages < 10)
    const expected = await db.selectFrom('nodes').select('path').where('owner_id', '=', alice.user.id).where('path', '!=', '').orderBy('path').execute()
    expect(seen).toHaveLength(expected.length)
    expect(new Set(seen).size).toBe(seen.length)
    expect(pages).toBe(2)
    expect(seen).toContain('kb://users/alice/docs/')
    expect(seen.every((uri) => uri.startsWith('kb://users/alice/'))).toBe(true)
    const first = await client.listResources()
    expect(first.resources.find((resource) => resource.uri === 'kb://users/alice/docs/logo.png')).toMatchObject({ mimeType: 'image/png', size: PNG.length })
    await expect(client.listResources({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: -32602 })
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(['kb://users/{login}/{+path}'])
    await client.close()
  })

  it('resources/read: a file\'s first page of text, a binary file\'s bytes, a folder\'s entries; another user\'s or a missing one is an error', async () => {
    const client = await connect(alice.token)
    const text = await client.readResource({ uri: 'kb://me/docs/queues.md' })
    expect(text.contents).toHaveLength(1)
    const page = text.contents[0] as { uri: string; mimeType: string; text: string; _meta: Record<string, unknown> }
    expect(page).toMatchObject({ uri: 'kb://users/alice/docs/queues.md', mimeType: 'text/markdown', text: `# Queues\n\n${LONG}`.slice(0, 6000) })
    expect(page._meta).toMatchObject({ offset: 0, next_offset: 6000, total: LONG.length + 10 })

    const binary = await client.readResource({ uri: 'kb://users/alice/docs/logo.png' })
    expect(binary.contents).toEqual([{ uri: 'kb://users/alice/docs/logo.png', mimeType: 'image/png', blob: Buffer.from(PNG).toString('base64') }])

    const folder = await client.readResource({ uri: 'kb://me/docs/' })
    expect(folder.contents[0]).toMatchObject({ mimeType: 'application/json' })
    expect(JSON.parse((folder.contents[0] as { text: string }).text)).toMatchObject({ uri: 'kb://users/alice/docs/', total: 3 })

    await expect(client.readResource({ uri: 'kb://users/bob/secret.md' })).rejects.toMatchObject({ code: -32602, data: { code: 'outside_scope' } })
    await expect(client.readResource({ uri: 'kb://me/docs/gone.md' })).rejects.toMatchObject({ code: -32002, data: { code: 'not_found' } })
    await expect(client.readResource({ uri: '/etc/passwd' })).rejects.toMatchObject({ code: -32602, data: { code: 'invalid_uri' } })
    await client.close()
  })
})

describe('subscriptions', () => {
  it('a followed file\'s new version is announced on its connection\'s stream only; unsubscribe stops it; a folder or another user\'s file cannot be followed', async () => {
    const db = server.database.db
    const first = await connect(alice.token)
    const second = await connect(alice.token)
    expect(first.getServerCapabilities()?.resources?.subscribe).toBe(true)
    const firstStream = await openMcpStream(server.url, alice.token, sessionOf(first))
    const secondStream = await openMcpStream(server.url, alice.token, sessionOf(second))
    await putText(db, { owner: alice.user, segments: ['followed', 'a.md'], text: 'a1' })
    await putText(db, { owner: alice.user, segments: ['followed', 'b.md'], text: 'b1' })
    await first.subscribeResource({ uri: 'kb://me/followed/a.md' })
    await first.subscribeResource({ uri: 'kb://users/alice/followed/b.md' })
    await second.subscribeResource({ uri: 'kb://me/followed/b.md' })

    await putText(db, { owner: alice.user, segments: ['followed', 'a.md'], text: 'a2' })
    expect(await firstStream.next(), streamEnds().join('\n')).toMatchObject(updated('kb://users/alice/followed/a.md'))
    await first.unsubscribeResource({ uri: 'kb://me/followed/a.md' })
    await putText(db, { owner: alice.user, segments: ['followed', 'a.md'], text: 'a3' }) // followed by no one now
    await putText(db, { owner: alice.user, segments: ['followed', 'b.md'], text: 'b2' })
    expect(await firstStream.next()).toMatchObject(updated('kb://users/alice/followed/b.md'))
    expect(await secondStream.next()).toMatchObject(updated('kb://users/alice/followed/b.md')) // never a.md: the other connection's

    await expect(first.subscribeResource({ uri: 'kb://me/followed/' })).rejects.toMatchObject({ code: -32602, data: { code: 'is_directory' } })
    await expect(first.subscribeResource({ uri: 'kb://users/bob/secret.md' })).rejects.toMatchObject({ code: -32602, data: { code: 'outside_scope' } })
    await first.close()
    await second.close()
    firstStream.close()
    secondStream.close()
  })
})

describe('auth and origin', () => {
  it('only a bearer token: none, a browser session or a wrong token is 401; a foreign Origin 403; GET without a session 405', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }
    const post = (headers: Record<string, string>) =>
      fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(initialize) })
    const session = await signIn(server, 'bob', bob.password)
    const refused: Array<Record<string, string>> = [{}, { cookie: session.cookie, 'x-csrf-token': session.csrf }, { authorization: 'Bearer nope' }]
    for (const headers of refused) {
      const res = await post(headers)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
      expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { data: { code: 'unauthorized' } } })
    }
    const foreign = await post({ authorization: `Bearer ${alice.token}`, origin: 'http://evil.example' })
    expect(foreign.status).toBe(403)
    expect(await foreign.json()).toMatchObject({ error: { data: { code: 'forbidden_origin' } } })
    const own = await post({ authorization: `Bearer ${alice.token}`, origin: server.url })
    expect(own.status).toBe(200)
    expect(own.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/)
    await own.body?.cancel()
    const get = await fetch(`${server.url}/mcp`, { headers: { authorization: `Bearer ${alice.token}`, accept: 'text/event-stream' } })
    expect(get.status).toBe(405)
  })

  it('a revoked token is refused from the next request on; a call and a stream running on it end at once', async () => {
    const token = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'alice', label: 'mcp-revoked' })
    const client = await connect(token)
    const stream = await openMcpStream(server.url, token, sessionOf(client))
    fake.enqueue('chat', stalledChat())
    const index = fake.requests.length
    const planning = Promise.withResolvers<void>()
    const running = call(client, 'kb_chat', { question: 'slow', agent_id: 'chat-docs' }, { onprogress: () => planning.resolve() })
    await planning.promise
    const id = (await listApiTokens(server.database.db, { userId: alice.user.id })).find((entry) => entry.label === 'mcp-revoked')!.id
    expect(await revokeApiTokens(server.database.db, { userId: alice.user.id, tokenId: id })).toBe(1)
    expect(await running).toMatchObject({ isError: true, structuredContent: { error: { code: 'unauthorized' } } })
    expect(await stream.next()).toBeUndefined() // the connection's stream ends too
    expect(streamEnds().map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(expect.objectContaining({ msg: 'MCP stream ended', userId: alice.user.id, reason: 'credential' }))
    expect((await fake.waitForClientClose(chatIndex(index))).clientClosedAt).toBeDefined()
    await expect(client.listTools()).rejects.toMatchObject({ code: 401, message: expect.stringContaining('invalid or revoked API token') })
    await expect(call(client, 'ls', {})).rejects.toMatchObject({ code: 401 })
  })
})

describe('several instances', () => {
  it('a cancel that reaches another server process stops the call where it runs; a subscription made through one is announced by the other (NOTIFY)', async () => {
    const second = await startTestServer({ retrieval: true, configure, databaseUrl: server.database.url })
    try {
      await second.ctx.feed!.ready()
      const sent: Array<{ id?: unknown; method?: string }> = []
      const client = await connect(alice.token, server.url, sent)
      fake.enqueue('chat', stalledChat())
      const index = fake.requests.length
      const planning = Promise.withResolvers<void>()
      const running = call(client, 'kb_chat', { question: 'slow', agent_id: 'chat-docs' }, { onprogress: () => planning.resolve() })
      running.catch(() => undefined)
      await planning.promise
      const transport = client.transport as StreamableHTTPClientTransport
      const requestId = sent.find((message) => message.method === 'tools/call')!.id
      const cancel = await fetch(`${second.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${alice.token}`,
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': transport.protocolVersion!,
        },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'from elsewhere' } }),
      })
      expect(cancel.status).toBe(202)
      expect((await fake.waitForClientClose(chatIndex(index))).clientClosedAt).toBeDefined()

      // The connection's stream held by the second process, its subscription made through the first.
      const stream = await openMcpStream(second.url, alice.token, transport.sessionId!)
      await client.subscribeResource({ uri: 'kb://me/docs/notes.txt' })
      await putText(server.database.db, { owner: alice.user, segments: ['docs', 'notes.txt'], text: 'Revised in another process.' })
      expect(await stream.next()).toMatchObject(updated('kb://users/alice/docs/notes.txt'))
      stream.close()
      await client.close()
    } finally {
      await second.close()
    }
  })
})

