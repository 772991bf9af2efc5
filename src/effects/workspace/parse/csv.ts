// CSV is read as text (line endings normalised later, quoted newlines included): search and
// `read` work on the rows as written.
import { failure, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { decodeText } from './text-decoding.ts'

export const parseCsv = ({ bytes, mime }: FormatInput): ParseOutcome => {
  const decoded = decodeText(bytes, { allowNul: 'late' })
  return decoded.ok ? success(mime, 'csv', decoded.text) : failure(mime, decoded.code, decoded.error)
}

// ---------------------------------------------------------------------------------------------
// A CSV or TSV file's first rows as cells (the preview's table, the local model's header row and
// table description), with bounded work: a file of a million columns or one 50 MB line costs at
// most `maxChars` characters of parsing and `maxCountChars` of counting, then gives up.

export type Separator = ',' | '\t'

/** The separator a file's name calls for: `.csv` → comma, `.tsv` / `.tab` → tab. */
export function separatorOf(name: string): Separator | undefined {
  const extension = /\.([a-z]+)$/iu.exec(name.trim())?.[1]?.toLowerCase()
  return extension === 'csv' ? ',' : extension === 'tsv' || extension === 'tab' ? '\t' : undefined
}

export interface DelimitedTable {
  readonly header: ReadonlyArray<string>
  /** The first data rows (at most `maxRows`), each padded or cut to the header's width. */
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  /** Data rows in the whole text; undefined when counting them would have cost more than `maxCountChars`. */
  readonly totalRows: number | undefined
  /** Where the header row ends in the text (a UTF-16 index). */
  readonly headerEnd: number
}

export const TABLE_LIMITS = { maxRows: 200, maxColumns: 200, maxChars: 200_000, maxCountChars: 5_000_000 } as const

/**
 * RFC 4180 rows (a quoted field may hold the separator, doubled quotes and line breaks; blank
 * lines are skipped). Undefined — show the text instead — when it is no table: fewer than two
 * columns, more than `maxColumns`, a header row that does not end within `maxChars`, or a quote
 * that never closes.
 */
export function readDelimitedTable({
  text,
  separator,
  maxRows = TABLE_LIMITS.maxRows,
  maxColumns = TABLE_LIMITS.maxColumns,
  maxChars = TABLE_LIMITS.maxChars,
  maxCountChars = TABLE_LIMITS.maxCountChars,
}: {
  readonly text: string
  readonly separator: Separator
  readonly maxRows?: number
  readonly maxColumns?: number
  readonly maxChars?: number
  readonly maxCountChars?: number
}): DelimitedTable | undefined {
  const sep = separator.charCodeAt(0)
  const parseEnd = Math.min(text.length, maxChars)
  const rows: string[][] = []
  let headerEnd = -1
  /** Where the last complete row ends: the rows after it are counted, not parsed. */
  let lastRowEnd = 0
  let row: string[] = []
  let fieldStart = 0
  let field = ''
  let quoted = false
  let atFieldStart = true
  let i = 0
  const endField = (to: number) => {
    row.push(field + text.slice(fieldStart, to))
    field = ''
  }
  const endRow = (at: number) => {
    if (row.some((f) => f !== '')) {
      rows.push(row)
      if (headerEnd < 0) headerEnd = at
    }
    lastRowEnd = at
    row = []
  }
  for (; i < parseEnd && rows.length <= maxRows; i += 1) {
    const char = text.charCodeAt(i)
    if (quoted) {
      if (char !== QUOTE) continue
      if (text.charCodeAt(i + 1) === QUOTE) {
        field += text.slice(fieldStart, i + 1)
        i += 1
        fieldStart = i + 1
      } else {
        field += text.slice(fieldStart, i)
        fieldStart = i + 1
        quoted = false
      }
    } else if (char === QUOTE && atFieldStart) {
      quoted = true
      atFieldStart = false
      fieldStart = i + 1
    } else if (char === sep) {
      endField(i)
      if (row.length > maxColumns) return undefined
      fieldStart = i + 1
      atFieldStart = true
    } else if (char === LF || char === CR) {
      endField(i)
      if (row.length > maxColumns) return undefined
      if (char === CR && text.charCodeAt(i + 1) === LF) i += 1
      endRow(i + 1)
      fieldStart = i + 1
      atFieldStart = true
    } else atFieldStart = false
  }
  if (i >= text.length && rows.length <= maxRows) {
    lastRowEnd = text.length
    // The whole text was parsed: its last row needs no line break, but an open quote is malformed.
    if (quoted) return undefined
    endField(text.length)
    if (row.length > maxColumns) return undefined
    endRow(text.length)
  }
  const [header, ...data] = rows
  if (header === undefined || header.length < 2) return undefined
  const width = header.length
  const shown = data.slice(0, maxRows).map((cells) => (cells.length === width ? cells : Array.from({ length: width }, (_, c) => cells[c] ?? '')))
  const rest = countRows({ text, from: lastRowEnd, separator: sep, maxCountChars })
  return { header, rows: shown, totalRows: rest === undefined ? undefined : shown.length + rest, headerEnd }
}

const QUOTE = 34
const LF = 10
const CR = 13

/** Non-blank rows from `from` to the end, or undefined past `maxCountChars` characters of text. */
function countRows({ text, from, separator, maxCountChars }: { text: string; from: number; separator: number; maxCountChars: number }): number | undefined {
  if (text.length - from > maxCountChars) return undefined
  let count = 0
  let quoted = false
  let atFieldStart = true
  let content = false
  for (let i = from; i < text.length; i += 1) {
    const char = text.charCodeAt(i)
    if (quoted) {
      if (char === QUOTE) {
        if (text.charCodeAt(i + 1) === QUOTE) i += 1
        else quoted = false
      } else content = true
    } else if (char === QUOTE && atFieldStart) {
      quoted = true
      atFieldStart = false
    } else if (char === separator) atFieldStart = true
    else if (char === LF || char === CR) {
      if (content) count += 1
      content = false
      atFieldStart = true
    } else {
      content = true
      atFieldStart = false
    }
  }
  return content ? count + 1 : count
}
