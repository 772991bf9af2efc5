// The connection pool under the model client (provider-transport.ts, node:http keep-alive
// agents), through the real client against the scripted provider: an interrupted or timed-out
// call leaves no socket behind in the pool, a finished stream hands its socket back for the next
// call, and a provider that keeps talking after [DONE] is cut off.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { once } from 'node:events'
import { Agent, type ClientRequestArgs } from 'node:http'
import type { Duplex } from 'node:stream'
import { afterEach, describe, expect, test } from 'vitest'
import {
  chatCompletionSse,
  startScriptedProvider,
  streamScript,
  textAnswerSse,
  type ScriptedProvider,
} from '../../../tests/support/scripted-provider.ts'
import type { ModelConfig } from './model-config.ts'
import { makeOpenAiChatModel } from './openai-client.ts'
import { postToProvider } from './provider-transport.ts'

/** A keep-alive agent that remembers every socket it opened. */
class RecordingAgent extends Agent {
  readonly opened: Duplex[] = []
  private readonly closes: Promise<unknown>[] = []
  constructor() {
    super({ keepAlive: true })
  }
  override createConnection(options: ClientRequestArgs, callback?: (error: Error | null, socket: Duplex) => void): Duplex | null | undefined {
    const socket = super.createConnection(options, callback)
    if (socket) {
      this.opened.push(socket)
      // Listening from the start: the agent's own 'close' listener (which takes the socket out
      // of its pools) runs in the same emit, before an `await` on this promise resumes.
      this.closes.push(once(socket, 'close'))
    }
    return socket
  }
  /** Sockets the pool still holds, busy or free. */
  live(): number {
    const count = (pool: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(pool).reduce((sum, list) => sum + (list?.length ?? 0), 0)
    return count(this.sockets) + count(this.freeSockets)
  }
  async allClosed(): Promise<void> {
    await Promise.all(this.closes)
  }
}

const USER = { role: 'user', content: 'hello' } as const
const ENV = { TEST_PROVIDER_KEY: 'sk-transport-test-0123' }

function modelOn(provider: ScriptedProvider, agent: Agent, overrides: Partial<ModelConfig> = {}) {
  const config: ModelConfig = {
    id: 'test-model',
    name: 'Test model',
    profile: 'test',
    baseUrl: provider.baseUrl,
    apiKeyEnv: 'TEST_PROVIDER_KEY',
    model: 'provider-model',
    contextWindow: 16_000,
    maxOutputTokens: 1_000,
    supportsNativeToolCalling: true,
    maxRetries: 0,
    ...overrides,
  }
  return makeOpenAiChatModel(config, { env: ENV, agent })
}

const interruptedOnly = (exit: Exit.Exit<unknown, unknown>) => Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)

let provider: ScriptedProvider | undefined
let agent: RecordingAgent | undefined
afterEach(async () => {
  agent?.destroy()
  await provider?.close()
  provider = undefined
  agent = undefined
})

async function setUp(): Promise<{ provider: ScriptedProvider; agent: RecordingAgent }> {
  provider = await startScriptedProvider()
  agent = new RecordingAgent()
  return { provider, agent }
}

describe('an ended call leaves no socket behind', () => {
  test('interrupted mid-stream: the socket is destroyed, not pooled, and the provider sees the close', async () => {
    const { provider, agent } = await setUp()
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'partial' }]) }], end: 'hang' })
    const controller = new AbortController()
    const exit = await Effect.runPromiseExit(
      modelOn(provider, agent).stream({ messages: [USER], onEvent: () => controller.abort() }),
      { signal: controller.signal },
    )
    expect(interruptedOnly(exit)).toBe(true)
    expect(agent.opened).toHaveLength(1)
    await agent.allClosed()
    expect(agent.live()).toBe(0)
    await provider.waitForClientClose(0)
    await provider.waitForNoConnections()
  })

  test('aborted in the tick it was sent, before the agent handed it a socket: that socket is destroyed, not pooled', async () => {
    const { provider, agent } = await setUp()
    const call = postToProvider({ url: new URL(`${provider.baseUrl}/chat/completions`), headers: {}, body: '{}', agent })
    call.abort()
    await expect(call.response).rejects.toThrow()
    expect(agent.opened).toHaveLength(1)
    await agent.allClosed() // a pooled socket would stay open: the agent has no idle timeout
    expect(agent.live()).toBe(0)
  })

  test('interrupted before the response headers: the same', async () => {
    const { provider, agent } = await setUp()
    provider.enqueue({ kind: 'hang' })
    const controller = new AbortController()
    const exitPromise = Effect.runPromiseExit(modelOn(provider, agent).stream({ messages: [USER] }), { signal: controller.signal })
    await provider.waitForRequests(1)
    controller.abort()
    expect(interruptedOnly(await exitPromise)).toBe(true)
    await agent.allClosed()
    expect(agent.live()).toBe(0)
    await provider.waitForNoConnections()
  })

  test('the idle watchdog fired: StreamIdleTimeout, and the socket is destroyed', async () => {
    const { provider, agent } = await setUp()
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'then silence' }]) }], end: 'hang' })
    const exit = await Effect.runPromiseExit(modelOn(provider, agent, { idleTimeoutMs: 50 }).stream({ messages: [USER] }))
    expect(Exit.isFailure(exit) && exit.cause.reasons.find((reason) => reason._tag === 'Fail')?.error).toMatchObject({
      _tag: 'StreamIdleTimeout',
      partialText: 'then silence',
    })
    await agent.allClosed()
    expect(agent.live()).toBe(0)
    await provider.waitForNoConnections()
  })

  test('an error payload mid-stream ends the call and destroys the socket', async () => {
    const { provider, agent } = await setUp()
    provider.enqueue(streamScript(chatCompletionSse([{ text: 'x' }, { chunk: { error: { code: 'server_error', message: 'oops' } } }]), { end: 'hang' }))
    const exit = await Effect.runPromiseExit(modelOn(provider, agent).stream({ messages: [USER] }))
    expect(Exit.isFailure(exit)).toBe(true)
    await agent.allClosed()
    expect(agent.live()).toBe(0)
  })

  test('a provider that keeps sending after [DONE]: success at [DONE], then the socket is cut', async () => {
    const { provider, agent } = await setUp()
    const junk = `: ${'x'.repeat(100 * 1024)}\n\n`
    const answer = textAnswerSse('done already')
    provider.enqueue(streamScript(answer + junk, { splitAt: [answer.length, answer.length + 40_000, answer.length + 80_000], end: 'hang' }))
    const result = await Effect.runPromise(modelOn(provider, agent).stream({ messages: [USER] }))
    expect(result.text).toBe('done already')
    await agent.allClosed()
    expect(agent.live()).toBe(0)
    await provider.waitForNoConnections()
  })
})

describe('keep-alive', () => {
  test('a finished stream hands its socket back: the next call reuses it', async () => {
    const { provider, agent } = await setUp()
    provider.enqueue(streamScript(textAnswerSse('first')), streamScript(textAnswerSse('second')))
    const model = modelOn(provider, agent)
    const freed = once(agent, 'free')
    expect((await Effect.runPromise(model.stream({ messages: [USER] }))).text).toBe('first')
    await freed
    expect((await Effect.runPromise(model.stream({ messages: [USER] }))).text).toBe('second')
    expect(agent.opened).toHaveLength(1)
    expect(provider.requests).toHaveLength(2)
  })
})
