import { fc, test as propTest } from '@fast-check/vitest'
import { describe, expect, it } from 'vitest'
import { compactionRatio, estimateInputBytes, inputLimit, utf8ByteLength } from './context-accounting.ts'
import type { ChatMessage, ToolSchema } from './turn-types.ts'

describe('utf8ByteLength', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['é', 2],
    ['中文', 6],
    ['😀', 4],
    ['\ud800', 3],
    ['plain ASCII, then é', 20],
    ['abc\ud800', 6],
    ['a😀b', 6],
    ['{"content":"中"}\udfff', 20],
  ])('counts %j as %i bytes', (text, bytes) => {
    expect(utf8ByteLength(text)).toBe(bytes)
  })

  propTest.prop([fc.string({ unit: 'grapheme' })])('agrees with Buffer.byteLength', (text) => {
    expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text, 'utf8'))
  })
})

describe('estimateInputBytes', () => {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'où est kb://users/a/x.md ?' },
  ]
  const tools: ToolSchema[] = [{ type: 'function', function: { name: 'read', description: 'read a page', parameters: {} } }]

  it('is the UTF-8 size of the JSON of the messages plus the JSON of the tools', () => {
    const expected = Buffer.byteLength(JSON.stringify(messages)) + Buffer.byteLength(JSON.stringify(tools))
    expect(estimateInputBytes({ messages, tools })).toBe(expected)
  })

  it('measures each tool list by its own content, the same at every step', () => {
    const other: ToolSchema[] = [{ type: 'function', function: { name: 'search', description: 'cherche « ça »', parameters: { type: 'object' } } }]
    for (let step = 0; step < 3; step++) {
      expect(estimateInputBytes({ messages, tools })).toBe(Buffer.byteLength(JSON.stringify(messages)) + Buffer.byteLength(JSON.stringify(tools)))
      expect(estimateInputBytes({ messages, tools: other })).toBe(Buffer.byteLength(JSON.stringify(messages)) + Buffer.byteLength(JSON.stringify(other)))
    }
  })

  it('adds nothing for a model without tools', () => {
    expect(estimateInputBytes({ messages, tools: [] })).toBe(Buffer.byteLength(JSON.stringify(messages)))
  })
})

describe('inputLimit', () => {
  it('is window − output reserve − protocol reserve', () => {
    expect(inputLimit({ contextWindow: 32_000, maxOutputTokens: 4_000, protocolReserve: 1024 })).toBe(26_976)
  })

  it('is never negative', () => {
    expect(inputLimit({ contextWindow: 1_000, maxOutputTokens: 4_000, protocolReserve: 1024 })).toBe(0)
  })
})

describe('compactionRatio', () => {
  it('is after / before', () => {
    expect(compactionRatio({ before: 1000, after: 250 })).toBe(0.25)
  })

  it('is undefined without a measurement', () => {
    expect(compactionRatio(undefined)).toBeUndefined()
    expect(compactionRatio({ before: 0, after: 0 })).toBeUndefined()
  })
})
