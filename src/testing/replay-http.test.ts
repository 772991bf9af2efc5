// The kit with real HTTP: knowagent's own model gateway (the OpenAI-compatible client over the
// scripted provider) as a provided callModel, on every path of a turn profile. Paths that stop the
// turn while the model streams must leave no socket, timer or promise behind, and the provider must
// see every connection closed.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fromPromise } from 'xstate'
import type { CallModelInput, CallModelOutput } from '../machines/index.ts'
import { ContractViolation } from './path-runner.ts'
import { makeOpenAiChatModel } from '../effects/llm/openai-client.ts'
import { chatModelTurnActors } from '../effects/turn/model-actors.ts'
import { type ScriptedProvider, startScriptedProvider, streamScript, textAnswerSse } from './scripted-provider.ts'
import { replay } from './replay.ts'
import { TURN_PROFILES, turnPaths } from './turn-paths.ts'

let provider: ScriptedProvider
beforeAll(async () => {
  // every model call streams an answer, then the stream stays open until the client goes away
  provider = await startScriptedProvider({ handler: () => streamScript(textAnswerSse('An answer from the provider.'), { end: 'hang' }) })
})
afterAll(() => provider.close())

it('replays every path of a profile with the real model gateway as callModel', async () => {
  const model = makeOpenAiChatModel(
    {
      id: 'kit',
      name: 'Kit model',
      profile: 'kit',
      baseUrl: provider.baseUrl,
      apiKeyEnv: 'KIT_KEY',
      model: 'scripted',
      contextWindow: 1_000_000,
      maxOutputTokens: 2_000,
      supportsNativeToolCalling: true,
    },
    { env: { KIT_KEY: 'sk-kit' } },
  )
  const { callModel } = chatModelTurnActors(model)
  const profile = TURN_PROFILES.find((one) => one.name === 'one model call')!
  const paths = turnPaths({ profiles: [profile], provided: ['callModel'] })
  expect(paths.some((path) => path.events.at(-1)?.type === 'user.stop' && path.states.at(-2)!.includes('callingModel'))).toBe(true)
  for (const path of paths) {
    const result = await replay(path, { actors: { callModel } })
    expect(['done', 'failed', 'cancelled']).toContain(result.output.status)
  }
  expect(provider.requests.length).toBeGreaterThan(0)
  await provider.waitForNoConnections()
})

it('catches a callModel whose request ignores the abort signal: its socket and promise outlive the stop', async () => {
  const profile = TURN_PROFILES.find((one) => one.name === 'one model call')!
  const stopped = turnPaths({ profiles: [profile], provided: ['callModel'] }).find(
    (path) => path.events.at(-1)?.type === 'user.stop' && path.states.at(-2)!.includes('callingModel'),
  )!
  const before = provider.requests.length
  const deaf = fromPromise<CallModelOutput, CallModelInput>(async () => {
    const response = await fetch(`${provider.baseUrl}/chat/completions`, { method: 'POST', body: '{}' }) // no signal
    return { ok: true, result: { text: await response.text(), thinking: '', toolCalls: [], finishReason: 'stop', rawFinishReason: 'stop', usage: undefined } }
  })
  const error = await replay(stopped, { actors: { callModel: deaf } }).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(ContractViolation)
  expect((error as ContractViolation).rule).toBe('cancel releases every actor')
  expect((error as ContractViolation).detail).toMatch(/^callModel still holds .*pending promise.*1 TCPWRAP/)
  await provider.waitForRequests(before + 1)
  expect(provider.requests[before]!.clientClosedAt).toBeUndefined()
})
