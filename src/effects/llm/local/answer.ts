// The local model's answers: quotes of whole passages from what it read in this turn, the best
// document first, each with its URI and offset — or, when no passage answers the question, a
// plain "nothing in <scope> covers it" that lists what was searched and cites nothing.
import { codePointLength, collapse, delimitedHeaderOf, isDelimitedName, type HeaderRow, type Page } from './blocks.ts'
import { findFileReferences } from './candidates.ts'
import { isEvidence, quoteFor, type Quote } from './passages.ts'
import type { Phrases, SearchCoverage } from './phrases.ts'
import { fileNameOf, judgeRelevance, keywordWeights, rankPassages, readDocument, type ReadDocument } from './ranking.ts'
import { keyPassages } from './summaries.ts'
import { answerCue, keywordTermsMatch, type QuestionTerms } from './terms.ts'

const MAX_QUOTES = 4
const MAX_QUOTES_PER_DOCUMENT = 2
const MAX_QUOTED_CHARS = 1600
/** Passages scoring below this share of the best one are not quoted beside it. */
const MIN_SHARE_OF_BEST = 0.5
/** How far down the ranking the first relevant passage is looked for. */
const RELEVANCE_DEPTH = 8
const SUMMARY_CHARS = 900
const SUMMARY_QUOTES = 3
/** A passage naming a file read in this turn, and this short without the name, only points to it. */
const POINTER_MAX_CHARS = 160

export interface Answer {
  readonly thinking: string
  readonly text: string
  /** False when the answer says that nothing covers the question. */
  readonly answered: boolean
}

interface CitedQuote {
  readonly uri: string | undefined
  readonly quote: Quote
  /** Offsets are file offsets (false for quotes from messages, cited by URI only). */
  readonly withOffset: boolean
  /** A CSV or TSV row's header row, quoted (and cited at its own offset) above it. */
  readonly header?: HeaderRow | undefined
}

export function formatQuotes({ quotes, phrases }: { readonly quotes: ReadonlyArray<CitedQuote>; readonly phrases: Phrases }): string {
  return quotes
    .map(({ uri, quote, withOffset, header }) => {
      const source = uri === undefined ? phrases.providedMaterial : withOffset ? `${uri} ${phrases.offset(quote.start)}` : uri
      const headerLines = header?.lines ?? [header?.text ?? '']
      const above = header === undefined || uri === undefined ? '' : `${headerLines.map((line) => `> ${line}\n`).join('')}> — ${uri} ${phrases.offset(header.start)}\n>\n`
      return `${above}${quote.lines.map((line) => `> ${line}`).join('\n')}\n> — ${source}`
    })
    .join('\n\n')
}

/** Whether the question names the step a numbered item is ("What is step 3 of …": `step 3`). */
function asksForStep(terms: QuestionTerms, label: string | undefined): boolean {
  const texts = new Set(terms.keywords.map((k) => k.text))
  return label !== undefined && /^step \d+$/u.test(label) && label.split(' ').every((word) => texts.has(word))
}

/** Header rows longer than this are left out (a file of thousands of columns). */
const HEADER_MAX_CHARS = 700

/**
 * The header row to quote above a CSV or TSV row: from the document's own page when it starts the
 * file, else from another page of the same file read in this turn (each quote must be text read).
 */
function headerRowFor({ document, block, documents }: { document: ReadDocument; block: number; documents: ReadonlyArray<ReadDocument> }): HeaderRow | undefined {
  const row = document.blocks[block]
  if (row?.kind === 'row' && row.tableStart !== undefined) return markdownHeaderOf({ page: document.page, tableStart: row.tableStart })
  if (row?.kind !== 'row' || !isDelimitedName(document.page.name)) return undefined
  const first = document.page.offset === 0 ? document : documents.find((d) => d.uri === document.uri && d.page.offset === 0)
  const header = first === undefined ? undefined : delimitedHeaderOf(first.page)
  return header !== undefined && header.text.length <= HEADER_MAX_CHARS ? header : undefined
}

/**
 * A Markdown table's header and separator rows, quoted (at their own offset) above a row of the
 * table, so the row says what its cells are.
 */
function markdownHeaderOf({ page, tableStart }: { page: Page; tableStart: number }): HeaderRow | undefined {
  const chars = Array.from(page.text)
  const from = tableStart - page.offset
  if (from < 0) return undefined
  const lines = chars.slice(from).join('').split('\n', 2).map((line) => collapse(line))
  if (lines.length < 2 || !lines[1]!.startsWith('|')) return undefined
  const text = lines.join(' ')
  return text.length <= HEADER_MAX_CHARS ? { start: tableStart, end: tableStart + codePointLength(`${lines[0]}`), text, lines } : undefined
}

function nameShare({ document, question, weights }: { document: ReadDocument; question: QuestionTerms; weights: ReadonlyMap<string, number> }): number {
  const total = question.keywords.reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  const named = question.keywords.filter((k) => keywordTermsMatch(k, document.nameTerms)).reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  return total === 0 ? 0 : named / total
}

/**
 * The document the question is about as a whole: one whose file name holds every keyword
 * ("the March 2026 incident" → incident-2026-03-….md), or, when the question asks for key
 * points or a summary, the one whose name matches it best.
 */
function documentAsked({
  documents,
  question,
  weights,
}: {
  readonly documents: ReadonlyArray<ReadDocument>
  readonly question: QuestionTerms
  readonly weights: ReadonlyMap<string, number>
}): ReadDocument | undefined {
  const shares = documents.map((document) => ({ document, share: nameShare({ document, question, weights }) }))
  // A summary is named after its source: the source wins the tie.
  const best = shares.sort((a, b) => b.share - a.share || Number(a.document.layer !== undefined) - Number(b.document.layer !== undefined))[0]
  if (best === undefined || best.share === 0) return undefined
  if (question.wantsSummary) return best.document
  // "How often …", "When is …", "Who …" ask for a fact, even of a file named after every word of the question.
  const asksForFact = question.wantsFigure || question.answerType !== undefined || question.asksForMeasure
  return best.share > 0.999 && !asksForFact ? best.document : undefined
}

export function answerFromDocuments({
  question,
  terms,
  documents,
  coverage,
  phrases,
}: {
  readonly question: string
  readonly terms: QuestionTerms
  readonly documents: ReadonlyArray<ReadDocument>
  readonly coverage: SearchCoverage | undefined
  readonly phrases: Phrases
}): Answer {
  const weights = keywordWeights({ documents, keywords: terms.keywords })
  const note = coverage?.complete === false ? `\n\n${phrases.incompleteScan(coverage.filesScanned)}` : ''
  const asked = documentAsked({ documents, question: terms, weights })
  if (asked !== undefined) {
    const quotes = keyPassages({ document: asked, maxChars: SUMMARY_CHARS, maxQuotes: SUMMARY_QUOTES })
    if (quotes.length > 0) {
      const cited = quotes.map((quote) => ({ uri: asked.uri, quote, withOffset: true }))
      return {
        thinking: phrases.summarisingThinking,
        text: `${phrases.summaryOf(asked.uri)}\n\n${formatQuotes({ quotes: cited, phrases })}${note}\n\n${phrases.footer}`,
        answered: true,
      }
    }
  }
  const cue = answerCue(question)
  const ranked = withoutLayerRepeats({ ranked: rankPassages({ documents, keywords: terms.keywords, cue }), documents })
  // A passage that only points to a document read in this turn ("… is described in incident-….md")
  // gives way to that document's own passages.
  const readNames = new Set(documents.map((d) => fileNameOf(d.uri)))
  // A long passage that also names a file ("… that is an outage: follow outage-escalation.md") says more than where to look.
  const pointer = (text: string, uri: string) => {
    const references = findFileReferences(text).filter((ref) => readNames.has(fileNameOf(ref)) && fileNameOf(ref) !== fileNameOf(uri))
    return references.length > 0 && references.reduce((rest, ref) => rest.replace(ref, ''), text).length <= POINTER_MAX_CHARS
  }
  const judged = ranked
    .filter((entry) => !pointer(entry.passage.text, entry.document.uri))
    .slice(0, RELEVANCE_DEPTH * 2)
    .map((entry) => ({ ...entry, relevance: judgeRelevance({ ...entry, question: terms, weights }) }))
  const best = judged.slice(0, RELEVANCE_DEPTH).find((entry) => entry.relevance.relevant)
  if (best === undefined) {
    const read = [...new Set(documents.map((d) => fileNameOf(d.uri)))]
    return {
      thinking: `${phrases.nothingThinking}${judged[0] === undefined ? '' : ` (${judged[0].relevance.reason})`}`,
      text: phrases.nothingFound({ question, keywords: terms.keywords.map((k) => k.text), coverage, read }),
      answered: false,
    }
  }
  const chosen: Array<{ document: ReadDocument; quote: Quote; header: HeaderRow | undefined }> = []
  let chars = 0
  const answerNearBest = cue === undefined || cue.test(best.passage.text) ? undefined : passageNear({ document: best.document, passageIndex: best.passageIndex, cue })
  for (const entry of [best, ...(answerNearBest === undefined ? [] : [answerNearBest]), ...judged]) {
    if (chosen.length >= MAX_QUOTES) break
    if (entry !== best && entry !== answerNearBest && (entry.score < MIN_SHARE_OF_BEST * best.score || !entry.relevance.relevant)) continue
    if (chosen.filter((c) => c.document.uri === entry.document.uri).length >= MAX_QUOTES_PER_DOCUMENT) continue
    const quote = quoteFor({ page: entry.document.page, blocks: entry.document.blocks, passage: entry.passage, itemAlone: asksForStep(terms, entry.passage.label) })
    if (chosen.some((c) => c.document.uri === entry.document.uri && c.quote.start < quote.end && quote.start < c.quote.end)) continue
    if (chosen.some((c) => repeats(c.quote, quote))) continue // the same passage in two files (a copy, a summary) is quoted once
    // A whole table is quoted with its header row already.
    const headerRow = entry.passage.lastBlock === undefined ? headerRowFor({ document: entry.document, block: entry.passage.block, documents }) : undefined
    // A file's header row is quoted once, above its first row quoted.
    const header = chosen.some((c) => c.document.uri === entry.document.uri && c.header !== undefined && c.header.start === headerRow?.start) ? undefined : headerRow
    const length = quote.lines.join(' ').length + (header?.text.length ?? 0)
    if (chosen.length > 0 && chars + length > MAX_QUOTED_CHARS) continue
    chosen.push({ document: entry.document, quote, header })
    chars += length
  }
  // The best document first, and within a document the best passage first.
  const documentOrder = [...new Set(chosen.map((c) => c.document.uri))]
  const quotes = chosen
    .map((c, rank) => ({ ...c, rank }))
    .sort((a, b) => documentOrder.indexOf(a.document.uri) - documentOrder.indexOf(b.document.uri) || a.rank - b.rank)
    .map((c) => ({ uri: c.document.uri, quote: c.quote, withOffset: true, header: c.header }))
  return {
    thinking: phrases.answeringThinking,
    text: `${phrases.intro(question)}\n\n${formatQuotes({ quotes, phrases })}${note}\n\n${phrases.footer}`,
    answered: true,
  }
}

/** Text compared for repeats: letters and digits, lower case, single spaces. */
const comparable = (text: string): string => text.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()
/** Sentences shorter than this (compared) are too common to call a repeat. */
const REPEAT_MIN_CHARS = 24

function repeats(a: Quote, b: Quote): boolean {
  const [x, y] = [comparable(a.lines.join(' ')), comparable(b.lines.join(' '))]
  return x.includes(y) || y.includes(x)
}

/**
 * Passages of compiled pages (summaries, overviews, abstracts) that repeat a sentence of a source
 * read in this turn are left out: an extractive summary quotes its source, and the source is what
 * is cited — the same passage is never quoted twice, through the file and through its summary.
 */
export function withoutLayerRepeats<T extends { readonly document: ReadDocument; readonly passage: { readonly sentences: ReadonlyArray<{ readonly text: string }> } }>({
  ranked,
  documents,
}: {
  readonly ranked: ReadonlyArray<T>
  readonly documents: ReadonlyArray<ReadDocument>
}): T[] {
  const sources = documents.filter((document) => document.layer === undefined).map((document) => comparable(document.page.text))
  if (sources.length === 0) return [...ranked]
  const inSource = (sentence: string) => {
    const text = comparable(sentence)
    return text.length >= REPEAT_MIN_CHARS && sources.some((source) => source.includes(text))
  }
  return ranked.filter((entry) => entry.document.layer === undefined || !entry.passage.sentences.some((sentence) => inSource(sentence.text)))
}

/**
 * The passage right after the best one, in the same section, that looks like the answer asked for
 * ("Decision: … never substitutes another model." is followed by "Why: a user who chose a model…").
 */
function passageNear({ document, passageIndex, cue }: { document: ReadDocument; passageIndex: number; cue: RegExp }) {
  const section = document.blocks[document.passages[passageIndex]!.block]!.headings.join('\n')
  for (const [index, passage] of document.passages.entries()) {
    if (index <= passageIndex || index > passageIndex + 2) continue
    const block = document.blocks[passage.block]!
    if (block.headings.join('\n') !== section) break
    if (isEvidence(block) && cue.test(passage.text)) return { document, passage, passageIndex: index, score: 0, relevance: { relevant: true, coverage: 0, reason: 'the answer next to the best passage' } }
  }
  return undefined
}

/** No keywords to rank by ("What is this?"): the key passages of each document read. */
export function summariseDocuments({ documents, phrases }: { readonly documents: ReadonlyArray<ReadDocument>; readonly phrases: Phrases }): Answer {
  const parts = documents.map((document) => {
    const quotes = keyPassages({ document, maxChars: 600, maxQuotes: 2 })
    return quotes.length === 0
      ? `${phrases.emptyFile}\n> — ${document.uri}`
      : formatQuotes({ quotes: quotes.map((quote) => ({ uri: document.uri, quote, withOffset: true })), phrases })
  })
  return { thinking: phrases.answeringThinking, text: `${phrases.summaryIntro}\n\n${parts.join('\n\n')}\n\n${phrases.footer}`, answered: true }
}

// ---------------------------------------------------------------------------------------------
// Text-only use: the material in the messages

const HOST_PAGE = /First page of (kb:\/\/\S+) \(code points (\d+)–\d+ of \d+\):\n"""\n([\s\S]*?)\n"""/u
const KB_URI = /kb:\/\/[^\s"'<>()[\]{}`，。；、！？：]+/u

/** The messages' material as documents: a host-provided first page keeps its file and offsets. */
export function materialDocuments(contents: ReadonlyArray<string>): Array<{ document: ReadDocument; withOffset: boolean }> {
  return contents.map((content) => {
    const page = HOST_PAGE.exec(content)
    if (page !== null) {
      const uri = page[1]!
      return {
        document: readDocument({ uri, page: { text: page[3]!, offset: Number(page[2]), atStart: Number(page[2]) === 0, atEnd: true, name: fileNameOf(uri) } }),
        withOffset: true,
      }
    }
    const uri = KB_URI.exec(content)?.[0]?.replace(/[.,;:!?]+$/u, '') ?? ''
    return { document: readDocument({ uri, page: { text: content, offset: 0, atStart: true, atEnd: true, name: '' } }), withOffset: false }
  })
}

export function answerFromMaterial({
  question,
  terms,
  contents,
  phrases,
}: {
  readonly question: string
  readonly terms: QuestionTerms
  readonly contents: ReadonlyArray<string>
  readonly phrases: Phrases
}): Answer {
  const material = materialDocuments(contents)
  const documents = material.map((m) => m.document)
  const weights = keywordWeights({ documents, keywords: terms.keywords })
  const ranked = rankPassages({ documents, keywords: terms.keywords })
  const relevant = ranked.filter((entry) => judgeRelevance({ ...entry, question: terms, weights }).relevant)
  const best = relevant[0]
  if (best === undefined) return { thinking: phrases.nothingThinking, text: phrases.nothingInMaterial(question), answered: false }
  const chosen = relevant.filter((entry) => entry.score >= MIN_SHARE_OF_BEST * best.score).slice(0, MAX_QUOTES)
  const quotes = chosen.map((entry) => ({
    uri: entry.document.uri === '' ? undefined : entry.document.uri,
    quote: quoteFor({ page: entry.document.page, blocks: entry.document.blocks, passage: entry.passage }),
    withOffset: material.find((m) => m.document === entry.document)!.withOffset,
  }))
  return { thinking: phrases.answeringThinking, text: `${phrases.intro(question)}\n\n${formatQuotes({ quotes, phrases })}\n\n${phrases.footer}`, answered: true }
}
