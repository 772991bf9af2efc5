import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import * as Schema from 'effect/Schema'
import { describe, expect, test } from 'vitest'
import { startScriptedProvider, streamScript, textAnswerSse } from '../../../tests/support/scripted-provider.ts'
import { LOCAL_MODEL_INFO } from './local/index.ts'
import { decodeModelsConfig, ModelsConfigSchema, toModelInfo, type ModelConfig } from './model-config.ts'
import { makeModelRegistry, ModelRegistryService } from './model-registry.ts'

const SECRET_HEADER = 'hdr-secret-91c2'

const entry = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'gpt-4o-mini',
  name: 'GPT-4o mini',
  profile: 'openai',
  baseUrl: 'https://api.openai.com/v1',
  apiKeyEnv: 'OPENAI_API_KEY',
  model: 'gpt-4o-mini',
  contextWindow: 128_000,
  maxOutputTokens: 4_096,
  supportsNativeToolCalling: true,
  ...overrides,
})

const decode = (input: unknown) => decodeModelsConfig(input)
const failureMessage = (input: unknown): string => {
  const result = decode(input)
  if (result.ok) throw new Error('expected a decode error')
  return result.message
}

describe('ModelsConfigSchema', () => {
  test('a full entry decodes unchanged', () => {
    const full = entry({
      headers: { 'HTTP-Referer': 'https://kb.example', 'X-Title': 'knowagent' },
      streamUsage: true,
      reasoningEffort: 'low',
      idleTimeoutMs: 30_000,
      maxRetries: 3,
      maxTokensField: 'max_completion_tokens',
    })
    expect(decode([full])).toEqual({ ok: true, models: [full] })
  })

  test('optional fields may be left out; an empty array is valid', () => {
    const { apiKeyEnv: _key, ...minimal } = entry()
    expect(decode([minimal])).toEqual({ ok: true, models: [minimal] })
    expect(decode([])).toEqual({ ok: true, models: [] })
  })

  test('a duplicate id is refused and named', () => {
    const message = failureMessage([entry({ id: 'qwen-plus' }), entry({ id: 'other' }), entry({ id: 'qwen-plus' })])
    expect(message).toContain('duplicate model id "qwen-plus"')
    expect(message).toContain('[2]')
  })

  test('the id "local" is reserved for the built-in model', () => {
    expect(failureMessage([entry({ id: 'local' })])).toContain('reserved for the built-in local model')
  })

  test.each([
    ['contextWindow', 0, 'greater than 0'],
    ['contextWindow', 1.5, 'integer'],
    ['maxOutputTokens', -1, 'greater than 0'],
    ['idleTimeoutMs', 0, 'greater than 0'],
    ['maxRetries', 11, 'between'],
    ['baseUrl', 'api.openai.com/v1', 'absolute URL'],
    ['baseUrl', 'ftp://example.com', 'http(s)'],
    ['apiKeyEnv', 'sk-live-abc', 'NAME of an environment variable'],
    ['id', 'has space', 'model id'],
    ['name', '  ', 'blank'],
    ['supportsNativeToolCalling', 'yes', 'boolean'],
    ['maxTokensField', 'max_output', 'max_tokens'],
    ['headers', { 'X-N': 1 }, 'string'],
  ])('%s = %j is refused', (field, value, fragment) => {
    const message = failureMessage([entry({ [field]: value })])
    expect(message).toContain(fragment)
    expect(message).toContain(field === 'headers' ? 'headers' : `["${field}"]`)
  })

  test('the window must leave room for the output reserve and the 1024 protocol reserve', () => {
    expect(failureMessage([entry({ contextWindow: 5_000, maxOutputTokens: 4_000 })])).toContain('protocol reserve')
    expect(decode([entry({ contextWindow: 5_025, maxOutputTokens: 4_000 })]).ok).toBe(true)
  })

  test('missing required fields are named', () => {
    const { model: _model, ...withoutModel } = entry()
    expect(failureMessage([withoutModel])).toContain('["model"]')
  })

  test('decodeModelsConfig refuses unknown keys (typos); the bare schema strips them', () => {
    expect(failureMessage([entry({ apikeyEnv: 'OPENAI_API_KEY' })])).toContain('apikeyEnv')
    expect(Schema.decodeUnknownSync(ModelsConfigSchema)([entry({ extra: 1 })])[0]).not.toHaveProperty('extra')
  })
})

describe('toModelInfo', () => {
  test('projects only id, name, profile, window, output reserve and tool capability', () => {
    const config = decode([entry({ headers: { Authorization: SECRET_HEADER } })])
    if (!config.ok) throw new Error(config.message)
    const info = toModelInfo(config.models[0]!)
    expect(info).toEqual({
      id: 'gpt-4o-mini',
      name: 'GPT-4o mini',
      profile: 'openai',
      contextWindow: 128_000,
      maxOutputTokens: 4_096,
      supportsNativeToolCalling: true,
    })
    const json = JSON.stringify(info)
    for (const hidden of ['api.openai.com', 'OPENAI_API_KEY', SECRET_HEADER]) expect(json).not.toContain(hidden)
  })
})

describe('makeModelRegistry', () => {
  const configs = (decode([entry(), entry({ id: 'qwen-plus', name: 'Qwen Plus', profile: 'dashscope', supportsNativeToolCalling: false })]) as {
    models: ReadonlyArray<ModelConfig>
  }).models

  test('lists configured models in order, then the built-in local model', () => {
    const registry = makeModelRegistry({ models: configs, env: {} })
    expect(registry.list().map((info) => info.id)).toEqual(['gpt-4o-mini', 'qwen-plus', 'local'])
    expect(registry.list()[2]).toEqual(LOCAL_MODEL_INFO)
    expect(JSON.stringify(registry.list())).not.toMatch(/baseUrl|apiKeyEnv|headers|https?:/)
  })

  test('with no configuration, the local model is still there', async () => {
    const registry = makeModelRegistry({ models: [], env: {} })
    expect(registry.list()).toEqual([LOCAL_MODEL_INFO])
    const local = await Effect.runPromise(registry.get('local'))
    expect(local.info.name).toBe('Local extractive (no LLM)')
  })

  test('an unknown id is UnknownModel, never a fallback', async () => {
    const registry = makeModelRegistry({ models: configs, env: {} })
    const exit = await Effect.runPromiseExit(registry.get('gpt-5'))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === 'Fail')?.error : undefined
    expect(error).toMatchObject({ _tag: 'UnknownModel', modelId: 'gpt-5' })
    expect(error?.reason).toBe('unknown model id "gpt-5"')
  })

  test('get returns a working model for a configured id, reading its key from env', async () => {
    const provider = await startScriptedProvider({ scripts: [streamScript(textAnswerSse('from registry'))] })
    try {
      const decoded = decode([entry({ id: 'scripted', baseUrl: provider.baseUrl, apiKeyEnv: 'SCRIPTED_KEY' })])
      if (!decoded.ok) throw new Error(decoded.message)
      const registry = makeModelRegistry({ models: decoded.models, env: { SCRIPTED_KEY: 'sk-registry-test-1' } })
      const result = await Effect.runPromise(
        Effect.flatMap(registry.get('scripted'), (model) => model.stream({ messages: [{ role: 'user', content: 'hi' }] })),
      )
      expect(result.text).toBe('from registry')
      expect(provider.requests[0]?.headers.authorization).toBe('Bearer sk-registry-test-1')
    } finally {
      await provider.close()
    }
  })

  test('as a service layer', async () => {
    const program = Effect.gen(function* () {
      const registry = yield* ModelRegistryService
      return registry.list().map((info) => info.id)
    })
    const ids = await Effect.runPromise(Effect.provide(program, ModelRegistryService.layer({ models: configs, env: {} })))
    expect(ids).toEqual(['gpt-4o-mini', 'qwen-plus', 'local'])
  })
})
