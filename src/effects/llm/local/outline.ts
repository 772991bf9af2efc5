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
  /^(?:present|attendees?|attendance|in attendance|participants?|apologies|absent|regrets|guests?|minutes(?: by| taken by)?|note[- ]?takers?|scribe|facilitators?|facilitated by|chair(?:ed by)?|chairs?|date|time|when|where|location|venue|room|authors?|owners?|version|status|last (?:updated|modified|reviewed|revised)|updated|revised|effective(?: date| from)?|applies to|audience|prepared by|reviewed by|approved by|written by|cc|bcc|to|from|subject|distribution|classification|confidential(?:ity)?|page|document (?:id|number|owner)|next (?:meeting|sync|call|review))\s*[:：]/iu
const SIGN_OFF =
  /^(?:thanks|thank you|many thanks|regards|kind regards|best regards|warm regards|best|cheers|sincerely|yours(?: sincerely| faithfully| truly)?|signed)(?:[\s,.!]+(?:all|everyone|team|again))?[\s,.!]*$/iu
const SIGNATURE = /^(?:[—–]|--?)\s*\p{Lu}[\p{L}.'’ -]{0,40}$/u
/** "Date: …", "Effective: …", "Last updated: …": the document's date, for its subject. */
const DATE_FIELD = /^(date|effective(?: date| from)?|last updated|updated)\s*[:：]\s*(.*\d.*)$/iu
/** "Updated 1 March 2026 by the support lead.": a date line written as a sentence. */
const DATE_SENTENCE = /^(last updated|updated|revised|last revised)\s+(?:on\s+)?(\d{1,2} \p{L}+ \d{4}|\p{L}+ \d{1,2},? \d{4}|\d{4}-\d{2}-\d{2})\b[^.]{0,60}\.?$/iu

/** Sections whose items are people, contents or history, not points. */
const ROSTER_HEADING = /^(?:present|attendees?|attendance|participants?|apologies|absent|distribution(?: list)?|contents|table of contents|references?|revision history|change ?log|document history|agenda)$/iu

/** Sections whose items are what a reader looks for first; the heading becomes the points' label. */
const KEY_SECTION = /\b(?:decisions?|decided|agreed|resolutions?|outcomes?|conclusions?|actions?|action items?|next steps?|to-?dos?|follow[- ]?ups?|risks?|issues?|blockers?|concerns?|exceptions?|exemptions?|what we will change|changes)\b/iu
const INTRO_SECTION = /^(?:purpose|summary|overview|introduction|about|scope|background|tl;?dr)\b/iu
/** Sections worth a bonus without a label: limits, prices, rules, summaries. */
const USEFUL_SECTION = /\b(?:limits?|prices?|pricing|costs?|fees?|rates?|budget|summary|key points?|highlights?|tl;?dr|rules?|requirements?|eligib\w*|deadlines?|timeline|milestones?|schedule|who can|refunds?|triage|escalation)\b/iu
/** A line labelled as a point: "Decision: …", "Action: …", "Risk: …". */
const LABELLED_LINE = /^(decisions?|decided|agreed|actions?|action items?|to-?do|risks?|exceptions?|deadline|important|note)\s*[:：]\s*/iu
const LABEL_OF: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(?:decisions?(?: made)?|decided|agreed|resolutions?|outcomes?|conclusions?)$/iu, 'Decisions'],
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

/** How much a label weighs: a decision most, then actions, risks and exceptions, then other key sections. */
const labelWeight = (label: string | undefined): number =>
  label === undefined ? 0 : label === 'Decisions' ? 7 : LABEL_OF.some(([, canonical]) => canonical === label) ? 5 : 3

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

const SECTION_DECAY = 1.2

interface Candidate {
  readonly text: string
  readonly section: string
  /** Under the title only, or under an "Introduction"/"Purpose"-like heading: where a document says what it is. */
  readonly intro: boolean
  readonly label: string | undefined
  readonly weight: number
  readonly position: number
}

/** The text without its form lines and sign-offs (blank lines in their place), and the date those lines gave. */
function withoutBoilerplate(text: string): { text: string; date: string | undefined } {
  let date: string | undefined
  /** Lines after a sign-off ("Signed,", "Regards,") that are a name and a role, not text. */
  let signature = 0
  const lines = text.split('\n').map((line) => {
    const bare = stripMarker(line.trim()).replace(/^[*_]+|[*_]+$/gu, '')
    if (bare === '') {
      signature = 0
      return line
    }
    if (signature > 0 && bare.length <= 60 && !/[.!?]$/u.test(bare)) {
      signature -= 1
      return ''
    }
    signature = 0
    const dated = DATE_FIELD.exec(bare) ?? DATE_SENTENCE.exec(bare)
    if (dated !== null) {
      date ??= (/^date$/iu.test(dated[1]!) ? '' : `${dated[1]!.toLowerCase()} `) + plain(dated[2]!).replace(/[.;,]$/u, '')
      return ''
    }
    if (SIGN_OFF.test(bare)) {
      signature = 2
      return ''
    }
    return FIELD_LINE.test(bare) || SIGNATURE.test(bare) ? '' : line
  })
  // a removed line leaves one blank line at most, so that a title above it stays a heading
  return { text: lines.join('\n').replace(/\n[ \t]*\n(?:[ \t]*\n)+/gu, '\n\n'), date }
}

function candidatesOf(blocks: ReadonlyArray<Block>, title: string | undefined): Candidate[] {
  const candidates: Candidate[] = []
  let section = ''
  let intro = false
  const add = (text: string, label: string | undefined, weight: number, { fragmentOk = false }: { fragmentOk?: boolean } = {}) => {
    const clean = plain(text)
    if (clean.length < 12 || !/[\p{L}]/u.test(clean)) return
    // a few words with no fact and no sentence ("Pricing review"): an agenda line or a caption
    if (!fragmentOk && clean.length < 30 && !DIGIT.test(clean) && !/[.!?。！？]$/u.test(clean)) return
    if (FIELD_LINE.test(clean) || SIGN_OFF.test(clean)) return
    if (title !== undefined && clean === plain(title)) return
    candidates.push({ text: clipPoint(clean), section, intro, label, weight, position: candidates.length })
  }
  for (const block of blocks) {
    if (candidates.length >= MAX_CANDIDATES) break
    if (block.kind === 'code' || block.kind === 'heading' || !isEvidence(block)) continue
    section = sectionOf(block)
    intro = block.headings.length === 0 || section === title || INTRO_SECTION.test(section)
    if (ROSTER_HEADING.test(section.replace(/[:：]\s*$/u, '').trim())) continue
    const sectionLabel = section !== title ? labelFor(section) : undefined
    const leadLabel = block.kind === 'item' && block.lead !== undefined && block.lead.length <= 40 ? labelFor(block.lead) : undefined
    // a paragraph under a key heading is often its preamble or an aside; its items are the points
    const keyWeight = labelWeight(sectionLabel ?? leadLabel) - (block.kind === 'paragraph' ? 2 : 0)
    const sectionWeight = Math.max(keyWeight, USEFUL_SECTION.test(section) ? 2 : 0)
    if (block.kind === 'row') {
      const header = block.lead === undefined ? undefined : cells(block.lead)
      add(header === undefined ? cells(block.text).join(', ') : rowWithHeader(header, cells(block.text)), sectionLabel, sectionWeight + 1, { fragmentOk: true })
      continue
    }
    if (block.kind === 'item') {
      const labelled = LABELLED_LINE.exec(block.text)
      const prefixLabel = labelled === null ? undefined : labelFor(labelled[1]!)
      add(labelled === null || prefixLabel === undefined ? block.text : block.text.slice(labelled[0].length), prefixLabel ?? sectionLabel ?? leadLabel, prefixLabel !== undefined ? Math.max(sectionWeight, labelWeight(prefixLabel)) : sectionWeight)
      continue
    }
    for (const sentence of block.sentences) {
      const text = sentence.text.trim()
      if (/^(\*\*|__)[^*_]+\1[.:]?$/u.test(text)) continue
      // a sentence that announces a list says little on its own, unless it carries a fact ("… within 15 minutes:")
      if (/[:：]$/u.test(text) && factWeight(text) < 2) continue
      const labelled = LABELLED_LINE.exec(text)
      const prefixLabel = labelled === null ? undefined : labelFor(labelled[1]!)
      const point = (labelled === null || prefixLabel === undefined ? text : text.slice(labelled[0].length)).replace(/[:：]$/u, '')
      add(point, prefixLabel ?? sectionLabel, prefixLabel !== undefined ? Math.max(sectionWeight, labelWeight(prefixLabel)) : sectionWeight)
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
  const first = candidates
    .map((c, index) => ({ text: c.text, label: c.label, section: c.section, position: c.position, score: c.weight + factWeight(c.text) + centrality[index]! - (c.text.length < 30 ? 1 : 0) }))
    .sort((a, b) => b.score - a.score || a.position - b.position)
  // Diminishing returns within a section, so that the points cover the document, not one list of it.
  const taken = new Map<string, number>()
  const scored = first
    .map((point) => {
      const before = taken.get(point.section) ?? 0
      taken.set(point.section, before + 1)
      return { text: point.text, label: point.label, position: point.position, score: point.score - SECTION_DECAY * before }
    })
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
  const named = title
    .replace(/\.[a-z0-9]+$/iu, '')
    .replace(/[-_]+/gu, ' ')
    .trim()
  const subject = `${named.charAt(0).toUpperCase()}${named.slice(1)} — a table of ${rows} row${rows === '1' ? '' : 's'} with the columns ${header.filter((h) => h !== '').join(', ')}`
  const points = table.rows.map((row, position) => ({ text: clipPoint(rowWithHeader(header, row)), label: undefined, score: 1, position }))
  return { subject: asSubject(subject), lead: undefined, points: points.filter((p) => /[\p{L}\p{N}]/u.test(p.text)) }
}

/** The document's title: its first line when that is a Markdown heading, or a short line without a final stop standing above the text. */
function titleOf(text: string): string | undefined {
  const lines = text.split('\n')
  const index = lines.findIndex((line) => line.trim() !== '')
  if (index < 0) return undefined
  const line = lines[index]!.trim()
  const heading = /^#{1,3}\s+(.*?)\s*#*$/u.exec(line)
  if (heading !== null) return heading[1]!.trim() || undefined
  if (/^(?:=+|-+)$/u.test(lines[index + 1]?.trim() ?? '')) return line
  if (line.length > 80 || /[.!?:;,。！？：；，]$/u.test(line) || /^(?:[-*+•|>]|\d{1,3}[.)]\s)/u.test(line) || !/\p{L}/u.test(line)) return undefined
  const next = lines[index + 1]
  return next === undefined || next.trim() === '' || /^\s*[\p{Lu}\p{N}#]/u.test(next) ? line : undefined
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
  const heading = titleOf(content)
  const candidates = candidatesOf(blocks, heading)
  const firstProse = candidates.find((c) => c.intro && c.label === undefined && /[.!?。！？]$/u.test(c.text) && c.text.length >= 25)
  let subject = heading !== undefined ? asSubject(heading) : firstProse !== undefined ? asSubject(firstProse.text) : asSubject(title)
  if (date !== undefined && !DIGIT.test(subject)) subject = `${subject} (${date})`
  // The first sentence says what the document is for, when it carries no fact of its own; then it is no point.
  const lead = heading !== undefined && firstProse !== undefined && factWeight(firstProse.text) === 0 ? firstProse.text : undefined
  const points = rank(candidates.filter((c) => c.text !== lead && (heading !== undefined || c !== firstProse)))
  return { subject, lead, points }
}
