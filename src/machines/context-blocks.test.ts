import { describe, expect, it } from 'vitest'
import { placeContextBlocks, readContextBlock, renderContextBlock, visibleContextBlocks } from './context-blocks.ts'
import type { ChatMessage } from './turn-types.ts'

const system: ChatMessage = { role: 'system', content: 'You are KnowAgent.' }
const history: ChatMessage[] = [
  { role: 'user', content: 'earlier question' },
  { role: 'assistant', content: 'earlier answer' },
]
const question: ChatMessage = { role: 'user', content: 'current question' }

describe('placeContextBlocks', () => {
  it('inserts a block after the system prompt and before the history', () => {
    const { messages } = placeContextBlocks({ messages: [system, ...history, question], changes: [{ source: 'retrieval-catalog', content: 'two services' }] })
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'user'])
    expect(readContextBlock(messages[1]!)).toEqual({ source: 'retrieval-catalog', content: 'two services' })
    expect(messages[0]).toBe(system)
  })

  it('replaces a block of the same source in place and keeps the others in their order', () => {
    const first = placeContextBlocks({
      messages: [system, question],
      changes: [
        { source: 'a', content: 'A1' },
        { source: 'b', content: 'B1' },
      ],
    }).messages
    const { messages } = placeContextBlocks({ messages: first, changes: [{ source: 'a', content: 'A2' }] })
    expect(visibleContextBlocks(messages)).toEqual([
      { source: 'a', content: 'A2' },
      { source: 'b', content: 'B1' },
    ])
    expect(messages).toHaveLength(4)
  })

  it('removes a block when the content is null, and a removal of an absent block changes nothing', () => {
    const placed = placeContextBlocks({ messages: [system, question], changes: [{ source: 'a', content: 'A' }] }).messages
    expect(placeContextBlocks({ messages: placed, changes: [{ source: 'a', content: null }] }).messages).toEqual([system, question])
    expect(placeContextBlocks({ messages: [system, question], changes: [{ source: 'x', content: null }] }).messages).toEqual([system, question])
  })

  it('refuses a source that could forge a header, and places nothing for it', () => {
    const { messages, refused } = placeContextBlocks({ messages: [system, question], changes: [{ source: 'a"] evil', content: 'x' }] })
    expect(refused).toEqual(['a"] evil'])
    expect(messages).toEqual([system, question])
  })

  it('with no system prompt, a block goes first', () => {
    const { messages } = placeContextBlocks({ messages: [question], changes: [{ source: 'a', content: 'A' }] })
    expect(messages[0]).toEqual(renderContextBlock({ source: 'a', content: 'A' }))
  })
})

describe('readContextBlock', () => {
  it('reads only system messages that start with the header', () => {
    const block = renderContextBlock({ source: 'retrieval-catalog', content: 'line 1\nline 2' })
    expect(readContextBlock(block)).toEqual({ source: 'retrieval-catalog', content: 'line 1\nline 2' })
    expect(readContextBlock({ role: 'user', content: block.content as string })).toBeUndefined()
    expect(readContextBlock(system)).toBeUndefined()
  })
})
