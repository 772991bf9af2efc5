// The built-in local model's compile pages (issue 35), written for a person:
//   summary   the file's subject, then its key points grouped under their section ("Decisions:",
//             "Action items:"), most important first (outline.ts)
//   overview  a line per file, "- **file** (uri) — subject: point; point", read from the summaries
//   abstract  three to five sentences: what the folder holds (its files' subjects), its recurring
//             topics, and its weightiest points; no sentence twice
// Extractive: subjects and points are the source's own words; only the framing ("holds 3
// documents", "Recurring topics") is ours. Deterministic.
import { asSubject, clipPoint, outlineDocument, type KeyPoint } from './outline.ts'
import { matchTerms } from './terms.ts'

const OTHER_POINTS = 'Other points'

interface PointGroup {
  readonly label: string | undefined
  readonly points: ReadonlyArray<string>
}

const withoutStop = (text: string): string => text.replace(/[\s.;]+$/u, '')

function cutToChars(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  const cut = text.slice(0, Math.max(1, maxChars - 1))
  const space = cut.lastIndexOf(' ')
  return `${(space > maxChars / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:–-]+$/u, '')}…`
}

/** Points in the order chosen, gathered under their labels; the groups in the order of their first point. */
function groupPoints(points: ReadonlyArray<Pick<KeyPoint, 'text' | 'label'>>): PointGroup[] {
  const groups = new Map<string | undefined, string[]>()
  for (const point of points) {
    const group = groups.get(point.label) ?? []
    group.push(point.text)
    groups.set(point.label, group)
  }
  return [...groups].map(([label, texts]) => ({ label, points: texts }))
}

/**
 * A file's summary: its subject (and what it says it is for), then its key points, most important
 * first, under their section labels, within `maxChars`.
 */
export function writeSummary({ title, text, maxChars }: { readonly title: string; readonly text: string; readonly maxChars: number }): string {
  if (text.trim() === '') return ''
  const outline = outlineDocument({ title, text })
  const head = cutToChars(`${outline.subject}.`, maxChars)
  let used = head.length
  const intro = outline.lead !== undefined && used + outline.lead.length + 1 <= maxChars / 3 ? outline.lead : undefined
  if (intro !== undefined) used += intro.length + 1
  const chosen: KeyPoint[] = []
  for (const point of outline.points) {
    if (point.text === intro) continue
    // "- " and a line break, and a label line when the point opens a group
    const cost = point.text.length + 3 + (chosen.some((p) => p.label === point.label) ? 0 : (point.label ?? OTHER_POINTS).length + 3)
    if (used + cost > maxChars) continue
    chosen.push(point)
    used += cost
  }
  const groups = groupPoints(chosen)
  const labelled = groups.some((group) => group.label !== undefined)
  const body = groups.map((group) => {
    const label = group.label ?? (labelled ? OTHER_POINTS : undefined)
    const items = group.points.map((point) => `- ${point}`).join('\n')
    return label === undefined ? items : `${label}:\n${items}`
  })
  return [intro === undefined ? head : `${head}\n${intro}`, ...body].join('\n\n')
}

export interface ReadSummary {
  readonly subject: string
  readonly groups: ReadonlyArray<PointGroup>
}

/**
 * A summary read back as subject and points: one written by writeSummary (first paragraph, then
 * "Label:" lines and "- " items), or any other text (a model's prose), outlined.
 */
export function readSummary({ name, summary }: { readonly name: string; readonly summary: string }): ReadSummary {
  const lines = summary.replace(/\r\n?/gu, '\n').split('\n')
  const firstBlank = lines.findIndex((line) => line.trim() === '')
  const opening = (firstBlank < 0 ? lines : lines.slice(0, firstBlank)).filter((line) => !/^\s*[-*]\s/u.test(line))
  const rest = firstBlank < 0 ? [] : lines.slice(firstBlank + 1)
  const points: Array<{ text: string; label: string | undefined }> = []
  let label: string | undefined
  for (const line of rest) {
    const item = /^\s*[-*]\s+(.+)$/u.exec(line)
    if (item !== null) points.push({ text: item[1]!.trim(), label })
    else if (/^[^\s-].{0,60}:\s*$/u.test(line)) label = line.trim().replace(/:$/u, '') === OTHER_POINTS ? undefined : line.trim().replace(/:$/u, '')
  }
  if (points.length > 0 && opening.length > 0) return { subject: asSubject(opening[0]!), groups: groupPoints(points) }
  const outline = outlineDocument({ title: `${name.replace(/\.[a-z0-9]+$/iu, '')}.txt`, text: summary })
  return { subject: outline.subject, groups: groupPoints(outline.points) }
}

/** One overview line: "- **file** (uri) — subject: point; point." (or "— subject. Decisions: point; point. Other points: point.") within `maxChars` when points allow. */
function overviewLine({ name, uri, read, maxChars }: { readonly name: string; readonly uri: string | undefined; readonly read: ReadSummary; readonly maxChars: number }): string {
  const prefix = `- **${name}**${uri === undefined ? '' : ` (${uri})`} — ${read.subject || '(no text)'}`
  const labelled = read.groups.some((group) => group.label !== undefined)
  const parts: string[] = []
  let used = prefix.length + 1
  for (const group of read.groups) {
    const label = group.label ?? (labelled ? OTHER_POINTS : undefined)
    const taken: string[] = []
    let cost = label === undefined ? 1 : label.length + 3
    for (const point of group.points) {
      const text = withoutStop(point)
      if (used + cost + text.length + 2 > maxChars) continue
      taken.push(text)
      cost += text.length + 2
    }
    if (taken.length === 0) continue
    parts.push(label === undefined ? taken.join('; ') : `${label}: ${taken.join('; ')}`)
    used += cost
  }
  if (parts.length === 0) return `${prefix}.`
  return labelled ? `${prefix}. ${parts.join('. ')}.` : `${prefix}: ${parts.join('; ')}.`
}

/** Names past this many characters of an overview are counted, not listed. */
const MAX_NAMES_CHARS = 2_000

/**
 * A directory overview: a line per file with its subject and key points, in an equal share of
 * `maxChars` each (at least a line with the subject); files past the budget are still named on a
 * last line, up to MAX_NAMES_CHARS, then counted.
 */
export function writeOverview({
  documents,
  maxChars,
  maxCharsPerDocument = 700,
}: {
  readonly documents: ReadonlyArray<{ readonly name: string; readonly uri?: string | undefined; readonly summary: string }>
  readonly maxChars: number
  readonly maxCharsPerDocument?: number
}): string {
  const share = Math.min(maxCharsPerDocument, Math.max(100, Math.floor(maxChars / Math.max(1, documents.length))))
  const lines: string[] = []
  let used = 0
  let index = 0
  for (; index < documents.length; index += 1) {
    const document = documents[index]!
    const line = overviewLine({ name: document.name, uri: document.uri, read: readSummary(document), maxChars: share + (document.uri?.length ?? 0) })
    if (used + line.length + 1 > maxChars && lines.length > 0) break
    lines.push(line)
    used += line.length + 1
  }
  const rest = documents.slice(index).map((document) => document.name)
  if (rest.length > 0) {
    const named: string[] = []
    let chars = 0
    for (const name of rest) {
      if (chars + name.length + 2 > MAX_NAMES_CHARS) break
      named.push(name)
      chars += name.length + 2
    }
    const more = rest.length - named.length
    lines.push(`- Also here: ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}.`)
  }
  return lines.join('\n')
}

// ── the abstract ──────────────────────────────────────────────────────────────────────────────

interface OverviewEntry {
  readonly name: string
  readonly subject: string
  readonly label: string | undefined
  readonly points: ReadonlyArray<string>
}

const OVERVIEW_LINE = /^- \*\*(.+?)\*\*(?: \(kb:\/\/\S+\))? — (.*)$/u

/** The files of an overview written by writeOverview, with their subjects and points. */
export function readOverview(overview: string): OverviewEntry[] {
  const entries: OverviewEntry[] = []
  for (const line of overview.split('\n')) {
    const match = OVERVIEW_LINE.exec(line.trim())
    if (match === null) continue
    const rest = match[2]!
    const cut = rest.search(/: |\. /u)
    const subject = withoutStop(cut < 0 ? rest : rest.slice(0, cut))
    let after = cut < 0 ? '' : rest.slice(cut + 2)
    let label: string | undefined
    if (cut >= 0 && rest[cut] === '.') {
      const labelled = /^([^:;.]{1,40}): /u.exec(after)
      if (labelled !== null) {
        label = labelled[1] === OTHER_POINTS ? undefined : labelled[1]
        after = after.slice(labelled[0].length)
      }
    }
    const points = withoutStop(after)
      .split(/; |\. (?=[^:;.]{1,40}: )/u)
      .map((point) => withoutStop(point.trim()))
      .filter((point) => /[\p{L}\p{N}]/u.test(point))
    entries.push({ name: match[1]!, subject, label, points })
  }
  return entries
}

/** A clause of one sentence: the text up to its first sentence end, without the final stop. */
function clause(text: string, maxChars: number): string {
  const first = /^.*?[.!?](?=\s+["'“‘(]*[\p{Lu}\p{N}])/u.exec(text)?.[0] ?? text
  return cutToChars(withoutStop(first).replace(/[.!?]$/u, ''), maxChars).replace(/([.!?])\s+(?=\S)/gu, '$1 ')
}

const FRAMING_WORDS = new Set(
  'table tables rows columns column decisions decision action actions items item risks risk exceptions exception other points point document documents also here key follow what will change changes'.split(' '),
)
const CALENDAR_WORD = /^(?:jan(?:uary)?|feb(?:ruary)?|march|april|june|july|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday|thursday|friday|saturday|sunday)$/u

/** Words that several files share (or, for one file, that recur in it), most widespread first. */
function recurringTopics(entries: ReadonlyArray<OverviewEntry>, max: number): { topics: string[]; shared: boolean } {
  const stats = new Map<string, { documents: Set<number>; count: number; first: number; surfaces: Map<string, number> }>()
  let order = 0
  for (const [index, entry] of entries.entries()) {
    const text = [entry.subject, ...entry.points].join(' ').toLowerCase()
    for (const match of text.matchAll(/\p{L}[\p{L}'’-]*\p{L}/gu)) {
      const word = match[0].replace(/['’]s$/u, '')
      if (word.length < 4 || FRAMING_WORDS.has(word) || CALENDAR_WORD.test(word) || /[-'’]/u.test(word)) continue
      const stem = matchTerms(word)[0]
      if (stem === undefined) continue
      const entryStats = stats.get(stem) ?? { documents: new Set<number>(), count: 0, first: order++, surfaces: new Map<string, number>() }
      entryStats.documents.add(index)
      entryStats.count += 1
      entryStats.surfaces.set(word, (entryStats.surfaces.get(word) ?? 0) + 1)
      stats.set(stem, entryStats)
    }
  }
  const ranked = [...stats.values()].sort((a, b) => b.documents.size - a.documents.size || b.count - a.count || a.first - b.first)
  const shared = ranked.filter((s) => s.documents.size >= 2)
  const pool = shared.length >= 2 ? shared : ranked.filter((s) => s.count >= 2)
  const surface = (s: (typeof ranked)[number]): string => [...s.surfaces].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0]
  return { topics: pool.slice(0, max).map(surface), shared: shared.length >= 2 }
}

const listOf = (items: ReadonlyArray<string>, joiner = ', '): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(joiner)} and ${items.at(-1)}`

/** Subjects that differ only by their dates and numbers ("Weekly sync — 4 March", "… — 11 March") are one kind of document. */
function subjectKinds(entries: ReadonlyArray<OverviewEntry>): string[] {
  const kinds = new Map<string, { subject: string; count: number }>()
  for (const entry of entries) {
    const key = entry.subject
      .toLowerCase()
      .replace(/\d+(?:st|nd|rd|th)?/gu, ' ')
      .split(/[^\p{L}]+/u)
      .filter((word) => word !== '' && !CALENDAR_WORD.test(word) && !/^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|q)$/u.test(word))
      .join(' ')
    const kind = kinds.get(key)
    if (kind === undefined) kinds.set(key, { subject: entry.subject, count: 1 })
    else kind.count += 1
  }
  return [...kinds.values()].map(({ subject, count }) => {
    if (count === 1) return subject
    const undated = subject.replace(/\s*[(—–-]?\s*[^\p{L}]*\d[\d\p{L} ,/.-]*\)?\s*$/u, '').trim()
    return `${undated || subject} (${count} documents)`
  })
}

/** The weight of a point for the abstract: a labelled one (a decision) first, then one with numbers. */
const pointWeight = (entry: OverviewEntry): number =>
  (entry.label !== undefined ? 2 : 0) + (/\d/u.test(entry.points[0] ?? '') ? 1 : 0) + (/ — [^:]{1,40}: /u.test(entry.points[0] ?? '') ? 0 : 0.5)

/**
 * A directory abstract from its overview: what the folder holds (its files' subjects), its
 * recurring topics, and the weightiest points of its files, three to five sentences within
 * `maxChars`, no sentence twice.
 */
export function writeAbstract({ title, overview, maxChars }: { readonly title: string; readonly overview: string; readonly maxChars: number }): string {
  const entries = readOverview(overview)
  const count = Number(/holds (\d+) compiled documents?/u.exec(overview)?.[1] ?? entries.length)
  const sentences: string[] = []
  const add = (sentence: string): boolean => {
    const used = sentences.reduce((sum, s) => sum + s.length + 1, 0)
    const key = sentence.toLowerCase()
    if (sentences.length >= 5 || used + sentence.length > maxChars || sentences.some((s) => s.toLowerCase() === key)) return false
    sentences.push(sentence)
    return true
  }
  const opening = `${title} holds ${count} document${count === 1 ? '' : 's'}`
  const kinds = subjectKinds(entries).map((subject) => clause(subject, 90))
  const shown: string[] = []
  for (const kind of kinds) {
    const candidate = [...shown, kind]
    const more = kinds.length - candidate.length
    if (`${opening}: ${candidate.join('; ')}${more > 0 ? `; and ${more} more` : ''}.`.length > maxChars * 0.45 && shown.length > 0) break
    shown.push(kind)
  }
  const moreKinds = kinds.length - shown.length
  add(shown.length === 0 ? `${opening}.` : `${opening}: ${shown.join('; ')}${moreKinds > 0 ? `; and ${moreKinds} more` : ''}.`)
  const { topics, shared } = recurringTopics(entries, 5)
  if (topics.length > 0) add(`${shared ? 'Recurring topics' : 'Main topics'}: ${listOf(topics)}.`)
  const withPoints = entries
    .map((entry, index) => ({ entry, index }))
    .filter(({ entry }) => entry.points.length > 0)
    .sort((a, b) => pointWeight(b.entry) - pointWeight(a.entry) || a.index - b.index)
  for (const { entry } of withPoints) {
    const label = entry.label ?? 'Key point'
    add(`${label} in ${entry.name}: ${clause(clipPoint(entry.points[0]!, 160), 160)}.`)
  }
  if (sentences.length < 3) add(`Each file is listed in the overview with its subject and key points.`)
  if (sentences.length < 3 && entries.length > 0) add(`The files are ${listOf(entries.map((e) => e.name))}.`)
  return sentences.join(' ')
}
