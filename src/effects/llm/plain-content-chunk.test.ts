import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { createChunkAssembler } from './chunk-assembler.ts'
import type { ModelStreamEvent } from './model.ts'
import { MAX_FAST_PATH_CHARS, readPlainContentChunk } from './plain-content-chunk.ts'

/** What the general path (JSON.parse + the chunk assembler) makes of one chunk's data. */
function generalPath(data: string) {
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    return { kind: 'not-json' as const }
  }
  const assembler = createChunkAssembler()
  const events: ModelStreamEvent[] = []
  const outcome = assembler.acceptChunk(parsed, (event) => events.push(event))
  return { kind: outcome.kind, events, result: assembler.buildResult() }
}

/** What the fast path makes of the content it read. */
function fastPath(content: string) {
  const assembler = createChunkAssembler()
  const events: ModelStreamEvent[] = []
  assembler.acceptContent(content, (event) => events.push(event))
  return { kind: 'events' as const, events, result: assembler.buildResult() }
}

const openAi = (content: string) =>
  JSON.stringify({
    id: 'chatcmpl-123',
    object: 'chat.completion.chunk',
    created: 1694268190,
    model: 'gpt-4o-mini',
    system_fingerprint: 'fp_44709d6fcb',
    choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }],
  })

describe('readPlainContentChunk', () => {
  test.each([
    ['OpenAI', openAi('Hello'), 'Hello'],
    ['the first chunk with its role', '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}', ''],
    ['DeepSeek after its reasoning', '{"id":"ds-1","object":"chat.completion.chunk","created":1718000007,"model":"deepseek-reasoner","system_fingerprint":"fp_ds","choices":[{"index":0,"delta":{"content":"4","reasoning_content":null},"logprobs":null,"finish_reason":null}]}', '4'],
    ['Ollama', '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"llama3","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}', 'Hi'],
    ['OpenRouter', '{"id":"gen-17180","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1718000006,"choices":[{"index":0,"delta":{"role":"assistant","content":"Open"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}', 'Open'],
    ['DashScope', '{"choices":[{"delta":{"content":"你好","role":"assistant"},"index":0,"logprobs":null,"finish_reason":null}],"object":"chat.completion.chunk","usage":null,"created":1718000000,"system_fingerprint":null,"model":"qwen-plus","id":"chatcmpl-1"}', '你好'],
    ['members in another order', '{"choices":[{"delta":{"content":"x"},"finish_reason":null,"index":0}],"model":"m","created":0,"id":null,"usage":null}', 'x'],
    ['escapes', openAi('a "quoted"\nline\t\\ é 中文 😀 \u0007'), 'a "quoted"\nline\t\\ é 中文 😀 \u0007'],
    ['unicode escapes', '{"choices":[{"index":0,"delta":{"content":"\\u4e2d\\ud83d\\ude00\\/"}}]}', '中😀/'],
  ])('%s → the content', (_name, data, content) => {
    expect(readPlainContentChunk(data)).toBe(content)
    expect(fastPath(content)).toEqual(generalPath(data))
  })

  test.each([
    ['an error object', '{"error":{"message":"boom"},"choices":[{"index":0,"delta":{"content":"x"}}]}'],
    ['object "error"', '{"object":"error","choices":[{"index":0,"delta":{"content":"x"}}]}'],
    ['a finish reason', '{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}'],
    ['a native finish reason', '{"choices":[{"index":0,"delta":{"content":"x"},"native_finish_reason":"stop"}]}'],
    ['usage', '{"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}'],
    ['reasoning', '{"choices":[{"index":0,"delta":{"content":"x","reasoning_content":"hm"}}]}'],
    ['a tool call', '{"choices":[{"index":0,"delta":{"content":"x","tool_calls":[{"index":0}]}}]}'],
    ['another choice index', '{"choices":[{"index":1,"delta":{"content":"x"}}]}'],
    ['two choices', '{"choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"}}]}'],
    ['null content', '{"choices":[{"index":0,"delta":{"content":null}}]}'],
    ['two contents', '{"choices":[{"index":0,"delta":{"content":"x","content":"y"}}]}'],
    ['another role', '{"choices":[{"index":0,"delta":{"role":"user","content":"x"}}]}'],
    ['whitespace between tokens', '{"choices": [{"index": 0, "delta": {"content": "x"}}]}'],
    ['a number with a leading zero (not JSON)', '{"created":01,"choices":[{"index":0,"delta":{"content":"x"}}]}'],
    ['a raw control character (not JSON)', '{"choices":[{"index":0,"delta":{"content":"a\u0001b"}}]}'],
    ['an illegal escape (not JSON)', '{"choices":[{"index":0,"delta":{"content":"\\x41"}}]}'],
    ['a short unicode escape (not JSON)', '{"choices":[{"index":0,"delta":{"content":"\\u41"}}]}'],
    ['an unknown key', '{"message":"m","code":"c","choices":[{"index":0,"delta":{"content":"x"}}]}'],
    ['trailing bytes', `${openAi('x')}x`],
    ['too long', openAi('x'.repeat(MAX_FAST_PATH_CHARS))],
  ])('%s → the general path', (_name, data) => {
    expect(readPlainContentChunk(data)).toBeUndefined()
  })

  test('a line near the bound, all escapes, is read; one brace short, refused', () => {
    const prefix = '{"choices":[{"index":0,"delta":{"content":"'
    const quotes = Math.floor((MAX_FAST_PATH_CHARS - prefix.length - 5) / 2)
    const data = `${prefix}${'\\"'.repeat(quotes)}"}}]}`
    expect(data.length).toBeGreaterThan(MAX_FAST_PATH_CHARS - 8)
    expect(data.length).toBeLessThanOrEqual(MAX_FAST_PATH_CHARS)
    expect(readPlainContentChunk(data)).toBe('"'.repeat(quotes))
    expect(readPlainContentChunk(`${data.slice(0, -4)}}]}`)).toBeUndefined() // "}]} : the delta's brace is missing
  })

  // The contract: whatever the fast path accepts, the general path reads the same way. The
  // generator mostly builds chunks of the accepted shape, with hostile members mixed in.
  const sometimes = (valid: fc.Arbitrary<string>, hostile: fc.Arbitrary<string>) =>
    fc.oneof({ arbitrary: valid, weight: 5 }, { arbitrary: hostile, weight: 1 })
  const jsonString = sometimes(
    fc.string({ unit: 'binary', maxLength: 12 }).map((text) => JSON.stringify(text)),
    fc.constantFrom('"a\u0001"', '"\\x"', '"\\u12"', '"open', '"a"b"', '"\\"', '"\\ud800"', '"\u2028"'),
  )
  /** `{…}` of the required member placed among the others at any position. */
  const objectOf = (required: fc.Arbitrary<string>, other: fc.Arbitrary<string>) =>
    fc.tuple(required, fc.array(other, { maxLength: 3 }), fc.nat(), fc.constantFrom('', '', '', '', ' ')).map(([member, others, at, space]) => {
      const members = [...others]
      members.splice(at % (others.length + 1), 0, member)
      return `{${members.join(`,${space}`)}}`
    })
  const delta = objectOf(
    sometimes(jsonString.map((literal) => `"content":${literal}`), fc.constantFrom('"content":null', '"content":5', '"content":"x","content":"y"', '"role":"assistant"')),
    sometimes(
      fc.constantFrom('"role":"assistant"', '"reasoning_content":null', '"reasoning":null', '"refusal":null', '"tool_calls":null'),
      fc.constantFrom('"role":"user"', '"reasoning_content":"hm"', '"reasoning":""', '"tool_calls":[{"index":0,"function":{"name":"ls"}}]', '"function_call":null'),
    ),
  )
  const choice = objectOf(
    sometimes(delta.map((text) => `"delta":${text}`), fc.constantFrom('"delta":null', '"delta":{}', '"message":{"content":"x"}')),
    sometimes(
      fc.constantFrom('"index":0', '"logprobs":null', '"finish_reason":null', '"native_finish_reason":null'),
      fc.constantFrom('"index":1', '"index":00', '"index":-0', '"finish_reason":"stop"', '"finish_reason":""', '"usage":{"total_tokens":5}', '"usage":null'),
    ),
  )
  const choices = sometimes(
    choice.map((text) => `"choices":[${text}]`),
    fc.oneof(fc.constant('"choices":[]'), fc.tuple(choice, choice).map(([a, b]) => `"choices":[${a},${b}]`)),
  )
  const chunkText = objectOf(
    choices,
    sometimes(
      fc.oneof(
        fc.constantFrom('"object":"chat.completion.chunk"', '"created":1694268190', '"created":0', '"usage":null', '"system_fingerprint":null'),
        jsonString.map((literal) => `"id":${literal}`),
        jsonString.map((literal) => `"model":${literal}`),
      ),
      fc.constantFrom('"object":"error"', '"created":012', '"created":1.5', '"created":-1', '"usage":{"prompt_tokens":3}', '"error":"boom"', '"error":{"message":"x"}', '"message":"m"', '"code":"c"', '"detail":"d"'),
    ),
  )
  propertyTest.prop([chunkText], { numRuns: 3000 })('what the fast path reads, the general path reads the same way', (data) => {
    const content = readPlainContentChunk(data)
    if (content !== undefined) expect(fastPath(content)).toEqual(generalPath(data))
  })

  test('the generator above reaches the fast path often enough to mean something', () => {
    const accepted = fc.sample(chunkText, { numRuns: 3000, seed: 1 }).filter((data) => readPlainContentChunk(data) !== undefined)
    expect(accepted.length).toBeGreaterThan(300)
  })

  const edit = fc.tuple(fc.nat(), fc.constantFrom('"', '\\', ',', '{', '}', '[', ']', ':', '0', '1', ' ', '\u0001', 'a', 'null', ''), fc.nat({ max: 2 }))
  propertyTest.prop([fc.string({ unit: 'binary', maxLength: 8 }), fc.array(edit, { minLength: 1, maxLength: 3 })], { numRuns: 3000 })(
    'an accepted chunk with bytes changed is either refused or read the same way as by the general path',
    (content, edits) => {
      let data = openAi(content)
      expect(readPlainContentChunk(data)).toBe(content)
      for (const [at, insert, removeCount] of edits) {
        const position = at % (data.length + 1)
        data = data.slice(0, position) + insert + data.slice(position + removeCount)
      }
      const read = readPlainContentChunk(data)
      if (read !== undefined) expect(fastPath(read)).toEqual(generalPath(data))
    },
  )
})
