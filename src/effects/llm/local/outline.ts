// What a document is and what in it a reader needs (issue 35): its subject (its title, with its
// date) and its key points, ranked — what sits under "Decisions", "Action items", "Risks" or
// "Exceptions" headings, lines labelled so, sentences and list items that carry amounts,
// percentages, dates and limits, table and CSV rows read with their header — and never the
// roster and form lines around them ("Present: …", "Date: …" alone, sign-offs). Extractive and
// deterministic: a point is the source's own sentence, list item or row; a huge file is read for
// its first MAX_OUTLINE_CHARS only.
import { readDelimitedTable, separatorOf } from '../../workspace/parse/csv.ts'
import { splitBlocks, type Block } from './blocks.ts'
import { describeJson } from './data-summary.ts'
import { isEvidence } from './passages.ts'
import { matchTerms } from './terms.ts'

/** Bounded work: only this much of a file is outlined (the summary step receives up to 400,000). */
export const MAX_OUTLINE_CHARS = 200_000
const MAX_CANDIDATES = 2_000
const MAX_POINT_CHARS = 300
const MAX_SUBJECT_CHARS = 120

export interface KeyPoint {
  readonly text: string
  /** The section it belongs to when that is a decisions/actions/risks/exceptions-like one ("Decisions", "Action items"). */
  readonly label: string | undefined
  readonly score: number
  /** Order in the document. */
  readonly position: number
}

export interface DocumentOutline {
  /** What the document is: its title (with its date when the title has none), else its first sentence. */
  readonly subject: string
  /** Its first sentence of prose, when that is not the subject itself (what the document says it is for). */
  readonly lead: string | undefined
  /** Most important first. */
  readonly points: ReadonlyArray<KeyPoint>
}

// ── lines that are a form's fields, a roster or a signature, not content ──────────────────────

const FIELD_LINE =
  /^(?:present|attendees?|attendance|in attendance|participants?|apologies|absent|regrets|guests?|minutes(?: by| taken by)?|note[- ]?takers?|scribe|facilitators?|facilitated by|chair(?:ed by)?|chairs?|date|time|when|where|location|venue|room|authors?|owners?|version|status|last (?:updated|modified|reviewed|revised)|updated|revised|effective(?: date| from)?|applies to|audience|prepared by|reviewed by|approved by|written by|cc|bcc|to|from|subject|distribution|classification|confidential(?:ity)?|page|document (?:id|number|owner))\s*[:：]/iu
const SIGN_OFF =
  /^(?:thanks|thank you|many thanks|regards|kind regards|best regards|warm regards|best|cheers|sincerely|yours(?: sincerely| faithfully| truly)?|signed)(?:[\s,.!]+(?:all|everyone|team|again))?[\s,.!]*$/iu
const SIGNATURE = /^(?:[—–]|--?)\s*\p{Lu}[\p{L}.'’ -]{0,40}$/u
/** "Date: …", "Effective: …", "Last updated: …": the document's date, for its subject. */
const DATE_FIELD = /^(date|effective(?: date| from)?|last updated|updated)\s*[:：]\s*(.*\d.*)$/iu

/** Sections whose items are people, contents or history, not points. */
const ROSTER_HEADING = /^(?:present|attendees?|attendance|participants?|apologies|absent|distribution(?: list)?|contents|table of contents|references?|revision history|change ?log|document history|agenda)$/iu

/** Sections whose items are what a reader looks for first; the heading becomes the points' label. */
const KEY_SECTION = /\b(?:decisions?|decided|agreed|resolutions?|outcomes?|conclusions?|actions?|action items?|next steps?|to-?dos?|follow[- ]?ups?|risks?|issues?|blockers?|concerns?|exceptions?|exemptions?|what we will change|changes)\b/iu
/** Sections worth a bonus without a label: limits, prices, rules, summaries. */
const USEFUL_SECTION = /\b(?:limits?|prices?|pricing|costs?|fees?|rates?|budget|summary|key points?|highlights?|tl;?dr|rules?|requirements?|eligib\w*|deadlines?|timeline|milestones?|schedule|who can|refunds?|triage|escalation)\b/iu
/** A line labelled as a point: "Decision: …", "Action: …", "Risk: …". */
const LABELLED_LINE = /^(decisions?|decided|agreed|actions?|action items?|to-?do|risks?|exceptions?|deadline|important|note)\s*[:：]\s*/iu
const LABEL_OF: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(?:decisions?|decided|agreed)$/iu, 'Decisions'],
  [/^(?:actions?|action items?|to-?do)$/iu, 'Action items'],
  [/^risks?$/iu, 'Risks'],
  [/^exceptions?$/iu, 'Exceptions'],
]

// ── what makes a sentence a fact ──────────────────────────────────────────────────────────────

const MONTH = '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)'
const CURRENCY = /[$€£¥₹]\s?\d|\d\s?(?:[$€£¥₹]|(?:usd|eur|gbp|chf|jpy|cny|rmb|dollars?|euros?|pounds?|yuan)\b)/iu
const PERCENT = /\d\s?%|\bper ?cent\b|\bpercent\b/iu
const DATE = new RegExp(`\\b\\d{4}-\\d{2}-\\d{2}\\b|\\b\\d{1,2}(?:st|nd|rd|th)? ${MONTH}\\b|\\b${MONTH}\\.? \\d{1,2}\\b|\\bq[1-4]\\b|\\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\\b|\\b\\d{1,2}[:.]\\d{2}\\b`, 'iu')
const QUANTITY =
  /\b\d[\d,.]*\s?(?:-\s?)?(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|business days?|working days?|nights?|times|users?|seats?|people|employees?|customers?|tickets?|rows?|items?|requests?|gb|mb|kb|tb|ms|km|kg|x)\b/iu
const NUMBER_WORD = /\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty|half|twice|double)\s(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|times|sessions?)\b/iu
const DIGIT = /\d/u
const RULE = /\b(?:must|may not|may|need(?:s|ed)?|required?|only|never|always|up to|at least|at most|no more than|within|before|after|instead of|exempt|not (?:eligible|allowed|reimbursed|covered))\b/iu

function factWeight(text: string): number {
  let weight = 0
  if (CURRENCY.test(text)) weight += 3
  if (PERCENT.test(text)) weight += 2
  if (DATE.test(text)) weight += 2
  if (QUANTITY.test(text) || NUMBER_WORD.test(text)) weight += 2
  if (weight === 0 && DIGIT.test(text)) weight += 1
  return Math.min(5, weight) + (RULE.test(text) ? 1 : 0)
}

// ── helpers ───────────────────────────────────────────────────────────────────────────────────

const plain = (text: string): string =>
  text
    .replace(/\*\*|__|`/gu, '')
    .replace(/(^|\s)[*_](\S[^*_]*\S|\S)[*_](?=[\s.,;:!?]|$)/gu, '$1$2')
    .replace(/\s+/gu, ' ')
    .trim()

const stripMarker = (line: string): string => line.replace(/^\s*(?:[-*+•]|\d{1,3}[.)])\s+/u, '').replace(/^(\*\*|__)([^*_]+?)\1/u, '$2').trim()

/** A label from a heading or a line prefix, when it is one of the key kinds. */
function labelFor(heading: string): string | undefined {
  const text = heading.replace(/^\s*(?:\d{1,2}[.)]\s*)+/u, '').replace(/[:：]\s*$/u, '').trim()
  for (const [pattern, label] of LABEL_OF) if (pattern.test(text)) return label
  return KEY_SECTION.test(text) && text.length <= 40 ? text.charAt(0).toUpperCase() + text.slice(1) : undefined
}

/** The document's own heading of its section, outermost first, the title left out. */
const sectionOf = (block: Block): string => block.headings.at(-1) ?? ''

/** A point no longer than MAX_POINT_CHARS: its first whole sentences, else cut at a word. */
export function clipPoint(text: string, maxChars = MAX_POINT_CHARS): string {
  if (text.length <= maxChars) return text
  const sentences = text.match(/[^.!?。！？]+(?:[.!?。！？]+(?=\s|$)|$)/gu) ?? [text]
  let clipped = ''
  for (const sentence of sentences) {
    if ((clipped + sentence).length > maxChars) break
    clipped += sentence
  }
  if (clipped.trim() !== '') return clipped.trim()
  const cut = text.slice(0, maxChars - 1)
  const space = cut.lastIndexOf(' ')
  return `${(space > maxChars / 2 ? cut.slice(0, space) : cut).trimEnd()}…`
}

const cells = (row: string): string[] =>
  row
    .trim()
    .replace(/^\|/u, '')
    .replace(/\|$/u, '')
    .split('|')
    .map((cell) => plain(cell))

/** A table row read with its header: "Hotel — Limit: €180 per night, Notes: €250 in London". */
export function rowWithHeader(header: ReadonlyArray<string>, row: ReadonlyArray<string>): string {
  const [first, ...rest] = row.map((cell) => cell.trim())
  const fields = rest.flatMap((cell, index) => (cell === '' ? [] : [header[index + 1] ? `${header[index + 1]}: ${cell}` : cell]))
  return fields.length === 0 ? (first ?? '') : `${first ?? ''} — ${fields.join(', ')}`
}

// ── the outline ───────────────────────────────────────────────────────────────────────────────

interface Candidate {
  readonly text: string
  readonly label: string | undefined
  readonly weight: number
  readonly position: number
}

/** The text without its form lines and sign-offs (blank lines in their place), and the date those lines gave. */
function withoutBoilerplate(text: string): { text: string; date: string | undefined } {
  let date: string | undefined
  const lines = text.split('\n').map((line) => {
    const bare = stripMarker(line.trim()).replace(/^[*_]+|[*_]+$/gu, '')
    if (bare === '') return line
    const dated = DATE_FIELD.exec(bare)
    if (dated !== null) {
      date ??= (/^date$/iu.test(dated[1]!) ? '' : `${dated[1]!.toLowerCase()} `) + plain(dated[2]!).replace(/[.;,]$/u, '')
      return ''
    }
    return FIELD_LINE.test(bare) || SIGN_OFF.test(bare) || SIGNATURE.test(bare) ? '' : line
  })
  return { text: lines.join('\n'), date }
}

function candidatesOf(blocks: ReadonlyArray<Block>): Candidate[] {
  const candidates: Candidate[] = []
  const add = (text: string, label: string | undefined, weight: number) => {
    const clean = plain(text)
    if (clean.length < 12 || !/[\p{L}]/u.test(clean)) return
    if (FIELD_LINE.test(clean) || SIGN_OFF.test(clean)) return
    candidates.push({ text: clipPoint(clean), label, weight, position: candidates.length })
  }
  for (const block of blocks) {
    if (candidates.length >= MAX_CANDIDATES) break
    if (block.kind === 'code' || block.kind === 'heading' || !isEvidence(block)) continue
    const section = sectionOf(block)
    if (ROSTER_HEADING.test(section.replace(/[:：]\s*$/u, '').trim())) continue
    const sectionLabel = block.headings.length > 1 || block.kind === 'item' ? labelFor(section) : undefined
    const leadLabel = block.kind === 'item' && block.lead !== undefined && block.lead.length <= 40 ? labelFor(block.lead) : undefined
    const sectionWeight = sectionLabel !== undefined || leadLabel !== undefined ? 5 : USEFUL_SECTION.test(section) ? 2 : 0
    if (block.kind === 'row') {
      const header = block.lead === undefined ? undefined : cells(block.lead)
      add(header === undefined ? cells(block.text).join(', ') : rowWithHeader(header, cells(block.text)), sectionLabel, sectionWeight + 1)
      continue
    }
    if (block.kind === 'item') {
      const labelled = LABELLED_LINE.exec(block.text)
      const prefixLabel = labelled === null ? undefined : labelFor(labelled[1]!)
      add(labelled === null || prefixLabel === undefined ? block.text : block.text.slice(labelled[0].length), prefixLabel ?? sectionLabel ?? leadLabel, sectionWeight + (prefixLabel !== undefined ? 5 : 0))
      continue
    }
    for (const sentence of block.sentences) {
      const text = sentence.text.trim()
      if (/[:：]$/u.test(text) || /^(\*\*|__)[^*_]+\1[.:]?$/u.test(text)) continue
      const labelled = LABELLED_LINE.exec(text)
      const prefixLabel = labelled === null ? undefined : labelFor(labelled[1]!)
      add(labelled === null || prefixLabel === undefined ? text : text.slice(labelled[0].length), prefixLabel ?? sectionLabel, sectionWeight + (prefixLabel !== undefined ? 5 : 0))
    }
  }
  return candidates
}

/** Luhn-style centrality in 0–1: how much of a candidate's vocabulary the others share. */
function centralityOf(candidates: ReadonlyArray<Candidate>): number[] {
  const termsOf = candidates.map((c) => new Set(matchTerms(c.text)))
  const frequency = new Map<string, number>()
  for (const terms of termsOf) for (const term of terms) frequency.set(term, (frequency.get(term) ?? 0) + 1)
  const raw = termsOf.map((terms) => {
    if (terms.size === 0) return 0
    let weight = 0
    for (const term of terms) weight += (frequency.get(term) ?? 1) - 1
    return weight / Math.sqrt(terms.size)
  })
  const max = Math.max(1e-9, ...raw)
  return raw.map((value) => value / max)
}

const normalisedForDedupe = (text: string): string => text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()

/** Ranked, without a point that repeats another (the same words, or contained in a longer one). */
function rank(candidates: ReadonlyArray<Candidate>): KeyPoint[] {
  const centrality = centralityOf(candidates)
  const scored = candidates
    .map((c, index) => ({ text: c.text, label: c.label, position: c.position, score: c.weight + factWeight(c.text) + centrality[index]! - (c.text.length < 30 ? 1 : 0) }))
    .sort((a, b) => b.score - a.score || a.position - b.position)
  const kept: KeyPoint[] = []
  const seen: string[] = []
  for (const point of scored) {
    const key = normalisedForDedupe(point.text)
    if (key === '' || seen.some((other) => other === key || (other.length > 30 && key.includes(other)) || (key.length > 30 && other.includes(key)))) continue
    seen.push(key)
    kept.push(point)
  }
  return kept
}

/** A subject reads as a phrase: no sentence break or ": " inside, no final stop, not in capitals. */
export function asSubject(text: string): string {
  let subject = plain(text)
    .replace(/[:：]\s+/gu, ' – ')
    .replace(/([.!?])\s+(?=\S)/gu, (_, mark: string) => (mark === '.' ? ', ' : ' '))
    .replace(/[\s.:;,!?–-]+$/u, '')
  if (!/\p{Ll}/u.test(subject) && /\p{Lu}{3}/u.test(subject)) subject = subject.charAt(0) + subject.slice(1).toLowerCase()
  if (subject.length > MAX_SUBJECT_CHARS) {
    const cut = subject.slice(0, MAX_SUBJECT_CHARS - 1)
    const space = cut.lastIndexOf(' ')
    subject = `${(space > MAX_SUBJECT_CHARS / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:–-]+$/u, '')}…`
  }
  return subject
}

function outlineTable({ title, text }: { readonly title: string; readonly text: string }): DocumentOutline | undefined {
  const separator = separatorOf(title)
  if (separator === undefined) return undefined
  const table = readDelimitedTable({ text, separator, maxChars: MAX_OUTLINE_CHARS })
  if (table === undefined) return undefined
  const header = table.header.map((h) => h.trim())
  const rows = table.totalRows === undefined ? `more than ${table.rows.length}` : String(table.totalRows)
  const subject = `A table of ${rows} row${rows === '1' ? '' : 's'} with the columns ${header.filter((h) => h !== '').join(', ')}`
  const points = table.rows.map((row, position) => ({ text: clipPoint(rowWithHeader(header, row)), label: undefined, score: 1, position }))
  return { subject: asSubject(subject), lead: undefined, points: points.filter((p) => /[\p{L}\p{N}]/u.test(p.text)) }
}

/**
 * The outline of a document named `title`: a CSV/TSV file's rows with their header, a JSON file's
 * shape, a text's title and ranked key points.
 */
export function outlineDocument({ title, text }: { readonly title: string; readonly text: string }): DocumentOutline {
  const bounded = text.length > MAX_OUTLINE_CHARS ? text.slice(0, MAX_OUTLINE_CHARS) : text
  const table = outlineTable({ title, text: bounded })
  if (table !== undefined) return table
  if (/\.json$/iu.test(title.trim())) {
    const shape = describeJson(text.length > MAX_OUTLINE_CHARS ? '' : text)
    if (shape !== undefined) return { subject: asSubject(shape.split(/(?<=\.)\s/u)[0]!), lead: undefined, points: [] }
  }
  const { text: content, date } = withoutBoilerplate(bounded.replace(/\r\n?/gu, '\n'))
  const blocks = splitBlocks({ text: content, offset: 0, atStart: true, atEnd: true, name: '' })
  const candidates = candidatesOf(blocks)
  const points = rank(candidates)
  const title1 = blocks.find((block) => block.headings.length > 0)?.headings[0]
  const firstProse = candidates.find((c) => c.label === undefined && /[.!?。！？]$/u.test(c.text) && c.text.length >= 25)
  const heading = title1 !== undefined && blocks.indexOf(blocks.find((block) => block.headings.length > 0)!) <= 1 ? title1 : undefined
  let subject = heading !== undefined ? asSubject(heading) : firstProse !== undefined ? asSubject(firstProse.text) : asSubject(title)
  if (date !== undefined && !DIGIT.test(subject)) subject = `${subject} (${date})`
  const lead = heading !== undefined && firstProse !== undefined ? firstProse.text : undefined
  return { subject, lead, points: points.filter((p) => lead === undefined || p.text !== lead || p.score >= 3) }
}
