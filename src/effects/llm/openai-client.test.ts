import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { createServer } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import {
  chatCompletionSse,
  httpResponseScript,
  startScriptedProvider,
  streamScript,
  textAnswerSse,
  toolCallsSse,
  type ScriptedProvider,
} from '../../../tests/support/scripted-provider.ts'
import type { ModelConfig } from './model-config.ts'
import type { ChatMessage, ModelError, ModelStreamEvent, ToolSchema } from './model.ts'
import { makeOpenAiChatModel, type OpenAiChatModelOptions } from './openai-client.ts'

/** Distinctive, so any leak is found by a plain substring search. */
const FAKE_KEY = 'sk-leakcheck-4e2f9a7d1c8b6e3f'
const ENV = { TEST_PROVIDER_KEY: FAKE_KEY }

let provider: ScriptedProvider
beforeAll(async () => {
  provider = await startScriptedProvider()
})
afterEach(() => {
  expect(provider.pendingScripts(), 'every queued script was used').toBe(0)
})
afterAll(async () => {
  await provider.close()
})

function configFor(target: ScriptedProvider, overrides: Partial<ModelConfig> = {}): ModelConfig {
  return {
    id: 'test-model',
    name: 'Test model',
    profile: 'test-profile',
    baseUrl: target.baseUrl,
    apiKeyEnv: 'TEST_PROVIDER_KEY',
    model: 'provider-model-name',
    contextWindow: 16_000,
    maxOutputTokens: 2_000,
    supportsNativeToolCalling: true,
    ...overrides,
  }
}

function modelFor(overrides: Partial<ModelConfig> = {}, options: Partial<OpenAiChatModelOptions> = {}) {
  return makeOpenAiChatModel(configFor(provider, overrides), { env: ENV, retryBaseDelayMs: 5, ...options })
}

const USER: ChatMessage = { role: 'user', content: 'What is in my notes?' }
const SEARCH_TOOL: ToolSchema = {
  type: 'function',
  function: { name: 'search', description: 'Search files', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
}

async function failureOf(effect: Effect.Effect<unknown, ModelError>): Promise<ModelError> {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error('expected a failure')
  const failure = exit.cause.reasons.find((reason) => reason._tag === 'Fail')
  if (failure === undefined) throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return failure.error
}

function expectNoSecret(error: unknown, secrets: ReadonlyArray<string>): void {
  const renderings = [JSON.stringify(error), String(error), (error as Error).message, JSON.stringify({ ...(error as object) })]
  for (const secret of secrets) for (const text of renderings) expect(text).not.toContain(secret)
}

describe('request', () => {
  test('POSTs {baseUrl}/chat/completions with stream, max_tokens, messages (tool exchanges passed through) and tools', async () => {
    provider.enqueue(streamScript(textAnswerSse('ok')))
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are KnowAgent.' },
      USER,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"query":"notes"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"hits":[]}' },
    ]
    await Effect.runPromise(modelFor({ headers: { 'X-Title': 'knowagent' } }).stream({ messages, tools: [SEARCH_TOOL] }))
    const request = provider.requests.at(-1)!
    expect(request.method).toBe('POST')
    expect(request.path).toBe('/v1/chat/completions')
    expect(request.headers['authorization']).toBe(`Bearer ${FAKE_KEY}`)
    expect(request.headers['content-type']).toBe('application/json')
    expect(request.headers['accept']).toBe('text/event-stream')
    expect(request.headers['x-title']).toBe('knowagent')
    expect(request.body).toEqual({ model: 'provider-model-name', messages, stream: true, max_tokens: 2000, tools: [SEARCH_TOOL] })
  })

  test('stream_options, reasoning_effort and max_completion_tokens only when configured', async () => {
    provider.enqueue(streamScript(textAnswerSse('ok')))
    await Effect.runPromise(
      modelFor({ streamUsage: true, reasoningEffort: 'low', maxTokensField: 'max_completion_tokens' }).stream({ messages: [USER] }),
    )
    expect(provider.requests.at(-1)!.body).toEqual({
      model: 'provider-model-name',
      messages: [USER],
      stream: true,
      max_completion_tokens: 2000,
      stream_options: { include_usage: true },
      reasoning_effort: 'low',
    })
  })

  test("a request's reasoning effort replaces the configured one, and never reaches a model configured without one", async () => {
    provider.enqueue(streamScript(textAnswerSse('ok')), streamScript(textAnswerSse('ok')))
    await Effect.runPromise(modelFor({ reasoningEffort: 'low' }).stream({ messages: [USER], reasoningEffort: 'high' }))
    expect(provider.requests.at(-1)!.body).toMatchObject({ reasoning_effort: 'high' })
    await Effect.runPromise(modelFor().stream({ messages: [USER], reasoningEffort: 'high' }))
    expect(provider.requests.at(-1)!.body).not.toHaveProperty('reasoning_effort')
  })

  test('a text-only model never sends tools, even when given', async () => {
    provider.enqueue(streamScript(textAnswerSse('plain')))
    await Effect.runPromise(modelFor({ supportsNativeToolCalling: false }).stream({ messages: [USER], tools: [SEARCH_TOOL] }))
    expect(provider.requests.at(-1)!.body).not.toHaveProperty('tools')
  })

  test('an empty tools array is not sent', async () => {
    provider.enqueue(streamScript(textAnswerSse('plain')))
    await Effect.runPromise(modelFor().stream({ messages: [USER], tools: [] }))
    expect(provider.requests.at(-1)!.body).not.toHaveProperty('tools')
  })

  test('a trailing slash on baseUrl is not doubled', async () => {
    provider.enqueue(streamScript(textAnswerSse('ok')))
    await Effect.runPromise(modelFor({ baseUrl: `${provider.baseUrl}/` }).stream({ messages: [USER] }))
    expect(provider.requests.at(-1)!.path).toBe('/v1/chat/completions')
  })

  test('the key is read from the environment at call time', async () => {
    const env: Record<string, string | undefined> = { TEST_PROVIDER_KEY: 'sk-first-key-000000' }
    const model = makeOpenAiChatModel(configFor(provider), { env })
    provider.enqueue(streamScript(textAnswerSse('1')), streamScript(textAnswerSse('2')))
    await Effect.runPromise(model.stream({ messages: [USER] }))
    env['TEST_PROVIDER_KEY'] = 'sk-second-key-11111'
    await Effect.runPromise(model.stream({ messages: [USER] }))
    expect(provider.requests.slice(-2).map((r) => r.headers['authorization'])).toEqual([
      'Bearer sk-first-key-000000',
      'Bearer sk-second-key-11111',
    ])
  })

  test('no apiKeyEnv: no authorization header (local servers such as Ollama)', async () => {
    provider.enqueue(streamScript(textAnswerSse('ok')))
    const { apiKeyEnv: _omitted, ...withoutKey } = configFor(provider)
    await Effect.runPromise(makeOpenAiChatModel(withoutKey, { env: {} }).stream({ messages: [USER] }))
    expect(provider.requests.at(-1)!.headers['authorization']).toBeUndefined()
  })

  test('a missing key fails with MissingApiKey naming the variable, and sends nothing', async () => {
    const before = provider.requests.length
    const error = await failureOf(makeOpenAiChatModel(configFor(provider), { env: { TEST_PROVIDER_KEY: '  ' } }).stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'MissingApiKey', modelId: 'test-model', envName: 'TEST_PROVIDER_KEY' })
    expect(error.message).toContain('TEST_PROVIDER_KEY')
    expect(provider.requests.length).toBe(before)
  })
})

describe('streaming', () => {
  test('onEvent sees each delta as it arrives, before the stream ends', async () => {
    // The provider sends the rest only once the client has handed on the first delta: a client that
    // held deltas until the stream ended would never see it, and the test would time out.
    const firstSeen = Promise.withResolvers<void>()
    provider.enqueue({
      kind: 'stream',
      chunks: [
        { bytes: chatCompletionSse([{ thinking: 'hmm' }, { text: 'first' }]) },
        { bytes: chatCompletionSse([{ text: ' second' }, { finish: 'stop' }, 'done']), after: firstSeen.promise },
      ],
    })
    const seen: ModelStreamEvent[] = []
    const result = await Effect.runPromise(
      modelFor().stream({
        messages: [USER],
        onEvent: (event) => {
          seen.push(event)
          if (event.type === 'delta' && event.text === 'first') firstSeen.resolve()
        },
      }),
    )
    expect(seen).toEqual([
      { type: 'thinking', text: 'hmm' },
      { type: 'delta', text: 'first' },
      { type: 'delta', text: ' second' },
    ])
    expect(result).toMatchObject({ text: 'first second', thinking: 'hmm', finishReason: 'stop' })
  })

  test('tool calls assembled from a streamed step', async () => {
    provider.enqueue(
      streamScript(
        toolCallsSse([
          { id: 'c1', name: 'search', arguments: { query: 'budget 2024' } },
          { id: 'c2', name: 'ls', arguments: {} },
        ]),
      ),
    )
    const result = await Effect.runPromise(modelFor().stream({ messages: [USER], tools: [SEARCH_TOOL] }))
    expect(result.finishReason).toBe('tool_calls')
    expect(result.toolCalls.map((c) => [c.id, c.name, c.argumentsJson])).toEqual([
      ['c1', 'search', '{"query":"budget 2024"}'],
      ['c2', 'ls', '{}'],
    ])
  })

  test('idle before the response headers: StreamIdleTimeout with no text', async () => {
    provider.enqueue({ kind: 'hang' })
    const started = performance.now()
    const error = await failureOf(modelFor({ idleTimeoutMs: 200 }).stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'StreamIdleTimeout', idleMs: 200, partialText: '' })
    expect(performance.now() - started).toBeGreaterThanOrEqual(190)
    await provider.waitForClientClose(provider.requests.length - 1, { timeoutMs: 1000 })
  })

  test('steady bytes keep the stream alive past the idle timeout', async () => {
    const pieces = Array.from({ length: 6 }, (_, i) => ({ bytes: chatCompletionSse([{ text: String(i) }]), delayMs: 80 }))
    provider.enqueue({ kind: 'stream', chunks: [...pieces, { bytes: chatCompletionSse([{ finish: 'stop' }, 'done']) }] })
    const result = await Effect.runPromise(modelFor({ idleTimeoutMs: 200 }).stream({ messages: [USER] }))
    expect(result.text).toBe('012345')
  })

  test('a 200 with a JSON error body is a ProviderStreamError', async () => {
    provider.enqueue(httpResponseScript(200, { error: { code: 'invalid_model', message: 'no such model' } }))
    expect(await failureOf(modelFor().stream({ messages: [USER] }))).toMatchObject({
      _tag: 'ProviderStreamError',
      code: 'invalid_model',
      message: 'no such model',
      partialText: '',
    })
  })

  test('a 200 with a non-streaming JSON completion is a ProviderProtocolError', async () => {
    provider.enqueue(httpResponseScript(200, { choices: [{ message: { content: 'not streamed' } }] }))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(error._tag).toBe('ProviderProtocolError')
    expect(error.message).toMatch(/expected a text\/event-stream answer, got application\/json/)
  })

  test('onEvent throwing is a defect, and the connection is released', async () => {
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'boom' }]) }], end: 'hang' })
    const exit = await Effect.runPromiseExit(
      modelFor().stream({
        messages: [USER],
        onEvent: () => {
          throw new Error('listener bug')
        },
      }),
    )
    expect(Exit.isFailure(exit) && exit.cause.reasons.some((reason) => reason._tag === 'Die')).toBe(true)
    await provider.waitForClientClose(provider.requests.length - 1, { timeoutMs: 1000 })
  })
})

describe('HTTP errors', () => {
  test.each([
    ['OpenAI {error:{code,message}}', 401, { error: { message: 'Invalid token', type: 'invalid_request_error', code: 'invalid_api_key' } }, 'invalid_api_key', 'Invalid token'],
    ['{error:{type,message}} without code', 400, { error: { message: 'Bad messages', type: 'invalid_request_error', code: null } }, 'invalid_request_error', 'Bad messages'],
    ['DashScope {code,message}', 400, { code: 'InvalidParameter', message: 'Range of input length should be [1, 30720]', request_id: 'r-1' }, 'InvalidParameter', 'Range of input length should be [1, 30720]'],
    ['vLLM {object:error}', 400, { object: 'error', message: 'max_tokens is too large', type: 'BadRequestError', param: null, code: 400 }, '400', 'max_tokens is too large'],
    ['OpenRouter numeric code', 402, { error: { code: 402, message: 'Insufficient credits' } }, '402', 'Insufficient credits'],
    ['FastAPI {detail}', 422, { detail: 'Unprocessable' }, undefined, 'Unprocessable'],
    ['plain text', 404, 'model not found', undefined, 'model not found'],
    ['empty body', 403, '', undefined, 'Forbidden'],
  ] as const)('%s', async (_name, status, body, code, message) => {
    provider.enqueue(httpResponseScript(status, body))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'ProviderHttpError', status, code, message, retryAfterMs: undefined })
  })

  test('the message is cut to 500 characters', async () => {
    provider.enqueue(httpResponseScript(400, { error: { code: 'too_long', message: '长'.repeat(3000) } }))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(Array.from(error.message)).toHaveLength(500)
    expect(error.message.endsWith('…')).toBe(true)
  })
})

describe('retries (only before the first body byte)', () => {
  test('429 with Retry-After seconds is honoured, then succeeds', async () => {
    provider.enqueue(
      httpResponseScript(429, { error: { code: 'rate_limit_exceeded', message: 'slow down' } }, { 'retry-after': '1' }),
      streamScript(textAnswerSse('after wait')),
    )
    const before = provider.requests.length
    const result = await Effect.runPromise(modelFor().stream({ messages: [USER] }))
    expect(result.text).toBe('after wait')
    expect(provider.requests.length - before).toBe(2)
    const gap = provider.requests.at(-1)!.receivedAt - provider.requests.at(-2)!.receivedAt
    expect(gap).toBeGreaterThanOrEqual(950)
  })

  test('retry-after-ms is honoured', async () => {
    provider.enqueue(httpResponseScript(429, 'busy', { 'retry-after-ms': '300' }), streamScript(textAnswerSse('ok')))
    await Effect.runPromise(modelFor().stream({ messages: [USER] }))
    const gap = provider.requests.at(-1)!.receivedAt - provider.requests.at(-2)!.receivedAt
    expect(gap).toBeGreaterThanOrEqual(290)
  })

  test('503 then success: only the successful attempt emits events', async () => {
    provider.enqueue(httpResponseScript(503, 'upstream unavailable'), streamScript(textAnswerSse('second try', { chunkChars: 100 })))
    const events: ModelStreamEvent[] = []
    const result = await Effect.runPromise(modelFor().stream({ messages: [USER], onEvent: (e) => events.push(e) }))
    expect(result.text).toBe('second try')
    expect(events).toEqual([{ type: 'delta', text: 'second try' }])
  })

  test('at most maxRetries retries, then the last HTTP error', async () => {
    const before = provider.requests.length
    provider.enqueue(httpResponseScript(500, 'a'), httpResponseScript(502, 'b'), httpResponseScript(503, 'c'))
    const error = await failureOf(modelFor({ maxRetries: 2 }).stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'ProviderHttpError', status: 503, message: 'c' })
    expect(provider.requests.length - before).toBe(3)
  })

  test('maxRetries 0: one attempt', async () => {
    const before = provider.requests.length
    provider.enqueue(httpResponseScript(500, 'once'))
    await failureOf(modelFor({ maxRetries: 0 }).stream({ messages: [USER] }))
    expect(provider.requests.length - before).toBe(1)
  })

  test('4xx other than 408/429 is not retried', async () => {
    const before = provider.requests.length
    provider.enqueue(httpResponseScript(400, { error: { code: 'bad', message: 'bad request' } }))
    await failureOf(modelFor().stream({ messages: [USER] }))
    expect(provider.requests.length - before).toBe(1)
  })

  // Waiting the hour would outlast the test's timeout: the error coming back at all is the proof.
  test('a Retry-After beyond the cap is not waited for: the error comes back at once with it', async () => {
    const before = provider.requests.length
    provider.enqueue(httpResponseScript(429, 'quota', { 'retry-after': '3600' }))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'ProviderHttpError', status: 429, retryAfterMs: 3_600_000 })
    expect(provider.requests.length - before).toBe(1)
  })

  test('a connection reset before any byte is retried', async () => {
    provider.enqueue({ kind: 'reset' }, streamScript(textAnswerSse('reconnected')))
    const result = await Effect.runPromise(modelFor().stream({ messages: [USER] }))
    expect(result.text).toBe('reconnected')
  })

  test('never after output started: a reset mid-stream is StreamIncomplete after one request', async () => {
    const before = provider.requests.length
    provider.enqueue(streamScript(chatCompletionSse([{ text: 'half an ans' }]), { end: 'reset' }))
    const error = await failureOf(modelFor({ maxRetries: 5 }).stream({ messages: [USER] }))
    expect(error).toMatchObject({ _tag: 'StreamIncomplete', partialText: 'half an ans' })
    expect(provider.requests.length - before).toBe(1)
  })

  test('never after output started: a stream error payload is not retried', async () => {
    const before = provider.requests.length
    provider.enqueue(streamScript(chatCompletionSse([{ text: 'x' }, { chunk: { error: { code: 'server_error', message: 'oops' } } }])))
    const error = await failureOf(modelFor({ maxRetries: 5 }).stream({ messages: [USER] }))
    expect(error._tag).toBe('ProviderStreamError')
    expect(provider.requests.length - before).toBe(1)
  })

  test('connection refused: ProviderConnectionError naming the code, not the host', async () => {
    const port = await closedPort()
    const model = makeOpenAiChatModel(configFor(provider, { baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 1 }), {
      env: ENV,
      retryBaseDelayMs: 5,
    })
    const error = await failureOf(model.stream({ messages: [USER] }))
    expect(error).toEqual(expect.objectContaining({ _tag: 'ProviderConnectionError' }))
    expect(error.message).toBe('could not reach the provider (ECONNREFUSED)')
    expectNoSecret(error, [String(port), '127.0.0.1'])
  })
})

describe('secrets never leave the gateway', () => {
  const echo = `Incorrect API key provided: ${FAKE_KEY}. You can find your API key at https://platform.openai.com/account/api-keys.`

  test('an HTTP error body echoing the key and the endpoint', async () => {
    provider.enqueue(httpResponseScript(401, { error: { code: `bad_key_${FAKE_KEY}`, message: `${echo} (endpoint ${provider.baseUrl})` } }))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(error.message).toContain('Incorrect API key provided: [redacted]')
    expectNoSecret(error, [FAKE_KEY, provider.baseUrl, `127.0.0.1:${provider.port}`])
  })

  test('a stream error and partial text echoing the key', async () => {
    provider.enqueue(streamScript(chatCompletionSse([{ text: `my key is ${FAKE_KEY}` }, { chunk: { error: { message: echo } } }])))
    const error = await failureOf(modelFor().stream({ messages: [USER] }))
    expect(error._tag).toBe('ProviderStreamError')
    expectNoSecret(error, [FAKE_KEY])
  })

  test("a connection's credential header, echoed in an error body and streamed in pieces by the model", async () => {
    const headers = { 'api-key': 'azure-header-secret-77', 'X-Title': 'knowagent' }
    provider.enqueue(httpResponseScript(401, { error: { message: 'api-key azure-header-secret-77 is not valid for knowagent' } }))
    const error = await failureOf(modelFor({ headers }).stream({ messages: [USER] }))
    expect(error.message).toContain('api-key [redacted] is not valid for [redacted]')
    expectNoSecret(error, ['azure-header-secret-77'])

    provider.enqueue(streamScript(chatCompletionSse([{ text: 'knowagent sent azure-hea' }, { text: 'der-secret-77 as its key' }, { finish: 'stop' }, 'done'])))
    const deltas: string[] = []
    const result = await Effect.runPromise(modelFor({ headers }).stream({ messages: [USER], onEvent: (event) => void deltas.push(event.text) }))
    expect(deltas.join('')).toBe('knowagent sent [redacted] as its key')
    expect(result.text).toBe('knowagent sent [redacted] as its key')
  })

  test('a result echoing the key', async () => {
    provider.enqueue(streamScript(textAnswerSse(`the key is ${FAKE_KEY}`)))
    const result = await Effect.runPromise(modelFor().stream({ messages: [USER] }))
    expect(JSON.stringify(result)).not.toContain(FAKE_KEY)
    expect(result.text).toBe('the key is [redacted]')
  })

  test('retried failures, idle and protocol errors', async () => {
    provider.enqueue(
      httpResponseScript(503, echo),
      httpResponseScript(503, echo),
      httpResponseScript(503, echo),
      streamScript(chatCompletionSse([{ raw: `data: ${FAKE_KEY}\n\n` }])),
    )
    const errors = [
      await failureOf(modelFor().stream({ messages: [USER] })),
      await failureOf(modelFor().stream({ messages: [USER] })),
    ]
    expect(errors.map((e) => e._tag)).toEqual(['ProviderHttpError', 'ProviderProtocolError'])
    for (const error of errors) expectNoSecret(error, [FAKE_KEY])
  })
})

describe('cancellation', () => {
  /** Turns the event loop until `holds` (bounded by the test's timeout); never a timer of its own, which would count. */
  const until = async (holds: () => boolean) => {
    while (!holds()) await new Promise((resolve) => setImmediate(resolve))
  }

  test('interrupting mid-stream closes the provider request and leaks nothing', async () => {
    const own = await startScriptedProvider()
    try {
      own.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'partial' }]) }], end: 'hang' })
      const model = makeOpenAiChatModel(configFor(own), { env: ENV })
      const timersBefore = countResources('Timeout')
      const controller = new AbortController()
      const exitPromise = Effect.runPromiseExit(model.stream({ messages: [USER], onEvent: () => controller.abort() }), { signal: controller.signal })
      const exit = await exitPromise
      expect(interruptedOnly(exit)).toBe(true)
      await own.waitForClientClose(0, { timeoutMs: 5000 }) // the provider would hang for ever: only the client's close ends it
      await own.waitForNoConnections({ timeoutMs: 1000 })
      expect(countResources('Timeout')).toBeLessThanOrEqual(timersBefore)
    } finally {
      await own.close()
    }
  })

  test('interrupting before the headers closes the request', async () => {
    const own = await startScriptedProvider({ scripts: [{ kind: 'hang' }] })
    try {
      const controller = new AbortController()
      const exitPromise = Effect.runPromiseExit(
        makeOpenAiChatModel(configFor(own), { env: ENV }).stream({ messages: [USER] }),
        { signal: controller.signal },
      )
      await own.waitForRequests(1)
      controller.abort()
      expect(interruptedOnly(await exitPromise)).toBe(true)
      await own.waitForClientClose(0, { timeoutMs: 5000 })
      await own.waitForNoConnections({ timeoutMs: 1000 })
    } finally {
      await own.close()
    }
  })

  test('interrupting during a retry backoff stops at once: no further request, no timer left', async () => {
    const own = await startScriptedProvider({
      scripts: [httpResponseScript(503, 'busy', { 'retry-after': '60' }), streamScript(textAnswerSse('never'))],
    })
    try {
      const timersBefore = countResources('Timeout')
      const controller = new AbortController()
      const exitPromise = Effect.runPromiseExit(
        makeOpenAiChatModel(configFor(own), { env: ENV, maxRetryDelayMs: 120_000 }).stream({ messages: [USER] }),
        { signal: controller.signal },
      )
      await own.waitForRequests(1)
      // In the backoff: the client read the 503 and holds the 60 s timer of its Retry-After.
      await until(() => countResources('Timeout') > timersBefore)
      controller.abort()
      // Stopping at once: the exit is interrupted long before the 60 s backoff would have sent a second request.
      expect(interruptedOnly(await exitPromise)).toBe(true)
      expect(own.requests).toHaveLength(1)
      // The backoff's timer is cleared (a leaked one would outlive the test's timeout); sockets' timers close a moment later.
      await until(() => countResources('Timeout') <= timersBefore)
      expect(own.pendingScripts()).toBe(1)
    } finally {
      await own.close()
    }
  })
})

function interruptedOnly(exit: Exit.Exit<unknown, unknown>): boolean {
  return Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
}

function countResources(kind: string): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === kind).length
}

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
