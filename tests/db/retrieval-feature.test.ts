// Retrieval services end to end on real PostgreSQL and the fake Bailian service over real HTTP:
// the pre-step hook (content, change suppression, re-injection, refresh triggers), single flight,
// failures that keep the document, the kb_* tools' error semantics, progress, fallbacks, shutdown.
import * as Effect from 'effect/Effect'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { createLogger } from '../../src/effects/logging/logger.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { makeBailianSettings } from '../../src/effects/retrieval/bailian-settings.ts'
import { CATALOG_SOURCE } from '../../src/effects/retrieval/catalog-message.ts'
import { makeRetrievalFeature, type RetrievalFeature, type RetrievalFeatureOptions } from '../../src/effects/retrieval/retrieval-feature.ts'
import { makeToolRegistry, type ToolOutcome } from '../../src/effects/tools/tool-registry.ts'
import { parseKbUri } from '../../src/effects/workspace/uri.ts'
import type { ChatMessage, ContextBlock, PreStepOutput } from '../../src/machines/index.ts'
import {
  agentNotFound,
  chatStream,
  type FakeBailian,
  type FakeService,
  manyServices,
  serverError,
  stalledChat,
  startFakeBailian,
} from '../support/fake-bailian.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { waitUntil } from '../support/wait-until.ts'

const SECRET = 'retrieval-feature-secret-0123456789'
const KEY = 'sk-alice-bailian-7c1d'
const WS = 'ws-alice'
let database: TestDatabase
let fake: FakeBailian
let alice: User
let bob: User
let clock = Date.UTC(2026, 5, 1)
const logLines: string[] = []
const features: RetrievalFeature[] = []

const SERVICES: FakeService[] = [
  { agent_id: 'search-hr', agent_name: 'HR handbook search', scene: 'search', modify_time: '2026-05-01T00:00:00Z' },
  { agent_id: 'search-eng', agent_name: 'Engineering wiki search', scene: 'search', modify_time: '2026-05-02T00:00:00Z' },
  { agent_id: 'chat-product', agent_name: 'Product Q&A', scene: 'chat', modify_time: '2026-05-03T00:00:00Z' },
]

beforeAll(async () => {
  database = await openTestDatabase('postgres')
  fake = await startFakeBailian()
  alice = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
  bob = await createUser(database.db, { login: 'bob', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
})
afterAll(async () => {
  for (const feature of features) await feature.close()
  await fake?.close()
  await database?.close()
})
beforeEach(async () => {
  fake.setWorkspace(WS, { apiKey: KEY, services: [...SERVICES], chatAnswers: { 'chat-product': 'Twenty days of paid leave.' } })
  fake.setHandler(undefined)
  await database.db.deleteFrom('retrieval_catalogs').execute()
  await database.db.deleteFrom('retrieval_settings').execute()
  await database.db.deleteFrom('user_credentials').execute()
})
afterEach(async () => {
  while (features.length > 0) await features.pop()!.close()
})

function newFeature(overrides: Partial<RetrievalFeatureOptions> & { configFile?: Parameters<typeof resolveBailianConfig>[0] } = {}): RetrievalFeature {
  const { configFile, ...rest } = overrides
  const feature = makeRetrievalFeature({
    config: resolveBailianConfig({ endpointHost: fake.endpointHost, ...configFile }),
    db: database.db,
    secret: SECRET,
    env: {},
    logger: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
    listenConnection: { connectionString: database.url },
    blConfigPath: null,
    now: () => clock,
    ...rest,
  })
  if (feature === undefined) throw new Error('the feature is enabled by default')
  features.push(feature)
  return feature
}

/** Writes Alice's settings the way another process would: no refresh is announced to this feature. */
async function configureAlice(_feature: RetrievalFeature, values: { workspaceId?: string; defaultRetrieveAgentId?: string; defaultChatAgentId?: string } = {}) {
  const elsewhere = makeBailianSettings({ db: database.db, secret: SECRET, config: resolveBailianConfig({}), env: {}, blConfigPath: null, logger: createLogger({ write: () => {} }) })
  await elsewhere.setApiKey(alice.id, KEY)
  await elsewhere.saveSettings(alice.id, { workspaceId: WS, ...values })
}

const listRequests = () => fake.requestsFor('list').length

function step(feature: RetrievalFeature, { turnId = 'turn-1', visible = [], messages = [], user = alice }: { turnId?: string; visible?: ContextBlock[]; messages?: ChatMessage[]; user?: User } = {}): Promise<PreStepOutput> {
  return Effect.runPromise(feature.preStep({ caller: user, turnId, input: { step: 1, messages, visibleBlocks: visible, toolNames: ['kb_search', 'kb_chat'] } }))
}

const catalogOf = (output: PreStepOutput) => output.blocks?.find((block) => block.source === CATALOG_SOURCE)?.content

function runTool(feature: RetrievalFeature, name: string, args: unknown, { user = alice, progress = () => {} }: { user?: User; progress?: (text: string) => void } = {}): Promise<ToolOutcome> {
  const registry = makeToolRegistry(feature.tools)
  return Effect.runPromise(
    registry.run({ name, args, context: { db: database.db, caller: user, scope: parseKbUri({ uri: 'kb://me/', callerLogin: user.login }), progress } }),
  )
}

async function fetchedFeature(values?: Parameters<typeof configureAlice>[1]) {
  const feature = newFeature()
  await configureAlice(feature, values)
  expect(await feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })).toEqual({ ok: true })
  return feature
}

describe('the catalog block before each model step', () => {
  test('no document yet: nothing injected, a background refresh starts; then the catalog appears', async () => {
    const feature = newFeature()
    await configureAlice(feature)
    const before = listRequests()
    const first = await step(feature)
    expect(first.blocks ?? []).toEqual([])
    await waitUntil(async () => (await feature.cache.read(WS)).document !== undefined, 'the background refresh')
    expect(listRequests()).toBe(before + 2)
    const second = await step(feature)
    expect(catalogOf(second)).toContain('- search-hr: HR handbook search')
    expect(catalogOf(second)).toContain('- chat-product: Product Q&A')
  })

  test('change suppression: the same content already visible is not sent again, step after step', async () => {
    const feature = await fetchedFeature()
    const content = catalogOf(await step(feature))!
    const visible = [{ source: CATALOG_SOURCE, content }]
    for (let i = 0; i < 5; i++) expect(await step(feature, { visible })).toEqual({})
  })

  test('re-injection when the block is no longer visible (a new turn, or the block removed)', async () => {
    const feature = await fetchedFeature()
    const content = catalogOf(await step(feature))!
    expect(await step(feature, { visible: [{ source: CATALOG_SOURCE, content }] })).toEqual({})
    expect(catalogOf(await step(feature, { visible: [] }))).toBe(content)
    expect(catalogOf(await step(feature, { turnId: 'turn-2', visible: [{ source: 'other', content: 'x' }] }))).toBe(content)
  })

  test('changed content replaces the visible block', async () => {
    const feature = await fetchedFeature()
    const content = catalogOf(await step(feature))!
    fake.workspace(WS)!.services.push({ agent_id: 'chat-legal', agent_name: 'Legal Q&A', scene: 'chat' })
    await feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })
    const next = catalogOf(await step(feature, { visible: [{ source: CATALOG_SOURCE, content }] }))
    expect(next).toContain('- chat-legal: Legal Q&A')
  })

  test('a configured default narrows its scene to that service', async () => {
    const feature = await fetchedFeature({ defaultRetrieveAgentId: 'search-eng' })
    const content = catalogOf(await step(feature))!
    expect(content).toContain('- search-eng: Engineering wiki search (the default service)')
    expect(content).not.toContain('search-hr')
    expect(content).toContain('npm install -g bailian-cli')
  })

  test('a workspace without services gets the no-service notice', async () => {
    fake.workspace(WS)!.services = []
    const feature = await fetchedFeature()
    expect(catalogOf(await step(feature))).toContain('do not invent an id')
  })

  test('a stale document triggers a background refresh; the step does not wait for it', async () => {
    const feature = await fetchedFeature()
    const content = catalogOf(await step(feature))!
    fake.setHandler((request) => (request.operation === 'list' ? { kind: 'hang' } : undefined))
    clock += 31 * 60 * 1000
    const before = listRequests()
    // The step answers while the list request hangs.
    expect(await step(feature, { visible: [{ source: CATALOG_SOURCE, content }] })).toEqual({})
    await waitUntil(() => listRequests() === before + 1, 'the background list request')
  })

  test('users without settings get no block, and a block left from before is removed', async () => {
    const feature = await fetchedFeature()
    expect(await step(feature, { user: bob })).toEqual({})
    expect(await step(feature, { user: bob, visible: [{ source: CATALOG_SOURCE, content: 'old' }] })).toEqual({ blocks: [{ source: CATALOG_SOURCE, content: null }] })
  })

  test('another user naming the same workspace with a key that cannot reach it never sees its catalog', async () => {
    const feature = await fetchedFeature()
    await feature.settings.setApiKey(bob.id, 'sk-bob-wrong-key')
    await feature.settings.saveSettings(bob.id, { workspaceId: WS })
    const output = await step(feature, { user: bob })
    expect(catalogOf(output)).toBeUndefined()
    await waitUntil(() => feature.refresher.lastFailure(WS, bob.id) !== undefined, 'bob\'s refresh to fail')
    const later = await step(feature, { user: bob, turnId: 'turn-bob' })
    expect(catalogOf(later)).toBeUndefined()
    expect(later.warnings?.[0]).toContain('InvalidApiKey')
    // Alice still sees hers, hears nothing of Bob's key, and the shared document records no error.
    const alices = await step(feature, { turnId: 'turn-alice' })
    expect(catalogOf(alices)).toContain('search-hr')
    expect(alices.warnings).toBeUndefined()
    expect(feature.refresher.lastFailure(WS, alice.id)).toBeUndefined()
    expect((await feature.cache.read(WS)).lastError).toBeUndefined()
  })
})

describe('refresh triggers and single flight', () => {
  test('20 concurrent triggers share one list request per scene', async () => {
    const feature = newFeature()
    await configureAlice(feature)
    const before = listRequests()
    fake.setHandler((request) => (request.operation === 'list' ? { kind: 'response', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ success: true, data: { total_count: 0, rows: [] } }), delayMs: 150 } : undefined))
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'tool-rejected' })))
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => ({ ok: true })))
    expect(listRequests() - before).toBe(2)
  })

  test('20 concurrent pre-steps over a stale document start one refresh', async () => {
    const feature = await fetchedFeature()
    clock += 31 * 60 * 1000
    fake.setHandler((request) => (request.operation === 'list' ? { kind: 'response', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ success: true, data: { total_count: 0, rows: [] } }), delayMs: 100 } : undefined))
    const before = listRequests()
    await Promise.all(Array.from({ length: 20 }, (_, i) => step(feature, { turnId: `t${i}` })))
    await waitUntil(async () => (await feature.cache.read(WS)).document?.entries.length === 0, 'the refresh')
    expect(listRequests() - before).toBe(2)
  })

  test('a failed refresh warns once per turn and keeps the old document', async () => {
    const feature = await fetchedFeature()
    const before = await feature.cache.read(WS)
    const content = catalogOf(await step(feature))!
    fake.enqueue('list', serverError(503))
    const outcome = await feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })
    expect(outcome).toMatchObject({ ok: false })
    expect((outcome as { message: string }).message).toContain('HTTP 503')
    const after = await feature.cache.read(WS)
    expect(after.document).toEqual(before.document)
    expect(after.lastError).toContain('HTTP 503')
    const visible = [{ source: CATALOG_SOURCE, content }]
    const warned = await step(feature, { visible })
    expect(warned.blocks).toBeUndefined()
    expect(warned.warnings).toEqual([expect.stringContaining('the model keeps seeing the previous list')])
    expect(await step(feature, { visible })).toEqual({})
    expect(logLines.some((line) => line.includes('"level":"warn"') && line.includes('keeping the previous catalog'))).toBe(true)
  })

  test('a tool that ran `bl knowledge service create` triggers a refresh at the next look, not at the first', async () => {
    const feature = await fetchedFeature()
    const call = (id: string, command: string): ChatMessage[] => [
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'shell', arguments: JSON.stringify({ command }) } }] },
      { role: 'tool', tool_call_id: id, content: '{"ok":true}' },
    ]
    const history = call('old-call', 'bl knowledge service create --name x')
    clock += 10_000 // past the minimum interval after the fetch above
    let before = listRequests()
    await step(feature, { turnId: 'turn-bl', messages: history })
    expect(listRequests()).toBe(before)
    await step(feature, { turnId: 'turn-bl', messages: [...history, ...call('c2', 'ls -la')] })
    expect(listRequests()).toBe(before)
    await step(feature, { turnId: 'turn-bl', messages: [...history, ...call('c2', 'ls -la'), ...call('c3', 'bl  knowledge service deploy --agent-id a')] })
    await waitUntil(() => listRequests() === before + 2, 'the refresh after the bl command')
    before = listRequests()
    await step(feature, { turnId: 'turn-bl', messages: [...history, ...call('c2', 'ls -la'), ...call('c3', 'bl  knowledge service deploy --agent-id a')] })
    expect(listRequests()).toBe(before)
  })

  test('a burst of `bl knowledge service` calls costs one fetch now and one after the minimum interval (issue 34: one turn of 11 calls made 20 list requests)', async () => {
    const waits: Array<{ at: number; resolve: () => void }> = []
    const feature = newFeature({ waitUntil: (at) => Effect.promise(() => new Promise<void>((resolve) => waits.push({ at, resolve }))) })
    await configureAlice(feature)
    expect(await feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })).toEqual({ ok: true })
    clock += 60_000
    const call = (id: string): ChatMessage[] => [
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'shell', arguments: JSON.stringify({ command: `bl knowledge service create --name s${id}` }) } }] },
      { role: 'tool', tool_call_id: id, content: '{"ok":true}' },
    ]
    const before = listRequests()
    const messages: ChatMessage[] = [...call('seen')]
    await step(feature, { turnId: 'turn-burst', messages })
    for (let i = 1; i <= 11; i++) {
      messages.push(...call(`c${i}`))
      await step(feature, { turnId: 'turn-burst', messages })
      clock += 100
      if (i === 1) await waitUntil(() => listRequests() === before + 2, 'the first refresh, at once')
    }
    // Every later trigger waits for one fetch, delayed to the end of the interval: the trailing edge.
    await waitUntil(() => waits.length === 1, 'the delayed refresh')
    expect(waits[0]!.at).toBe(clock - 1_100 + 5_000)
    expect(listRequests()).toBe(before + 2)
    waits[0]!.resolve()
    await waitUntil(() => listRequests() === before + 4, 'the trailing refresh')
    // Nothing else was pending: the next fetch is this one.
    expect(await feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })).toEqual({ ok: true })
    expect(listRequests()).toBe(before + 6)
    expect(waits).toHaveLength(1)
  })

  test('a new API key or workspace refreshes at once', async () => {
    const feature = await fetchedFeature()
    fake.setWorkspace('ws-second', { apiKey: KEY, services: manyServices('search', 3) })
    const before = listRequests()
    await feature.settings.saveSettings(alice.id, { workspaceId: 'ws-second' })
    await waitUntil(async () => (await feature.cache.read('ws-second')).document?.entries.length === 3, 'the new workspace\'s catalog')
    expect(listRequests()).toBe(before + 2)
    expect(catalogOf(await step(feature, { turnId: 'turn-ws2' }))).toContain('search-001')
  })
})

describe('kb_search and kb_chat', () => {
  test('kb_search returns the top_k best passages', async () => {
    const feature = await fetchedFeature()
    const outcome = await runTool(feature, 'kb_search', { query: 'leave', agent_id: 'search-hr', top_k: 2 })
    expect(outcome.ok).toBe(true)
    expect(outcome.result).toMatchObject({ agent_id: 'search-hr', returned: 3, chunks: [{ score: 0.91, doc_name: 'doc-1.md' }, { score: 0.74 }] })
    expect(outcome.summary).toBe('2 passages from search-hr (best: doc-1.md)')
  })

  test('a 4xx refreshes at once and appends the services of that scene', async () => {
    const feature = await fetchedFeature()
    fake.workspace(WS)!.services.push({ agent_id: 'search-new', agent_name: 'New search', scene: 'search', modify_time: '2026-05-09T00:00:00Z' })
    const before = listRequests()
    const outcome = await runTool(feature, 'kb_search', { query: 'q', agent_id: 'search-gone' })
    expect(outcome.ok).toBe(false)
    expect(outcome.error?.code).toBe('retrieval.rejected')
    expect(outcome.error?.message).toContain('Bailian search failed (HTTP 400): AgentApp.NotFound: The app search-gone was not found.')
    expect(outcome.error?.message).toContain('re-read just now')
    expect(outcome.error?.message).toContain('- search-new: New search')
    expect(outcome.error?.message).not.toContain('chat-product')
    expect(listRequests()).toBe(before + 2)
  })

  test('a 4xx when the scene has no service left: do not retry with another id, how to create one', async () => {
    const feature = await fetchedFeature()
    fake.workspace(WS)!.services = fake.workspace(WS)!.services.filter((service) => service.scene !== 'chat')
    const outcome = await runTool(feature, 'kb_chat', { question: 'q', agent_id: 'chat-product' })
    expect(outcome.error?.code).toBe('retrieval.rejected')
    expect(outcome.error?.message).toContain('no deployed chat service at all')
    expect(outcome.error?.message).toContain('do not retry with another id')
    expect(outcome.error?.message).toContain('npm install -g bailian-cli')
  })

  test('a 4xx whose refresh fails passes the original error through', async () => {
    const feature = await fetchedFeature()
    fake.enqueue('search', agentNotFound('x'))
    fake.enqueue('list', serverError(500))
    const outcome = await runTool(feature, 'kb_search', { query: 'q', agent_id: 'x' })
    expect(outcome.error).toEqual({ code: 'retrieval.rejected', status: 400, message: 'Bailian search failed (HTTP 400): AgentApp.NotFound: The app x was not found.' })
  })

  test('a 5xx passes through without a refresh', async () => {
    const feature = await fetchedFeature()
    fake.enqueue('search', serverError(502))
    const before = listRequests()
    const outcome = await runTool(feature, 'kb_search', { query: 'q', agent_id: 'search-hr' })
    expect(outcome.error).toMatchObject({ code: 'retrieval.server_error', message: 'Bailian search failed (HTTP 502): InternalError: An internal error has occurred, please try again later.' })
    expect(listRequests()).toBe(before)
  })

  test('missing credentials say where and how to configure them', async () => {
    const feature = newFeature()
    const outcome = await runTool(feature, 'kb_search', { query: 'q', agent_id: 'a' }, { user: bob })
    expect(outcome.error?.code).toBe('retrieval.not_configured')
    expect(outcome.error?.message).toContain('Settings → Retrieval services')
    expect(outcome.error?.message).toContain('DASHSCOPE_API_KEY')
  })

  test('kb_chat streams its steps, then the answer, into the tool card', async () => {
    const feature = await fetchedFeature()
    const progress: string[] = []
    const outcome = await runTool(feature, 'kb_chat', { question: 'How much leave?', agent_id: 'chat-product' }, { progress: (text) => progress.push(text) })
    expect(outcome.ok).toBe(true)
    expect(outcome.result).toMatchObject({ agent_id: 'chat-product', answer: 'Twenty days of paid leave.', finish_reason: 'stop' })
    expect(progress.join('')).toBe('Searching the knowledge base…\nPlanning…\nWriting the answer:\nTwenty days of paid leave.')
    expect(progress.length).toBeGreaterThan(4)
  })

  test('kb_chat timeout explains the multi-round retrieval and suggests retry or kb_search', async () => {
    const feature = newFeature({ configFile: { chatTimeoutMs: 200 } })
    await configureAlice(feature)
    fake.enqueue('chat', stalledChat())
    const index = fake.requests.length
    const outcome = await runTool(feature, 'kb_chat', { question: 'q', agent_id: 'chat-product' })
    expect(outcome.error?.code).toBe('retrieval.timeout')
    expect(outcome.error?.message).toMatch(/multi-round retrieval/)
    expect(outcome.error?.message).toMatch(/Retry/)
    expect(outcome.error?.message).toMatch(/kb_search/)
    await waitUntil(() => fake.requests.slice(index).some((r) => r.operation === 'chat' && r.clientClosedAt !== undefined), 'the stalled chat to be closed')
  })

  test('an error event after content: a failure that keeps the text, marked incomplete', async () => {
    const feature = await fetchedFeature()
    fake.enqueue('chat', chatStream([{ answer: 'Twenty' }, { error: { code: 'InternalError', message: 'model failed' } }]))
    const outcome = await runTool(feature, 'kb_chat', { question: 'q', agent_id: 'chat-product' })
    expect(outcome.error?.code).toBe('retrieval.stream_error')
    expect(outcome.error?.message).toContain('InternalError: model failed')
    expect(outcome.error?.message).toContain('incomplete, do not present it as the answer): Twenty')
  })

  test('the tools require agent_id; their descriptions carry no id and no bl command', async () => {
    const feature = await fetchedFeature()
    const outcome = await runTool(feature, 'kb_search', { query: 'q' })
    expect(outcome.error?.code).toBe('invalid_arguments')
    const registry = makeToolRegistry(feature.tools)
    const schemas = JSON.stringify(registry.schemas)
    for (const service of SERVICES) expect(schemas).not.toContain(service.agent_id)
    expect(schemas).not.toMatch(/\bbl\b/)
    for (const schema of registry.schemas) expect((schema.function.parameters as { required?: string[] }).required).toContain('agent_id')
  })

  test('the API key never reaches a tool result or a log line', async () => {
    const feature = await fetchedFeature()
    fake.enqueue('search', { kind: 'response', status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'InvalidApiKey', message: `bad key ${KEY}` }) })
    const outcome = await runTool(feature, 'kb_search', { query: 'q', agent_id: 'search-hr' })
    expect(JSON.stringify(outcome)).not.toContain(KEY)
    expect(logLines.join('\n')).not.toContain(KEY)
  })
})

describe('programmatic calls without agent_id', () => {
  test('the configured default service', async () => {
    const feature = await fetchedFeature({ defaultRetrieveAgentId: 'search-eng' })
    expect((await Effect.runPromise(feature.calls.search({ caller: alice, query: 'q' }))).agent_id).toBe('search-eng')
  })
  test('else the only deployed service of the scene', async () => {
    const feature = await fetchedFeature()
    expect((await Effect.runPromise(feature.calls.ask({ caller: alice, question: 'q' }))).agent_id).toBe('chat-product')
  })
  test('else an error', async () => {
    const feature = await fetchedFeature()
    const exit = await Effect.runPromiseExit(feature.calls.search({ caller: alice, query: 'q' }))
    expect(JSON.stringify(exit)).toContain('retrieval.no_default_service')
  })
})

describe('switch and lifecycle', () => {
  test('enabled: false gives no feature at all', () => {
    expect(
      makeRetrievalFeature({ config: resolveBailianConfig({ enabled: false }), db: database.db, secret: SECRET, env: {}, logger: createLogger({ write: () => {} }) }),
    ).toBeUndefined()
  })

  test('the resolved workspace id is exported for CLI subprocesses', async () => {
    const feature = newFeature({ env: { BAILIAN_WORKSPACE_ID: 'ws-from-env' } })
    expect(await feature.subprocessEnvFor(bob.id)).toEqual({ BAILIAN_WORKSPACE_ID: 'ws-from-env' })
    await configureAlice(feature)
    expect(await feature.subprocessEnvFor(alice.id)).toEqual({ BAILIAN_WORKSPACE_ID: WS })
    expect(await newFeature().workspaceIdFor(bob.id)).toBeUndefined()
  })

  test('close() stops a running refresh (its request is aborted) and releases the LISTEN connection', async () => {
    const feature = newFeature()
    await waitUntil(() => feature.cache.listening(), 'the listener')
    await configureAlice(feature)
    fake.setHandler((request) => (request.operation === 'list' ? { kind: 'hang' } : undefined))
    const index = fake.requests.length
    const pending = feature.refresher.refresh({ userId: alice.id, workspaceId: WS, reason: 'force' })
    await waitUntil(() => fake.requests.slice(index).some((r) => r.operation === 'list'), 'the list request')
    features.splice(features.indexOf(feature), 1)
    await feature.close()
    expect(await pending).toMatchObject({ ok: false })
    await fake.waitForClientClose(fake.requests.findIndex((r, i) => i >= index && r.operation === 'list'))
    expect(feature.cache.listening()).toBe(false)
  })
})
