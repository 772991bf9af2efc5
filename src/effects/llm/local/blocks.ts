// A page of text as blocks: paragraphs, list items, table and CSV rows, code lines — each with
// the headings above it — and their whole sentences, in code-point offsets of the file. Line
// breaks inside a paragraph are not sentence ends (hard-wrapped Markdown and PDF text); headings
// are context, never evidence; a table's separator row is nothing.

export type BlockKind = 'heading' | 'paragraph' | 'item' | 'row' | 'code'

export interface Sentence {
  /** File offset (code points) of the first character, and one past the last. */
  readonly start: number
  readonly end: number
  /** Whitespace collapsed to single spaces. */
  readonly text: string
}

export interface Block {
  readonly kind: BlockKind
  readonly start: number
  readonly end: number
  /** Where a list item's marker (`-`, `1.`) starts; else `start`. */
  readonly markerStart: number
  readonly text: string
  readonly sentences: ReadonlyArray<Sentence>
  /** The headings above the block, outermost first. */
  readonly headings: ReadonlyArray<string>
  /** For a list item, a table or CSV row: the list's lead-in sentence or the table's header row. */
  readonly lead: string | undefined
  /** Index of the list or table the block belongs to (consecutive items/rows share it). */
  readonly group: number | undefined
  /** Cut by the page boundary: the text before or after it on the page is missing. */
  readonly partial: boolean
  /** For a row of a Markdown table: where its header row starts. */
  readonly tableStart: number | undefined
  /** A row of a CSV or TSV file (its separators, tabs included, are known without being seen in `text`). */
  readonly delimited: boolean
  /** For an item of a numbered list (`3.`, `3)`): its number. */
  readonly number?: number | undefined
}

export interface Page {
  readonly text: string
  /** File offset of the page's first code point. */
  readonly offset: number
  /** The page starts at the start of the file / ends at its end. */
  readonly atStart: boolean
  readonly atEnd: boolean
  /** The file name: `.csv` and `.tsv` files are read row by row, under their header row. */
  readonly name: string
}

// ---------------------------------------------------------------------------------------------
// Lines

interface Line {
  readonly text: string
  /** Code-point offset in the file. */
  readonly start: number
  readonly end: number
}

function linesOf(page: Page): Line[] {
  const lines: Line[] = []
  let offset = page.offset
  for (const raw of page.text.split('\n')) {
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const length = codePointLength(text)
    lines.push({ text, start: offset, end: offset + length })
    offset += codePointLength(raw) + 1
  }
  return lines
}

const MD_HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/u
const SETEXT = /^ {0,3}(=+|-+)\s*$/u
const FENCE = /^ {0,3}(```|~~~)/u
const TABLE_ROW = /^\s*\|.*\|\s*$/u
const TABLE_SEPARATOR = /^\s*\|?(\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*\|?\s*$/u
const LIST_ITEM = /^(\s*)([-*+•]|\d{1,3}[.)])\s+(?=\S)/u
/** A line of a table flattened to text (columns separated by runs of spaces). */
const SPACED_COLUMNS = /\S {3,}\S/u
const SENTENCE_FINAL = /[.!?:;,。！？：；，]["'”’)\]*_`]*$/u
const SENTENCE_END = /[.!?:。！？：]["'”’)\]*_`]*$/u

function isBlank(line: Line | undefined): boolean {
  return line === undefined || line.text.trim() === ''
}

/** A short line without final punctuation standing alone above text (PDF and DOCX headings, glossary terms). */
function isPlainHeading(lines: ReadonlyArray<Line>, index: number): boolean {
  const text = lines[index]!.text.trim()
  if (text === '' || /^\s/u.test(lines[index]!.text) || codePointLength(text) > 70) return false
  if (SENTENCE_FINAL.test(text) || !/[\p{L}]/u.test(text) || /^\p{Ll}/u.test(text) || /[。！？]|[.!?]\s/u.test(text.replace(/^[\p{L}\p{N}]{0,3}\d{1,2}\.\s+/u, ''))) return false
  if (LIST_ITEM.test(text) && !/^\d{1,2}\.\s+\p{Lu}/u.test(text)) return false
  const previous = lines[index - 1]
  const previousEnds = isBlank(previous) || SENTENCE_END.test(previous!.text.trim()) || MD_HEADING.test(previous!.text)
  if (!previousEnds) return false
  // Followed by a new sentence on the next line, or by text after a blank line (a wrapped line goes on in lower case).
  const next = lines[index + 1]
  if (next !== undefined && !isBlank(next)) return /^\s*[\p{Lu}\p{N}\p{Script=Han}"“*_`(]/u.test(next.text)
  return lines[index + 2] !== undefined && !isBlank(lines[index + 2])
}

// ---------------------------------------------------------------------------------------------
// Blocks

export function splitBlocks(page: Page): Block[] {
  const lines = linesOf(page)
  const csv = isDelimitedName(page.name)
  const blocks: Block[] = []
  const headings: Array<{ level: number; text: string }> = []
  let group = 0
  let lastGroupKind: BlockKind | undefined
  let csvHeader: string | undefined
  let firstRow: string | undefined
  let inFence = false
  const setHeading = (level: number, text: string) => {
    while (headings.length > 0 && headings.at(-1)!.level >= level) headings.pop()
    headings.push({ level, text })
  }
  const push = (
    kind: BlockKind,
    blockLines: ReadonlyArray<Line>,
    options: { lead?: string | undefined; start?: number; tableStart?: number | undefined } = {},
  ) => {
    const first = blockLines[0]!
    const last = blockLines.at(-1)!
    const start = options.start ?? first.start + leadingSpace(first.text)
    const text = collapse(blockLines.map((line) => line.text).join('\n')).replace(/^\s*([-*+•]|\d{1,3}[.)])\s+/u, kind === 'item' ? '' : '$&')
    const grouped = kind === 'item' || kind === 'row'
    if (grouped && lastGroupKind !== kind) group += 1
    lastGroupKind = grouped ? kind : undefined
    const partial = (!page.atStart && first === lines[0]) || (!page.atEnd && last === lines.at(-1))
    const end = last.end - trailingSpace(last.text)
    blocks.push({
      kind,
      start,
      end,
      markerStart: first.start + leadingSpace(first.text),
      text,
      sentences: kind === 'paragraph' || kind === 'item' ? splitSentencesOf(blockLines, start) : [{ start, end, text }],
      headings: headings.map((h) => h.text),
      lead: options.lead,
      group: grouped ? group : undefined,
      partial,
      tableStart: options.tableStart,
      delimited: csv && kind === 'row',
      ...(kind === 'item' && /^\s*\d{1,3}[.)]/u.test(first.text) ? { number: Number(/\d+/u.exec(first.text)![0]) } : {}),
    })
  }
  let index = 0
  while (index < lines.length) {
    const line = lines[index]!
    const text = line.text
    if (FENCE.test(text)) {
      inFence = !inFence
      index += 1
      continue
    }
    if (inFence) {
      if (text.trim() !== '') push('code', [line])
      index += 1
      continue
    }
    if (text.trim() === '') {
      if (lastGroupKind === 'row') lastGroupKind = undefined
      index += 1
      continue
    }
    if (csv) {
      if (csvHeader === undefined && line.start === 0) {
        csvHeader = text.trim()
        setHeading(7, csvHeader)
      } else push('row', [line], { lead: csvHeader })
      index += 1
      continue
    }
    const heading = MD_HEADING.exec(text)
    if (heading !== null) {
      setHeading(heading[1]!.length, heading[2]!)
      lastGroupKind = undefined
      index += 1
      continue
    }
    if (SETEXT.test(lines[index + 1]?.text ?? '') && !LIST_ITEM.test(text) && !TABLE_ROW.test(text)) {
      setHeading(lines[index + 1]!.text.trim().startsWith('=') ? 1 : 2, text.trim())
      index += 2
      continue
    }
    if (/^( {4,}|\t)\S/u.test(text) && isBlank(lines[index - 1]) && lastGroupKind !== 'item') {
      // An indented block after a blank line: Markdown's code block (a formula, a command).
      while (index < lines.length && (/^( {4,}|\t)\S/u.test(lines[index]!.text) || (isBlank(lines[index]) && /^( {4,}|\t)\S/u.test(lines[index + 1]?.text ?? '')))) {
        if (!isBlank(lines[index])) push('code', [lines[index]!])
        index += 1
      }
      continue
    }
    if (TABLE_ROW.test(text)) {
      const header = tableHeader(lines, index)
      if (!TABLE_SEPARATOR.test(text) && text.trim() !== header.text) push('row', [line], { lead: header.text, tableStart: header.start })
      index += 1
      continue
    }
    if (isPlainHeading(lines, index)) {
      setHeading(7, text.trim())
      lastGroupKind = undefined
      index += 1
      continue
    }
    const item = LIST_ITEM.exec(text)
    if (item !== null) {
      const itemLines = [line]
      const indent = item[1]!.length
      index += 1
      while (index < lines.length && !isBlank(lines[index]) && !LIST_ITEM.test(lines[index]!.text) && !TABLE_ROW.test(lines[index]!.text) && !MD_HEADING.test(lines[index]!.text)) {
        if (leadingSpace(lines[index]!.text) <= indent && !/^\s/u.test(lines[index]!.text) && indent > 0) break
        itemLines.push(lines[index]!)
        index += 1
      }
      const lead = lastGroupKind === 'item' ? blocks.at(-1)?.lead : leadIn(blocks)
      push('item', itemLines, { lead, start: line.start + item[0].length })
      continue
    }
    if (SPACED_COLUMNS.test(text.trim())) {
      if (lastGroupKind !== 'row') firstRow = collapse(text)
      push('row', [line], { lead: firstRow === collapse(text) ? undefined : firstRow })
      index += 1
      continue
    }
    const paragraph = [line]
    index += 1
    while (index < lines.length) {
      const next = lines[index]!
      if (isBlank(next) || MD_HEADING.test(next.text) || TABLE_ROW.test(next.text) || FENCE.test(next.text)) break
      if (LIST_ITEM.test(next.text) && !/^\s/u.test(line.text)) break
      if (SETEXT.test(lines[index + 1]?.text ?? '') || isPlainHeading(lines, index)) break
      paragraph.push(next)
      index += 1
    }
    push('paragraph', paragraph)
    lastGroupKind = undefined
  }
  return blocks
}

const DELIMITED_NAME = /\.(csv|tsv|tab)$/iu

export function isDelimitedName(name: string): boolean {
  return DELIMITED_NAME.test(name)
}

export interface HeaderRow {
  /** File offsets (code points) of the header row, and its text, whitespace collapsed. */
  readonly start: number
  readonly end: number
  readonly text: string
  /** Its lines when it is more than one (a Markdown table's header and separator rows). */
  readonly lines?: ReadonlyArray<string> | undefined
}

/** A CSV or TSV page's header row: the file's first line, when the page starts the file and holds all of it. */
export function delimitedHeaderOf(page: Page): HeaderRow | undefined {
  if (!isDelimitedName(page.name) || page.offset !== 0) return undefined
  const lineEnd = page.text.indexOf('\n')
  if (lineEnd < 0 && !page.atEnd) return undefined
  const line = (lineEnd < 0 ? page.text : page.text.slice(0, lineEnd)).replace(/\r$/u, '')
  if (line.trim() === '') return undefined
  return { start: leadingSpace(line), end: codePointLength(line) - trailingSpace(line), text: collapse(line) }
}

function tableHeader(lines: ReadonlyArray<Line>, index: number): { text: string | undefined; start: number | undefined } {
  let first = index
  while (first > 0 && TABLE_ROW.test(lines[first - 1]!.text)) first -= 1
  const header = lines[first]!
  return TABLE_SEPARATOR.test(lines[first + 1]?.text ?? '')
    ? { text: header.text.trim(), start: header.start + leadingSpace(header.text) }
    : { text: undefined, start: undefined }
}

/** The sentence that introduces a list: the previous paragraph's last sentence, when it ends with a colon. */
function leadIn(blocks: ReadonlyArray<Block>): string | undefined {
  const previous = blocks.at(-1)
  const last = previous?.kind === 'paragraph' ? previous.sentences.at(-1) : undefined
  return last !== undefined && /[:：]$/u.test(last.text) ? last.text : undefined
}

// ---------------------------------------------------------------------------------------------
// Sentences

/** Abbreviations after which a full stop does not end a sentence. */
const ABBREVIATION = /(?:^|[\s(])(?:e\.g|i\.e|vs|cf|approx|incl|fig|dr|mr|mrs|ms)\.$/iu

const SENTENCE_MARK = /[。！？]["'”’)\]]*|[.!?]["'”’)\]*_`]*(?=\s|$)/gu

function splitSentencesOf(lines: ReadonlyArray<Line>, blockStart: number): Sentence[] {
  // The block's text (its line breaks are whitespace like any other), and the file offset of each UTF-16 index.
  const first = lines[0]!
  const skip = blockStart - first.start
  const raw = lines.map((line) => line.text).join('\n')
  const from = utf16Index(raw, skip)
  const text = raw.slice(from)
  const offsetAt = codePointOffsets(text, blockStart)
  const sentences: Sentence[] = []
  let sentenceStart = 0
  const close = (to: number) => {
    const slice = text.slice(sentenceStart, to)
    const lead = slice.length - slice.trimStart().length
    const body = slice.trim()
    if (body !== '') sentences.push({ start: offsetAt(sentenceStart + lead), end: offsetAt(sentenceStart + lead + body.length), text: collapse(body) })
    sentenceStart = to
  }
  for (const match of text.matchAll(SENTENCE_MARK)) {
    const end = match.index + match[0].length
    if (match[0].startsWith('.')) {
      const nextWord = /^\s*(\S)/u.exec(text.slice(end))?.[1]
      if (nextWord !== undefined && /[\p{Ll}\d]/u.test(nextWord)) continue
      if (ABBREVIATION.test(text.slice(Math.max(sentenceStart, match.index - 8), match.index + 1))) continue
    }
    close(end)
  }
  close(text.length)
  return sentences
}

/** UTF-16 index of the code point `count` code points into `text`. */
function utf16Index(text: string, count: number): number {
  if (!HAS_SURROGATE.test(text)) return count
  let index = 0
  for (let seen = 0; seen < count && index < text.length; seen += 1) index += (text.codePointAt(index) ?? 0) > 0xffff ? 2 : 1
  return index
}

/** Maps UTF-16 indices of `text` to file offsets in code points, `base` being the offset of index 0. */
function codePointOffsets(text: string, base: number): (index: number) => number {
  if (!HAS_SURROGATE.test(text)) return (index) => base + index
  const prefix = new Int32Array(text.length + 1)
  for (let i = 0; i < text.length; i += 1) {
    const low = i > 0 && text.charCodeAt(i) >= 0xdc00 && text.charCodeAt(i) <= 0xdfff && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff
    prefix[i + 1] = prefix[i]! + (low ? 0 : 1)
  }
  return (index) => base + prefix[index]!
}

// No `u` flag: with it a surrogate pair is one code point and would not match.
const HAS_SURROGATE = /[\uD800-\uDFFF]/

/** Sentences of any text (offsets from 0), for summaries of text without a file around it. */
export function splitSentences(text: string): Sentence[] {
  return splitBlocks({ text, offset: 0, atStart: true, atEnd: true, name: '' }).flatMap((block) => block.sentences)
}

// ---------------------------------------------------------------------------------------------

const CJK_OR_PUNCTUATION = '[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3000-\\u303f\\uff00-\\uffef]'
const BREAK_BETWEEN_CJK = new RegExp(`(?<=${CJK_OR_PUNCTUATION})\\s*\\n\\s*(?=${CJK_OR_PUNCTUATION})`, 'gu')

/** Whitespace runs to one space; a line break between two CJK characters is no space at all. */
export function collapse(text: string): string {
  return text.replace(BREAK_BETWEEN_CJK, '').replace(/\s+/gu, ' ').trim()
}

export function leadingSpace(text: string): number {
  return codePointLength(/^\s*/u.exec(text)![0])
}

function trailingSpace(text: string): number {
  return codePointLength(/\s*$/u.exec(text)![0])
}

export function codePointLength(text: string): number {
  if (!HAS_SURROGATE.test(text)) return text.length
  let count = 0
  for (const _ of text) count += 1
  return count
}
