import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { containsCjk, createKeywordMatcher, extractKeywords, MAX_QUERY_KEYWORDS, splitSentences } from './text-relevance.ts'

describe('extractKeywords', () => {
  test.each([
    ['How does the wiki compiler publish the overview?', ['wiki', 'compiler', 'publish', 'overview']],
    ["What's the API for kb_search in v2.1?", ['api', 'kb_search', 'v2.1']],
    ['Tell me about it, please.', []],
    ['知识库的编译流程是什么？', ['知识库', '编译流程']],
    ['请介绍一下向量数据库和全文检索的区别', ['向量', '数据库', '全文检索', '区别']],
    ['API接口怎么调用', ['api', '接口', '调用']],
    ['ＦＵＬＬＷＩＤＴＨ text', ['fullwidth', 'text']],
    ['a b c 7', ['7']],
  ])('%j → %j', (question, keywords) => {
    expect(extractKeywords(question)).toEqual(keywords)
  })

  test('duplicates are dropped and at most MAX_QUERY_KEYWORDS are kept', () => {
    const question = 'alpha beta alpha gamma delta epsilon zeta eta theta iota kappa lambda'
    const keywords = extractKeywords(question)
    expect(keywords).toHaveLength(MAX_QUERY_KEYWORDS)
    expect(keywords.slice(0, 3)).toEqual(['alpha', 'beta', 'gamma'])
  })
})

describe('createKeywordMatcher', () => {
  test('inflected forms match (compile / compiled / compiling)', () => {
    const matcher = createKeywordMatcher(['compiling'])
    expect(matcher.score('The file was compiled yesterday.')).toBeGreaterThan(0)
    expect(matcher.score('Nothing to see.')).toBe(0)
  })

  test('more distinct keywords score higher than one repeated', () => {
    const matcher = createKeywordMatcher(['budget', 'party'])
    expect(matcher.score('The party budget.')).toBeGreaterThan(matcher.score('Budget budget budget.'))
  })

  test('CJK keywords match by bigrams, also inside longer runs', () => {
    const matcher = createKeywordMatcher(['编译流程'])
    expect(matcher.score('本文说明编译流程的三个阶段。')).toBeGreaterThan(0)
    expect(matcher.score('这里讲的是部署。')).toBe(0)
  })

  test('file names match by their parts', () => {
    expect(createKeywordMatcher(['cats']).score('cats.md')).toBeGreaterThan(0)
  })

  test('no keywords: empty matcher scoring 0', () => {
    const matcher = createKeywordMatcher([])
    expect(matcher.isEmpty).toBe(true)
    expect(matcher.score('anything')).toBe(0)
  })
})

describe('splitSentences', () => {
  test('splits at punctuation and line breaks, with code-point offsets', () => {
    const text = '🎉 First one. Second!\n# Heading\n第一句。第二句？ Version 2.5 is out.'
    expect(splitSentences(text)).toEqual([
      { text: '🎉 First one.', offset: 0 },
      { text: 'Second!', offset: 13 },
      { text: '# Heading', offset: 21 },
      { text: '第一句。', offset: 31 },
      { text: '第二句？', offset: 35 },
      { text: 'Version 2.5 is out.', offset: 40 },
    ])
  })

  test('a very long sentence is cut with …', () => {
    const [sentence] = splitSentences('x'.repeat(1000))
    expect(Array.from(sentence!.text)).toHaveLength(400)
    expect(sentence!.text.endsWith('…')).toBe(true)
  })

  propertyTest.prop([fc.string({ unit: 'grapheme', maxLength: 300 })], { numRuns: 300 })(
    'every sentence is the text found at its offset',
    (text) => {
      const chars = Array.from(text)
      for (const sentence of splitSentences(text)) {
        if (sentence.text.endsWith('…')) continue
        expect(chars.slice(sentence.offset, sentence.offset + Array.from(sentence.text).length).join('')).toBe(sentence.text)
      }
    },
  )
})

test('containsCjk', () => {
  expect(containsCjk('hello 世界')).toBe(true)
  expect(containsCjk('hello world')).toBe(false)
})
