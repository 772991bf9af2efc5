// Paging and searching parsed text by Unicode code points (SPEC §4 `read`/`search`).
// Offsets and lengths here are code points, never UTF-16 units, so a page or a snippet
// never starts or ends inside a surrogate pair. Pure; the memo below only saves work.

export const PAGE_DEFAULT_LIMIT = 3000
export const PAGE_MAX_LIMIT = 6000
export const SNIPPET_DEFAULT_RADIUS = 80

export interface TextPage {
  readonly text: string
  /** Code-point offset of the first character of `text`. */
  readonly offset: number
  /** Offset of the next page, or null when this page reaches the end. */
  readonly next_offset: number | null
  /** Length of the whole text in code points. */
  readonly total: number
}

/** Maps between code-point offsets and UTF-16 indices of one string. */
interface CodePointIndex {
  readonly total: number
  /** UTF-16 index where code point `offset` starts (`offset` within [0, total]). */
  readonly toUnit: (offset: number) => number
}

const SURROGATE = /[\uD800-\uDFFF]/
// Checkpoints every 1024 code points keep a lookup to ≤1024 steps without a per-character table.
const CHECKPOINT_EVERY = 1024
// Texts this long keep their index between calls (a `read` of page after page of one body).
const MEMO_MIN_UNITS = 1 << 16

const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

/** UTF-16 width of the code point starting at `i`: 2 for a valid pair, else 1 (a lone surrogate counts as one). */
const widthAt = (text: string, i: number): number =>
  isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1

const identityIndex = (length: number): CodePointIndex => ({ total: length, toUnit: (offset) => offset })

const buildIndex = (text: string): CodePointIndex => {
  if (!SURROGATE.test(text)) return identityIndex(text.length)
  const checkpoints: number[] = []
  let count = 0
  for (let i = 0; i < text.length; i += widthAt(text, i)) {
    if (count % CHECKPOINT_EVERY === 0) checkpoints.push(i)
    count++
  }
  const total = count
  return {
    total,
    toUnit: (offset) => {
      if (offset >= total) return text.length
      const block = Math.floor(offset / CHECKPOINT_EVERY)
      let unit = checkpoints[block] ?? 0
      for (let left = offset - block * CHECKPOINT_EVERY; left > 0; left--) unit += widthAt(text, unit)
      return unit
    },
  }
}

let memo: { readonly text: string; readonly index: CodePointIndex } | undefined

const indexOf = (text: string): CodePointIndex => {
  if (memo !== undefined && memo.text === text) return memo.index
  const index = buildIndex(text)
  if (text.length >= MEMO_MIN_UNITS) memo = { text, index }
  return index
}

const toWholeNumber = (value: number | undefined, fallback: number): number =>
  value === undefined || Number.isNaN(value)
    ? fallback
    : Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, Math.floor(value)))

/** Number of Unicode code points in `text` (a lone surrogate counts as one). */
export const codePointLength = (text: string): number => indexOf(text).total

/** Code points [start, end) of `text`; bounds are clamped to the text. */
export const sliceCodePoints = ({ text, start, end }: { text: string; start: number; end?: number }): string => {
  const index = indexOf(text)
  const from = Math.min(toWholeNumber(start, 0), index.total)
  const to = Math.min(toWholeNumber(end, index.total), index.total)
  return to <= from ? '' : text.slice(index.toUnit(from), index.toUnit(to))
}

/**
 * One page of `text`. `offset` and `limit` count code points; `limit` is clamped to
 * [1, 6000] (default 3000). An offset at or past the end gives an empty last page.
 */
export const pageText = ({ text, offset, limit }: { text: string; offset?: number; limit?: number }): TextPage => {
  const index = indexOf(text)
  const total = index.total
  const start = toWholeNumber(offset, 0)
  const size = Math.max(1, Math.min(PAGE_MAX_LIMIT, toWholeNumber(limit, PAGE_DEFAULT_LIMIT)))
  if (start >= total) return { text: '', offset: start, next_offset: null, total }
  const end = Math.min(total, start + size)
  return {
    text: text.slice(index.toUnit(start), index.toUnit(end)),
    offset: start,
    next_offset: end < total ? end : null,
    total,
  }
}

// Only syntax characters and '/' may be escaped in a `u`-flag pattern ('\-' is a SyntaxError there).
const escapeRegExp = (literal: string): string => literal.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')

/**
 * Code-point offsets where `query` occurs in `text`, case-insensitively (Unicode simple case
 * folding), left to right, non-overlapping. An empty query matches nothing. `limit` caps the
 * number of offsets returned.
 */
export const findAll = ({ text, query, limit }: { text: string; query: string; limit?: number }): number[] => {
  const max = toWholeNumber(limit, Number.MAX_SAFE_INTEGER)
  if (query === '' || max === 0) return []
  const pattern = new RegExp(escapeRegExp(query), 'giu')
  const surrogates = SURROGATE.test(text)
  const offsets: number[] = []
  // Matches arrive in increasing order, so one forward walk converts all of them.
  let unit = 0
  let codePoint = 0
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (surrogates) {
      while (unit < match.index) {
        unit += widthAt(text, unit)
        codePoint++
      }
      offsets.push(codePoint)
    } else {
      offsets.push(match.index)
    }
    if (offsets.length >= max) break
  }
  return offsets
}

/**
 * The text around code-point `offset`: `radius` code points before it, the `length` code
 * points of the match itself, and `radius` after, clamped to the text.
 */
export const snippetAround = ({
  text,
  offset,
  radius = SNIPPET_DEFAULT_RADIUS,
  length = 0,
}: {
  text: string
  offset: number
  radius?: number
  length?: number
}): string => {
  const at = toWholeNumber(offset, 0)
  const around = toWholeNumber(radius, SNIPPET_DEFAULT_RADIUS)
  return sliceCodePoints({
    text,
    start: Math.max(0, at - around),
    end: at + toWholeNumber(length, 0) + around,
  })
}
