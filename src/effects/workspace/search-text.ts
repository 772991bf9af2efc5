// The text side of the workspace-wide search (PostgreSQL full-text search, `search-index.ts`).
// Pure. A body is cut into passages (code-point offsets, so a hit links to the passage the `read`
// tool would page to); each passage and each query are reduced to the same words, so PostgreSQL's
// parser sees nothing it could split differently:
// - letters, digits and marks form words; everything else is a space;
// - CJK runs (no spaces between words) become their overlapping bigrams — "上下文" → "上下 下文" —
//   so any two-character Chinese or Japanese word is found through the index. (pg_trgm cannot do it
//   here: under the C locale the embedded database uses, it ignores every non-ASCII character.)
// A query's words must all occur in a passage (AND): Latin words as prefixes (`stream` finds
// "streaming"), bigrams exactly.

export const PASSAGE_TARGET = 1000
const PASSAGE_MIN = 600
const PASSAGE_MAX = 1400
const MAX_QUERY_WORDS = 16
const MAX_WORD_CHARS = 100

const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu
const CJK_CHAR = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u
const NOT_WORD = /[^\p{L}\p{N}\p{M}]+/gu

const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

/** Code points in `text` (a lone surrogate counts as one). */
function codePoints(text: string): number {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    if (!(isLow(text.charCodeAt(i)) && i > 0 && isHigh(text.charCodeAt(i - 1)))) count++
  }
  return count
}

function bigrams(run: string): string {
  const chars = Array.from(run)
  if (chars.length < 2) return run
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) pairs.push(chars[i]! + chars[i + 1]!)
  return pairs.join(' ')
}

/** The words of `text` as the index stores them: separators as spaces, CJK runs as bigrams. */
export function searchableText(text: string): string {
  return text
    .normalize('NFC')
    .replace(NOT_WORD, ' ')
    .replace(CJK_RUN, (run) => ` ${bigrams(run)} `)
    .replace(/ {2,}/g, ' ')
    .trim()
}

export interface Passage {
  /** Code-point offset of the passage in the body. */
  readonly start: number
  /** Length in code points. */
  readonly length: number
  readonly text: string
}

/** Where to end a passage that starts at UTF-16 index `from`: a paragraph, a line, a sentence or a space near the target. */
function cutAfter(body: string, from: number): number {
  if (body.length - from <= PASSAGE_MAX) return body.length
  const window = body.slice(from + PASSAGE_MIN, from + PASSAGE_MAX)
  const best = (pattern: RegExp): number | undefined => {
    let found: number | undefined
    for (const match of window.matchAll(pattern)) {
      const end = match.index + match[0].length
      if (found === undefined || Math.abs(end + PASSAGE_MIN - PASSAGE_TARGET) < Math.abs(found + PASSAGE_MIN - PASSAGE_TARGET)) found = end
    }
    return found
  }
  const end = best(/\n\s*\n/g) ?? best(/\n/g) ?? best(/[.!?。！？]\s*/gu) ?? best(/\s+/g)
  let cut = from + PASSAGE_MIN + (end ?? PASSAGE_TARGET - PASSAGE_MIN)
  if (isLow(body.charCodeAt(cut)) && isHigh(body.charCodeAt(cut - 1))) cut++ // never inside a surrogate pair
  return cut
}

/** A body cut into passages of about a thousand code points, ending at natural breaks. */
export function passagesOf(body: string): Passage[] {
  const passages: Passage[] = []
  let from = 0
  let start = 0
  while (from < body.length) {
    const to = cutAfter(body, from)
    const text = body.slice(from, to)
    const length = codePoints(text)
    if (text.trim() !== '') passages.push({ start, length, text })
    start += length
    from = to
  }
  return passages
}

/** The words of a query, in order (at most 16, each at most 100 characters). */
export function queryWords(query: string): string[] {
  const words = searchableText(query.toLowerCase())
    .split(' ')
    .filter((word) => word !== '')
    .map((word) => Array.from(word).slice(0, MAX_WORD_CHARS).join(''))
  return [...new Set(words)].slice(0, MAX_QUERY_WORDS)
}

/**
 * The `to_tsquery('simple', …)` text of a query: every word required, Latin words (and a lone CJK
 * character) as prefixes, CJK bigrams exactly. Undefined when the query has no word (of at least
 * `minChars` code points). Words hold only letters, digits and marks, so quoting them is enough.
 */
export function tsQueryOf(query: string, { minChars = 1 }: { readonly minChars?: number } = {}): string | undefined {
  const words = queryWords(query).filter((word) => Array.from(word).length >= minChars)
  if (words.length === 0) return undefined
  return words
    .map((word) => {
      const cjk = CJK_CHAR.test(word)
      return cjk && Array.from(word).length === 2 ? `'${word}'` : `'${word}':*`
    })
    .join(' & ')
}

/** What a person would look for in a passage to show a hit: the query's words as typed (CJK runs whole). */
export function highlightTerms(query: string): string[] {
  const terms = query
    .normalize('NFC')
    .toLowerCase()
    .replace(NOT_WORD, ' ')
    .split(' ')
    .filter((term) => term !== '')
  return [...new Set(terms)].slice(0, MAX_QUERY_WORDS)
}
