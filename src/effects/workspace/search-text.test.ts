import { describe, expect, it } from 'vitest'
import { fc, test } from '@fast-check/vitest'
import { highlightTerms, passagesOf, PASSAGE_TARGET, queryWords, searchableText, tsQueryOf } from './search-text.ts'
import { sliceCodePoints } from './text-paging.ts'

describe('searchableText', () => {
  it('keeps words, turns separators into spaces and CJK runs into bigrams', () => {
    expect(searchableText('Streaming-protocol: kb://users/demo/a.md')).toBe('Streaming protocol kb users demo a md')
    expect(searchableText('上下文压缩会保留证据')).toBe('上下 下文 文压 压缩 缩会 会保 保留 留证 证据')
    expect(searchableText('Node24版本')).toBe('Node24 版本')
    expect(searchableText('字')).toBe('字')
    expect(searchableText('café naïve')).toBe('café naïve')
  })
})

describe('queryWords and tsQueryOf', () => {
  it('requires every word: Latin words as prefixes, CJK bigrams exactly, a lone CJK character as a prefix', () => {
    expect(queryWords('  Stream  ENDS ')).toEqual(['stream', 'ends'])
    expect(tsQueryOf('Stream ends')).toBe("'stream':* & 'ends':*")
    expect(tsQueryOf('上下文')).toBe("'上下' & '下文'")
    expect(tsQueryOf('压')).toBe("'压':*")
  })

  it('has nothing to ask for punctuation alone, and never lets quotes or operators through', () => {
    expect(tsQueryOf(' ?!… ')).toBeUndefined()
    expect(tsQueryOf("it's & | ! <-> ( ) : * \\")).toBe("'it':* & 's':*")
  })

  it('keeps at most 16 words of at most 100 characters', () => {
    const words = queryWords(Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ') + ' ' + 'x'.repeat(300))
    expect(words).toHaveLength(16)
    expect(queryWords('y'.repeat(300))[0]).toHaveLength(100)
  })

  it('highlight terms are the words as typed, CJK runs whole', () => {
    expect(highlightTerms('Compaction, 上下文压缩!')).toEqual(['compaction', '上下文压缩'])
  })
})

describe('passagesOf', () => {
  it('cuts at a paragraph break near the target and counts offsets in code points', () => {
    const first = '😀'.repeat(10) + 'a'.repeat(790) + '\n\n'
    const body = first + 'b'.repeat(900) + '\n\n' + 'c'.repeat(700)
    const passages = passagesOf(body)
    expect(passages.map((p) => p.start)).toEqual([0, 802, 1704])
    expect(passages[0]!.text).toBe(first)
    expect(passages[1]!.text.startsWith('b')).toBe(true)
    expect(sliceCodePoints({ text: body, start: passages[2]!.start, end: passages[2]!.start + 1 })).toBe('c')
  })

  it('drops blank passages and keeps a short body whole', () => {
    expect(passagesOf('')).toEqual([])
    expect(passagesOf('   \n ')).toEqual([])
    expect(passagesOf('short')).toEqual([{ start: 0, length: 5, text: 'short' }])
  })

  test.prop([fc.string({ unit: 'grapheme', maxLength: 6000 })])('passages tile the body exactly, by code points, never splitting a pair', (body) => {
    const passages = passagesOf(body)
    for (const passage of passages) {
      expect(sliceCodePoints({ text: body, start: passage.start, end: passage.start + passage.length })).toBe(passage.text)
      expect(passage.length).toBeLessThanOrEqual(1400)
    }
    let end = 0
    for (const passage of passages) {
      expect(sliceCodePoints({ text: body, start: end, end: passage.start }).trim()).toBe('') // only blank text is left out
      end = passage.start + passage.length
    }
    expect(sliceCodePoints({ text: body, start: end }).trim()).toBe('')
  })

  it('passages of a long text without breaks are about the target length', () => {
    const passages = passagesOf('word '.repeat(2000))
    expect(passages.length).toBeGreaterThan(5)
    for (const passage of passages.slice(0, -1)) expect(Math.abs(passage.length - PASSAGE_TARGET)).toBeLessThan(10)
  })
})
