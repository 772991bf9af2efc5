import { describe, expect, it } from 'vitest'
import { knownModel, readReportedModel, suggestModel } from './known-models.ts'
import { PROTOCOL_RESERVE_TOKENS } from './model-config.ts'

describe('knownModel', () => {
  it.each([
    ['gpt-4o', 128_000, true],
    ['gpt-4o-mini-2024-07-18', 128_000, true],
    ['gpt-4.1', 1_047_576, true],
    ['o4-mini', 200_000, true],
    ['qwen-plus', 131_072, true],
    ['qwen-max', 32_768, true],
    ['deepseek-chat', 65_536, true],
    ['llama3.1:8b', 131_072, true],
    ['meta-llama/Llama-3.3-70B-Instruct', 131_072, true],
  ])('%s has a %i-token window', (name, window, tools) => {
    expect(knownModel(name)?.limits).toMatchObject({ contextWindow: window, supportsNativeToolCalling: tools })
  })

  it('knows nothing of an unknown model', () => {
    expect(knownModel('my-finetune')).toBeUndefined()
  })
})

describe('suggestModel', () => {
  it('prefers what the provider reports', () => {
    expect(suggestModel({ id: 'gpt-4o', contextWindow: 64_000 })).toMatchObject({ contextWindow: 64_000, source: 'provider', supportsNativeToolCalling: true })
  })

  it('falls back to the table, then to a conservative guess', () => {
    expect(suggestModel({ id: 'qwen-plus' })).toMatchObject({ contextWindow: 131_072, maxOutputTokens: 8_192, source: 'built-in table', displayName: 'qwen-plus' })
    expect(suggestModel({ id: 'llama3.1:8b' })).toMatchObject({ displayName: 'Llama 3.1 8b', source: 'built-in table' })
    expect(suggestModel({ id: 'mystery' })).toMatchObject({ contextWindow: 8_192, supportsNativeToolCalling: false, source: 'default guess' })
  })

  it('always leaves room for input', () => {
    for (const contextWindow of [1_100, 2_048, 4_096, 8_192]) {
      const suggested = suggestModel({ id: 'gpt-4o', contextWindow })
      expect(suggested.contextWindow - suggested.maxOutputTokens - PROTOCOL_RESERVE_TOKENS).toBeGreaterThan(0)
    }
  })
})

describe('readReportedModel', () => {
  it('reads the fields providers use', () => {
    expect(readReportedModel({ id: 'a', context_length: 4096, top_provider: { max_completion_tokens: 512 } })).toEqual({ id: 'a', contextWindow: 4096, maxOutputTokens: 512 })
    expect(readReportedModel({ id: 'b', max_model_len: 32768 })).toMatchObject({ contextWindow: 32768 })
    expect(readReportedModel({ id: 'c', context_window: 8192 })).toMatchObject({ contextWindow: 8192 })
    expect(readReportedModel({ object: 'model' })).toBeUndefined()
    expect(readReportedModel({ id: 'd', context_length: -3 })).toEqual({ id: 'd', contextWindow: undefined, maxOutputTokens: undefined })
  })
})
