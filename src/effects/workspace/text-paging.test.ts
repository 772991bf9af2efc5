import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  PAGE_DEFAULT_LIMIT,
  PAGE_MAX_LIMIT,
  codePointLength,
  findAll,
  pageText,
  sliceCodePoints,
  snippetAround,
} from './text-paging.ts'

// Reference implementations: obviously correct, slow.
const codePoints = (text: string): string[] => Array.from(text)
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const hasLoneSurrogate = (text: string): boolean => LONE_SURROGATE.test(text)

const allPages = (text: string, limit: number): string[] => {
  const pages: string[] = []
  let offset: number | null = 0
  while (offset !== null) {
    const page = pageText({ text, offset, limit })
    pages.push(page.text)
    offset = page.next_offset
  }
  return pages
}

// Strings that stress paging: CJK, emoji (astral, ZWJ sequences), combining marks, ASCII.
const mixedText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 400 }),
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc
    .array(fc.constantFrom('a', 'Z', ' ', '\n', '中', '文', '😀', '👩‍💻', '𠀋', 'é', 'e\u0301'), { maxLength: 400 })
    .map((parts) => parts.join('')),
)

const EMOJI = '😀'
// A long text past the memo threshold, with astral characters spread through it.
const longAstralText = (codePointCount: number): string => {
  const parts: string[] = []
  for (let i = 0; i < codePointCount; i++) parts.push(i % 7 === 0 ? EMOJI : i % 5 === 0 ? '中' : String.fromCharCode(97 + (i % 26)))
  return parts.join('')
}

/**
 * Runs `work` counting the code units it reads through String.prototype.charCodeAt and
 * codePointAt (how text-paging walks a text), and fails as soon as the count passes `budget`:
 * a measure of work that does not depend on the machine's speed or load.
 */
function countCodeUnitReads({ budget }: { budget: number }, work: () => void): number {
  const original = { charCodeAt: String.prototype.charCodeAt, codePointAt: String.prototype.codePointAt }
  let reads = 0
  const count = (): void => {
    if (++reads > budget) throw new Error(`read more than ${budget} code units`)
  }
  String.prototype.charCodeAt = function (this: string, index: number) {
    count()
    return original.charCodeAt.call(this, index)
  }
  String.prototype.codePointAt = function (this: string, index: number) {
    count()
    return original.codePointAt.call(this, index)
  }
  try {
    work()
  } finally {
    String.prototype.charCodeAt = original.charCodeAt
    String.prototype.codePointAt = original.codePointAt
  }
  return reads
}

describe('codePointLength', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['知识工作区', 5],
    [`${EMOJI}${EMOJI}`, 2],
    ['👩‍💻', 3], // woman, ZWJ, laptop: one grapheme, three code points
    ['a\uD800b', 3], // a lone surrogate counts as one
  ])('%j has %i code points', (text, expected) => {
    expect(codePointLength(text)).toBe(expected)
  })

  it('agrees with Array.from for any string', () => {
    fc.assert(fc.property(mixedText, (text) => codePointLength(text) === codePoints(text).length))
  })
})

describe('pageText', () => {
  it('pages by code points, not UTF-16 units', () => {
    const text = `${EMOJI}a${EMOJI}b${EMOJI}`
    expect(pageText({ text, offset: 0, limit: 2 })).toEqual({ text: `${EMOJI}a`, offset: 0, next_offset: 2, total: 5 })
    expect(pageText({ text, offset: 2, limit: 2 })).toEqual({ text: `${EMOJI}b`, offset: 2, next_offset: 4, total: 5 })
    expect(pageText({ text, offset: 4, limit: 2 })).toEqual({ text: EMOJI, offset: 4, next_offset: null, total: 5 })
  })

  it('uses a default limit of 3000 code points', () => {
    const text = '字'.repeat(PAGE_DEFAULT_LIMIT + 10)
    const page = pageText({ text })
    expect(codePointLength(page.text)).toBe(PAGE_DEFAULT_LIMIT)
    expect(page).toMatchObject({ offset: 0, next_offset: PAGE_DEFAULT_LIMIT, total: PAGE_DEFAULT_LIMIT + 10 })
  })

  it.each([
    [0, 1],
    [-5, 1],
    [0.5, 1],
    [10_000, PAGE_MAX_LIMIT],
    [Number.POSITIVE_INFINITY, PAGE_MAX_LIMIT],
    [Number.NaN, PAGE_DEFAULT_LIMIT],
    [42.9, 42],
  ])('clamps limit %d to %d', (limit, expected) => {
    const text = EMOJI.repeat(PAGE_MAX_LIMIT + 100)
    const page = pageText({ text, offset: 0, limit })
    expect(codePointLength(page.text)).toBe(expected)
    expect(page.next_offset).toBe(expected)
  })

  it('treats a negative or fractional offset as its floor, at least 0', () => {
    expect(pageText({ text: 'abcdef', offset: -3, limit: 2 })).toMatchObject({ text: 'ab', offset: 0 })
    expect(pageText({ text: 'abcdef', offset: 2.7, limit: 2 })).toMatchObject({ text: 'cd', offset: 2 })
  })

  it.each([
    ['at the end', 3],
    ['past the end', 99],
  ])('gives an empty last page for an offset %s', (_label, offset) => {
    expect(pageText({ text: `a${EMOJI}c`, offset, limit: 10 })).toEqual({ text: '', offset, next_offset: null, total: 3 })
  })

  it('gives an explicit empty page for empty text', () => {
    expect(pageText({ text: '' })).toEqual({ text: '', offset: 0, next_offset: null, total: 0 })
  })

  it('never splits a surrogate pair when the page ends on one', () => {
    const text = `ab${EMOJI}cd`
    const first = pageText({ text, offset: 0, limit: 3 })
    expect(first.text).toBe(`ab${EMOJI}`)
    expect(hasLoneSurrogate(first.text)).toBe(false)
  })

  it('reproduces the text when all pages are concatenated, without lone surrogates', () => {
    fc.assert(
      fc.property(mixedText, fc.integer({ min: 1, max: 50 }), (text, limit) => {
        const pages = allPages(text, limit)
        expect(pages.join('')).toBe(text)
        for (const page of pages) expect(hasLoneSurrogate(page)).toBe(false)
        expect(pages.slice(0, -1).every((page) => codePointLength(page) === limit)).toBe(true)
      }),
    )
  })

  it('matches a reference slice of code points at any offset', () => {
    fc.assert(
      fc.property(mixedText, fc.nat({ max: 500 }), fc.integer({ min: 1, max: 6000 }), (text, offset, limit) => {
        const reference = codePoints(text)
        const page = pageText({ text, offset, limit })
        const end = Math.min(reference.length, offset + limit)
        expect(page.text).toBe(reference.slice(offset, end).join(''))
        expect(page.total).toBe(reference.length)
        expect(page.next_offset).toBe(end < reference.length ? end : null)
      }),
    )
  })

  it('pages a long astral text correctly at any offset, including across index checkpoints', () => {
    const text = longAstralText(100_000)
    const reference = codePoints(text)
    fc.assert(
      fc.property(fc.nat({ max: 100_050 }), fc.integer({ min: 1, max: 6000 }), (offset, limit) => {
        const page = pageText({ text, offset, limit })
        expect(page.text).toBe(reference.slice(offset, offset + limit).join(''))
      }),
      { numRuns: 200 },
    )
  })

  // Regression guard for the per-text memo: two long texts of equal length must not share an index.
  it('does not reuse one long text’s index for another of the same length', () => {
    const astral = longAstralText(70_000)
    const plain = 'x'.repeat(astral.length)
    expect(pageText({ text: astral, offset: 69_990, limit: 5 }).text).toBe(codePoints(astral).slice(69_990, 69_995).join(''))
    expect(pageText({ text: plain, offset: 69_990, limit: 5 })).toMatchObject({ text: 'xxxxx', total: plain.length })
    expect(pageText({ text: astral, offset: 0, limit: 1 })).toMatchObject({ text: EMOJI, total: 70_000 })
  })

  // Each page costs O(checkpoint gap + limit) with the index, built once per text; a rescan from
  // the start on every page would read the text hundreds of times over.
  it('pages through a long astral text reading it only a few times over in all', () => {
    const text = longAstralText(300_000)
    let pages = 0
    const reads = countCodeUnitReads({ budget: 4 * text.length }, () => {
      let offset: number | null = 0
      while (offset !== null) {
        const page = pageText({ text, offset, limit: PAGE_MAX_LIMIT })
        offset = page.next_offset
        pages++
      }
    })
    expect(pages).toBe(Math.ceil(300_000 / PAGE_MAX_LIMIT))
    expect(reads).toBeGreaterThan(0) // the meter sees the index being built
  })
})

describe('sliceCodePoints', () => {
  it('clamps bounds and returns empty for an inverted range', () => {
    expect(sliceCodePoints({ text: `a${EMOJI}c`, start: 1, end: 2 })).toBe(EMOJI)
    expect(sliceCodePoints({ text: `a${EMOJI}c`, start: 1 })).toBe(`${EMOJI}c`)
    expect(sliceCodePoints({ text: 'abc', start: 2, end: 1 })).toBe('')
    expect(sliceCodePoints({ text: 'abc', start: -4, end: 99 })).toBe('abc')
  })
})

describe('findAll', () => {
  it('finds case-insensitive matches and reports code-point offsets', () => {
    const text = `${EMOJI} Compile the wiki. ${EMOJI}${EMOJI} COMPILE again, compile!`
    const offsets = findAll({ text, query: 'compile' })
    const reference = codePoints(text)
    expect(offsets).toEqual([2, 23, 38])
    for (const offset of offsets) expect(reference.slice(offset, offset + 7).join('').toLowerCase()).toBe('compile')
  })

  it('finds CJK text', () => {
    expect(findAll({ text: '知识工作区与知识编译', query: '知识' })).toEqual([0, 6])
  })

  it('treats regular-expression characters literally', () => {
    expect(findAll({ text: 'a.b a-b (x) [y] a*b a.b', query: 'a.b' })).toEqual([0, 20])
    expect(findAll({ text: 'a.b a-b (x) [y] a*b', query: '(x)' })).toEqual([8])
    expect(findAll({ text: 'a.b a-b (x) [y] a*b', query: 'a-b' })).toEqual([4])
    expect(findAll({ text: 'path\\to\\file', query: '\\to' })).toEqual([4])
  })

  it('reports non-overlapping matches left to right', () => {
    expect(findAll({ text: 'aaaa', query: 'aa' })).toEqual([0, 2])
  })

  it('returns nothing for an empty query or a zero limit, and caps at the limit', () => {
    expect(findAll({ text: 'abc', query: '' })).toEqual([])
    expect(findAll({ text: 'abcabc', query: 'a', limit: 0 })).toEqual([])
    expect(findAll({ text: 'a a a a', query: 'A', limit: 2 })).toEqual([0, 2])
  })

  it('agrees with a naive code-point scan', () => {
    const alphabet = ['a', 'A', 'b', EMOJI, '中']
    const word = fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(''))
    const body = fc.array(fc.constantFrom(...alphabet), { maxLength: 120 }).map((xs) => xs.join(''))
    fc.assert(
      fc.property(body, word, (text, query) => {
        const haystack = codePoints(text).map((c) => c.toLowerCase())
        const needle = codePoints(query).map((c) => c.toLowerCase())
        const expected: number[] = []
        for (let i = 0; i + needle.length <= haystack.length; ) {
          if (needle.every((c, j) => haystack[i + j] === c)) {
            expected.push(i)
            i += needle.length
          } else i++
        }
        expect(findAll({ text, query })).toEqual(expected)
      }),
    )
  })

  // Matches arrive in order, so converting their offsets is one forward walk over the text,
  // not a walk from the start for each of the 50,000 matches.
  it('converts the offsets of many matches in a long astral text in one pass', () => {
    const text = longAstralText(300_000)
    let offsets: number[] = []
    const reads = countCodeUnitReads({ budget: 2 * text.length }, () => {
      offsets = findAll({ text, query: '中' })
    })
    expect(offsets).toHaveLength(codePoints(text).filter((c) => c === '中').length)
    expect(sliceCodePoints({ text, start: offsets.at(-1) ?? 0, end: (offsets.at(-1) ?? 0) + 1 })).toBe('中')
    expect(reads).toBeGreaterThan(0) // the meter sees the walk
  })
})

describe('snippetAround', () => {
  it('takes radius code points either side of the match', () => {
    const text = `0123456789${EMOJI}match${EMOJI}0123456789`
    expect(snippetAround({ text, offset: 11, radius: 2, length: 5 })).toBe(`9${EMOJI}match${EMOJI}0`)
  })

  it('clamps at both ends of the text', () => {
    expect(snippetAround({ text: 'abcdef', offset: 1, radius: 10 })).toBe('abcdef')
    expect(snippetAround({ text: 'abcdef', offset: 99, radius: 2 })).toBe('')
  })

  it('never splits a code point, whatever the offset and radius', () => {
    fc.assert(
      fc.property(mixedText, fc.nat({ max: 500 }), fc.nat({ max: 50 }), (text, offset, radius) => {
        const snippet = snippetAround({ text, offset, radius })
        if (!hasLoneSurrogate(text)) expect(hasLoneSurrogate(snippet)).toBe(false)
        const reference = codePoints(text)
        expect(snippet).toBe(reference.slice(Math.max(0, offset - radius), offset + radius).join(''))
      }),
    )
  })
})
