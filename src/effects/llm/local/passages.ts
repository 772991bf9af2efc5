// Passages of a page's blocks — paragraphs, or windows of whole sentences in long ones; list
// items, rows and code lines — for ranking, and what is quoted for a passage (`quoteFor`): whole
// sentences, extended over what a sentence announces.
import { collapse, type Block, type Page, type Sentence } from './blocks.ts'

export interface Passage {
  /** Index of the passage's (first) block in the page's blocks. */
  readonly block: number
  readonly start: number
  readonly end: number
  readonly text: string
  readonly sentences: ReadonlyArray<Sentence>
  readonly context: string
  /** For a whole list under a heading: the index of its last item's block. */
  readonly lastBlock?: number | undefined
  /** Words the passage is also matched by: "step 3" for the item numbered 3 of a list, its heading for a whole list. */
  readonly label?: string | undefined
}

// ---------------------------------------------------------------------------------------------
// Passages

/** Long paragraphs are ranked in windows of whole sentences up to this length. */
const PASSAGE_MAX_CHARS = 450

export function passagesOf(blocks: ReadonlyArray<Block>): Passage[] {
  const passages: Passage[] = []
  blocks.forEach((block, index) => {
    if (block.kind === 'heading') return
    const context = [...block.headings, block.lead ?? ''].join(' \n ')
    let window: Sentence[] = []
    const flush = () => {
      if (window.length === 0) return
      passages.push({
        block: index,
        start: window[0]!.start,
        end: window.at(-1)!.end,
        text: window.map((s) => s.text).join(' '),
        sentences: window,
        context,
      })
      window = []
    }
    if (block.kind === 'item' && block.number !== undefined) {
      passages.push({ block: index, start: block.start, end: block.end, text: block.text, sentences: block.sentences, context, label: `step ${block.number}` })
      return
    }
    for (const sentence of block.sentences) {
      const length = window.reduce((sum, s) => sum + s.text.length + 1, 0)
      if (window.length > 0 && length + sentence.text.length > PASSAGE_MAX_CHARS) flush()
      window.push(sentence)
    }
    flush()
    // A table or a list under a heading, whole: the heading names what it is ("Action items") and counts as its own words.
    const last = tableUnderHeading(blocks, index) ?? listUnderHeading(blocks, index)
    if (last !== undefined) {
      const members = blocks.slice(index, last + 1)
      passages.push({
        block: index,
        lastBlock: last,
        start: block.start,
        end: members.at(-1)!.end,
        text: members.map((member) => member.text).join(' '),
        sentences: members.flatMap((member) => member.sentences),
        context,
        label: block.headings.at(-1),
      })
    }
  })
  return passages
}

/**
 * A list that a heading introduces ("## Action items", "Decisions", "Steps"), whole, is one more
 * passage beside its items, when it is short enough to quote: the index of its last item's block
 * when `index` is its first item, else undefined.
 */
function listUnderHeading(blocks: ReadonlyArray<Block>, index: number): number | undefined {
  const first = blocks[index]!
  if (first.kind !== 'item' || first.group === undefined || first.headings.length === 0) return undefined
  const previous = blocks[index - 1]
  if (previous !== undefined && previous.headings.join('\n') === first.headings.join('\n')) return undefined
  let last = index
  while (blocks[last + 1]?.kind === 'item' && blocks[last + 1]!.group === first.group) last += 1
  const length = blocks.slice(index, last + 1).reduce((sum, item) => sum + item.end - item.markerStart + 1, 0)
  return last > index && length <= QUOTE_MAX_CHARS && blocks.slice(index, last + 1).every((item) => !item.partial) ? last : undefined
}

/** A Markdown table under a heading, whole, short enough to quote: the index of its last row's block when `index` is its first row. */
function tableUnderHeading(blocks: ReadonlyArray<Block>, index: number): number | undefined {
  const first = blocks[index]!
  if (first.kind !== 'row' || first.tableStart === undefined || first.delimited || first.headings.length === 0) return undefined
  if (blocks[index - 1]?.kind === 'row' && blocks[index - 1]!.tableStart === first.tableStart) return undefined
  let last = index
  while (blocks[last + 1]?.kind === 'row' && blocks[last + 1]!.tableStart === first.tableStart) last += 1
  const length = blocks[last]!.end - first.tableStart
  return last > index && length <= TABLE_QUOTE_MAX_CHARS && blocks.slice(index, last + 1).every((row) => !row.partial) ? last : undefined
}

// ---------------------------------------------------------------------------------------------
// Quotes

export interface Quote {
  readonly start: number
  readonly end: number
  /** One line per block (a list item keeps its marker), whitespace collapsed within a line. */
  readonly lines: ReadonlyArray<string>
}

/** Quotes longer than this are not extended further. */
const QUOTE_MAX_CHARS = 700
/** A whole table (header, separator and rows) is a passage up to this length. */
const TABLE_QUOTE_MAX_CHARS = 1000
const ANNOUNCES = /[:：]$|\bto fix this\b|\bas follows\b|\bthe following\b|\bsymptom\b|如下|步骤/iu
const REFERS_BACK = /^(?:\*\*?)?(?:it|this|that|these|those|they|then|either|otherwise|however|so|therefore|instead|also|它|这|此|因此|否则)\b/iu

/** Whether a block may be quoted as evidence: not a heading, not a bare number or label. */
export function isEvidence(block: Block): boolean {
  if (block.kind === 'heading' || block.partial) return false
  const letters = block.text.match(/[\p{L}\p{N}]/gu)?.length ?? 0
  if (block.kind === 'row') return letters >= 6 && (block.delimited || /[|,\t]| {3,}/u.test(block.text))
  return letters >= 12 || (containsCjkText(block.text) && letters >= 6)
}

/**
 * The quote for a passage: whole sentences — the whole paragraph when it is short, else the
 * passage extended back over a sentence that refers back and forward over one that announces
 * what follows (a trailing colon, "to fix this:"), including the list or table it introduces.
 * Its lines are the file's text between `start` and `end`, whitespace collapsed per line.
 */
export function quoteFor({
  page,
  blocks,
  passage,
  itemAlone,
}: {
  readonly page: Page
  readonly blocks: ReadonlyArray<Block>
  readonly passage: Passage
  /** Quote a list item alone, with its number (the question asks for that step). */
  readonly itemAlone?: boolean | undefined
}): Quote {
  const text = pageSlicer(page)
  const block = blocks[passage.block]!
  if (block.kind === 'item' && itemAlone === true) return { start: block.markerStart, end: block.end, lines: [text(block.markerStart, block.end)] }
  if (block.kind === 'item' && block.group !== undefined) return listQuote({ text, blocks, index: passage.block })
  // A whole table: its header and separator rows with it, so it renders as one.
  if (block.kind === 'row' && passage.lastBlock !== undefined && block.tableStart !== undefined) {
    const end = blocks[passage.lastBlock]!.end
    return { start: block.tableStart, end, lines: pageLines(page)(block.tableStart, end) }
  }
  if (block.kind !== 'paragraph') return { start: block.start, end: block.end, lines: [text(block.start, block.end)] }
  let sentences: Sentence[]
  if (block.text.length <= PASSAGE_MAX_CHARS) sentences = [...block.sentences]
  else {
    const first = block.sentences.indexOf(passage.sentences[0]!)
    const last = block.sentences.indexOf(passage.sentences.at(-1)!)
    const from = first > 0 && REFERS_BACK.test(block.sentences[first]!.text) ? first - 1 : first
    const to = last + 1 < block.sentences.length && ANNOUNCES.test(block.sentences[last]!.text) ? last + 1 : last
    sentences = block.sentences.slice(from, to + 1)
  }
  const start = sentences[0]!.start
  const lines = [text(start, sentences.at(-1)!.end)]
  let end = sentences.at(-1)!.end
  const endsParagraph = sentences.at(-1) === block.sentences.at(-1)
  const following = blocks[passage.block + 1]
  if (endsParagraph && ANNOUNCES.test(sentences.at(-1)!.text) && following !== undefined) {
    const extension: Block[] = []
    let length = lines[0]!.length
    for (const next of blocks.slice(passage.block + 1)) {
      if (next.partial || next.kind === 'heading' || next.kind === 'paragraph' || next.kind !== following.kind || next.group !== following.group) break
      length += next.end - next.markerStart
      if (length > QUOTE_MAX_CHARS) break
      extension.push(next)
    }
    if (extension.length > 0) {
      end = extension.at(-1)!.end
      // A Markdown table keeps its header and separator rows (and a blank line before it), so it renders as one.
      if (following.tableStart !== undefined) lines.push('', ...pageLines(page)(following.tableStart, end))
      else lines.push(...extension.map((block) => text(block.markerStart, block.end)))
    }
  }
  return { start, end, lines }
}

/** A list item with its lead-in and the rest of its list when they are short, else the item alone. */
function listQuote({
  text,
  blocks,
  index,
}: {
  readonly text: (start: number, end: number) => string
  readonly blocks: ReadonlyArray<Block>
  readonly index: number
}): Quote {
  const item = blocks[index]!
  const members = blocks.map((b, i) => ({ b, i })).filter(({ b }) => b.group === item.group && b.kind === 'item')
  const leadBlock = blocks[members[0]!.i - 1]
  const lead = leadBlock?.kind === 'paragraph' && item.lead !== undefined ? leadBlock.sentences.at(-1) : undefined
  const lines = [...(lead === undefined ? [] : [text(lead.start, lead.end)]), ...members.map(({ b }) => text(b.markerStart, b.end))]
  if (lines.join(' ').length <= QUOTE_MAX_CHARS && members.every(({ b }) => !b.partial)) {
    return { start: lead?.start ?? members[0]!.b.markerStart, end: members.at(-1)!.b.end, lines }
  }
  return { start: item.start, end: item.end, lines: [text(item.start, item.end)] }
}

/** The page's lines between two file offsets, whitespace collapsed within each. */
function pageLines(page: Page): (start: number, end: number) => string[] {
  const chars = Array.from(page.text)
  return (start, end) =>
    chars
      .slice(start - page.offset, end - page.offset)
      .join('')
      .split('\n')
      .map(collapse)
      .filter((line) => line !== '')
}

const slicers = new WeakMap<Page, (start: number, end: number) => string>()

/** The page's text between two file offsets, whitespace collapsed. */
function pageSlicer(page: Page): (start: number, end: number) => string {
  let slicer = slicers.get(page)
  if (slicer === undefined) {
    const chars = Array.from(page.text)
    slicer = (start, end) => collapse(chars.slice(start - page.offset, end - page.offset).join(''))
    slicers.set(page, slicer)
  }
  return slicer
}

function containsCjkText(text: string): boolean {
  return /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(text)
}
