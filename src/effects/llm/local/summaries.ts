// Extractive summaries: the same passages and terms as the answers, for the compile pipeline
// (per-file summaries, a directory's .overview.md and .abstract.md), the compaction summariser and
// the answerer's "what is this document about". Deterministic; only whole sentences from the
// source (a first sentence longer than the whole budget is the one thing cut, with "…", never
// inside a kb:// URI).
import { splitBlocks, type Block, type Page, type Sentence } from './blocks.ts'
import { isEvidence, quoteFor, type Passage, type Quote } from './passages.ts'
import type { ReadDocument } from './ranking.ts'
import { describeDataFile } from './data-summary.ts'
import { containsCjk, matchTerms } from './terms.ts'

/** Sentences this short ("**One command, no setup.**") say too little to stand in a summary. */
const MIN_SENTENCE_CHARS = 25

interface Unit {
  readonly start: number
  readonly text: string
  readonly terms: ReadonlySet<string>
  /** Position in the document (0 = first). */
  readonly position: number
}

function pageOf(text: string): Page {
  return { text: text.replace(/\r\n?/gu, '\n'), offset: 0, atStart: true, atEnd: true, name: '' }
}

/** A paragraph wholly in italics or of `Key: value` fields ("*Status: closed. Severity: medium.*"). */
const METADATA = /^[*_][^*_].*[*_]$/u

/** A bold line standing as a heading ("**Symptom: "unknown model id".**"). */
const BOLD_LINE = /^(\*\*|__)[^*_]+\1[.:]?$/u

/**
 * Whether a sentence says something on its own: not a bold pseudo-heading, not one that announces
 * what follows (a trailing colon), not a list item's continuation of the sentence above it
 * ("- at most **24 tool calls** in total;").
 */
function standsAlone(sentence: Sentence, block: Block): boolean {
  const text = sentence.text.trim()
  if (BOLD_LINE.test(text) || /[:：]$/u.test(text)) return false
  return !(block.kind === 'item' && /^[\p{Ll}]/u.test(text))
}

function unitsOf(blocks: ReadonlyArray<Block>, { short = false }: { short?: boolean } = {}): Unit[] {
  const prose = blocks.filter((b) => isEvidence(b) && (b.kind === 'paragraph' || b.kind === 'item') && (short || !METADATA.test(b.text.trim())))
  const source = prose.length > 0 ? prose : blocks.filter(isEvidence)
  const sentences: Sentence[] = source.flatMap((block) => (short ? block.sentences : block.sentences.filter((s) => standsAlone(s, block))))
  const long = short ? sentences : sentences.filter((s) => s.text.length >= MIN_SENTENCE_CHARS || containsCjk(s.text))
  return (long.length > 0 ? long : sentences).map((s, position) => ({
    start: s.start,
    text: s.text,
    terms: new Set(matchTerms(s.text)),
    position,
  }))
}

/**
 * Luhn-style centrality: the sentence's distinct terms weighted by how many other sentences
 * share them, plus the title and headings' terms, over the square root of its length in terms.
 */
function centrality(units: ReadonlyArray<Unit>, emphasis: ReadonlySet<string>): Map<Unit, number> {
  const frequency = new Map<string, number>()
  for (const unit of units) for (const term of unit.terms) frequency.set(term, (frequency.get(term) ?? 0) + 1)
  return new Map(
    units.map((unit) => {
      if (unit.terms.size === 0) return [unit, 0]
      let weight = 0
      for (const term of unit.terms) weight += Math.max(0, (frequency.get(term) ?? 0) - 1) + (emphasis.has(term) ? 2 : 0)
      return [unit, weight / Math.sqrt(unit.terms.size)]
    }),
  )
}

/** The lead sentence first, then the most central ones that fit, in document order. */
function pickWithinBudget(units: ReadonlyArray<Unit>, emphasis: ReadonlySet<string>, budget: number): Unit[] {
  const [lead] = units
  if (lead === undefined) return []
  const scores = centrality(units, emphasis)
  const chosen = new Set<Unit>([lead])
  let used = lead.text.length
  const ranked = units.slice(1).sort((a, b) => scores.get(b)! - scores.get(a)! || a.position - b.position)
  for (const unit of ranked) {
    if (scores.get(unit)! <= 0) break
    if (used + 1 + unit.text.length > budget) continue
    chosen.add(unit)
    used += 1 + unit.text.length
  }
  return units.filter((unit) => chosen.has(unit))
}

function joinSentences(texts: ReadonlyArray<string>): string {
  return texts.reduce((joined, text) => (joined === '' ? text : /[。！？]$/u.test(joined) ? joined + text : `${joined} ${text}`), '')
}

/** Cuts at a word boundary with "…", never inside a kb:// URI. */
export function cutText(text: string, maxChars: number): string {
  const chars = Array.from(text)
  if (chars.length <= maxChars) return text
  let cut = chars.slice(0, Math.max(0, maxChars - 1)).join('')
  const uri = cut.lastIndexOf('kb://')
  if (uri >= 0 && !/\s/u.test(cut.slice(uri))) cut = cut.slice(0, uri)
  else if (!containsCjk(cut.slice(-1))) {
    const space = cut.search(/\s\S*$/u)
    if (space > cut.length / 2) cut = cut.slice(0, space)
  }
  return `${cut.trimEnd()}…`
}

/**
 * A per-file summary: the document's first sentence and its most central sentences, in order,
 * within `maxChars` code points. The title (and the headings) make their terms count more.
 */
export function summariseDocument({ title, text, maxChars }: { readonly title: string; readonly text: string; readonly maxChars: number }): string {
  const budget = Math.max(1, Math.floor(maxChars))
  const data = describeDataFile({ title, text })
  if (data !== undefined) return cutText(data, budget)
  const blocks = splitBlocks(pageOf(text))
  const whole = joinSentences(unitsOf(blocks, { short: true }).map((unit) => unit.text))
  if (Array.from(whole).length <= budget) return whole
  const units = unitsOf(blocks)
  if (units.length === 0) return ''
  const emphasis = new Set(matchTerms([title, ...new Set(blocks.flatMap((b) => b.headings))].join('\n')))
  if (Array.from(units[0]!.text).length >= budget) return cutText(units[0]!.text, budget)
  return joinSentences(pickWithinBudget(units, emphasis, budget).map((unit) => unit.text))
}

/** The gist of one page read from a file: its first whole sentences (a sentence cut by the page boundary is skipped). */
export function summarisePage({ page, maxChars }: { readonly page: Page; readonly maxChars: number }): string {
  const units = unitsOf(splitBlocks(page), { short: true })
  const chosen: string[] = []
  let used = 0
  for (const unit of units) {
    if (used + unit.text.length + 1 > maxChars) break
    chosen.push(unit.text)
    used += unit.text.length + 1
  }
  return chosen.length === 0 && units[0] !== undefined ? cutText(units[0].text, maxChars) : joinSentences(chosen)
}

export interface SummarisedDocument {
  /** The file's name (or URI) as it should appear in the overview. */
  readonly name: string
  /** Its per-file summary (from `summariseDocument`, or written by a model). */
  readonly summary: string
}

/**
 * A directory overview (.overview.md): one line per document, `- name: gist`, the gist being the
 * summary's most central sentences within an equal share of `maxChars`; documents that no longer
 * fit are counted in a last line.
 */
export function summariseOverview({
  title,
  documents,
  maxChars,
  maxCharsPerDocument,
}: {
  readonly title: string
  readonly documents: ReadonlyArray<SummarisedDocument>
  readonly maxChars: number
  /** A cap on each gist, so that a few documents do not make a long overview. */
  readonly maxCharsPerDocument?: number | undefined
}): string {
  const lines: string[] = []
  let used = 0
  const share = Math.floor(maxChars / Math.max(1, documents.length))
  for (const [index, document] of documents.entries()) {
    const prefix = `- ${document.name}: `
    const gistChars = Math.min(maxCharsPerDocument ?? Infinity, Math.max(60, share - prefix.length))
    const gist = summariseDocument({ title: `${title} ${document.name}`, text: document.summary, maxChars: gistChars })
    const line = `${prefix}${gist === '' ? '(no text)' : gist}`
    const more = documents.length - index - 1
    const reserve = more > 0 ? 24 : 0
    if (used + line.length + 1 + reserve > maxChars && lines.length > 0) {
      lines.push(`- … and ${documents.length - index} more`)
      break
    }
    lines.push(line)
    used += line.length + 1
  }
  return lines.join('\n')
}

/**
 * A directory abstract (.abstract.md): each document's first sentence (the one that says what it
 * is), the most recurring first when not all fit, then the sentences whose terms recur across
 * the most documents, within `maxChars`, in the documents' order.
 */
export function summariseAbstract({
  title,
  documents,
  maxChars,
}: {
  readonly title: string
  readonly documents: ReadonlyArray<SummarisedDocument>
  readonly maxChars: number
}): string {
  const emphasis = new Set(matchTerms(title))
  const perDocument = documents.map((document) => unitsOf(splitBlocks(pageOf(document.summary))))
  const documentFrequency = new Map<string, number>()
  for (const units of perDocument) {
    for (const term of new Set(units.flatMap((unit) => [...unit.terms]))) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1)
  }
  const scored = perDocument.flatMap((units, documentIndex) =>
    units.map((unit) => {
      let weight = 0
      for (const term of unit.terms) weight += Math.max(0, (documentFrequency.get(term) ?? 0) - 1) + (emphasis.has(term) ? 2 : 0)
      return { unit, documentIndex, score: unit.terms.size === 0 ? 0 : weight / Math.sqrt(unit.terms.size) }
    }),
  )
  // Each document's first sentence says what it is; it comes first, then the recurring ones.
  const best = new Map<number, (typeof scored)[number]>()
  for (const entry of scored) if (!best.has(entry.documentIndex)) best.set(entry.documentIndex, entry)
  const rounds = [...best.values(), ...scored.filter((entry) => best.get(entry.documentIndex) !== entry)]
  const ordered = [...rounds.slice(0, best.size).sort((a, b) => b.score - a.score || a.documentIndex - b.documentIndex), ...rounds.slice(best.size).sort((a, b) => b.score - a.score || a.documentIndex - b.documentIndex || a.unit.position - b.unit.position)]
  const chosen: typeof scored = []
  let used = 0
  for (const entry of ordered) {
    if (used + entry.unit.text.length + 1 > maxChars) continue
    chosen.push(entry)
    used += entry.unit.text.length + 1
  }
  if (chosen.length === 0 && ordered[0] !== undefined) return cutText(ordered[0].unit.text, maxChars)
  chosen.sort((a, b) => a.documentIndex - b.documentIndex || a.unit.position - b.unit.position)
  return joinSentences(chosen.map((entry) => entry.unit.text))
}

const SUMMARY_HEADING = /\b(summary|abstract|overview|introduction|tl;?dr)\b|摘要|概述|简介|总结|概要/iu

/** The passage a summary starts with: the first under a "Summary" heading, else the first. */
function leadPassage(document: ReadDocument, passages: ReadonlyArray<Passage>): number {
  const summary = passages.findIndex((p) => SUMMARY_HEADING.test(document.blocks[p.block]!.headings.at(-1) ?? ''))
  return Math.max(0, summary)
}

/**
 * The passages that sum a read document up, as quotes: its first passage and the most central
 * others, at most `maxQuotes`, within `maxChars`, in document order.
 */
export function keyPassages({
  document,
  maxChars,
  maxQuotes,
}: {
  readonly document: ReadDocument
  readonly maxChars: number
  readonly maxQuotes: number
}): Quote[] {
  const evidence = document.passages.filter((p) => isEvidence(document.blocks[p.block]!))
  const prose = evidence.filter((p) => !METADATA.test(p.text))
  const passages = prose.length > 0 ? prose : evidence
  const units: Unit[] = passages.map((p, position) => ({ start: p.start, text: p.text, terms: new Set(matchTerms(p.text)), position }))
  const emphasis = new Set(matchTerms([document.page.name, ...new Set(document.blocks.flatMap((b) => b.headings))].join('\n')))
  const scores = centrality(units, emphasis)
  const lead = units[leadPassage(document, passages)]
  const order = [lead, ...units.filter((u) => u !== lead).sort((a, b) => scores.get(b)! - scores.get(a)! || a.position - b.position)]
  const quotes: Quote[] = []
  let used = 0
  for (const unit of order) {
    if (unit === undefined || quotes.length >= maxQuotes) break
    const quote = quoteFor({ page: document.page, blocks: document.blocks, passage: passages[unit.position]! })
    const length = quote.lines.join(' ').length
    if (quotes.some((q) => q.start < quote.end && quote.start < q.end)) continue
    if (used + length > maxChars && quotes.length > 0) continue
    quotes.push(quote)
    used += length
  }
  return quotes.sort((a, b) => a.start - b.start)
}
