// The local model's answer to "what are these files about" (issue 41): a folder compiled and up to
// date is summed up by its own compiled pages (its .abstract.md and .overview.md, quoted and cited
// as the compiled summary); any other folder — never compiled, or compiled before its files
// changed — by one entry per file, its title and its opening passage, labelled as such and
// bounded. A stale overview is not quoted: it may describe files that changed or are gone.
import type { Answer } from './answer.ts'
import { codePointLength, collapse, isDelimitedName, type Block } from './blocks.ts'
import type { FolderLayerView, LsEntryView, LsResultView } from './conversation.ts'
import { isEvidence, type Quote } from './passages.ts'
import type { Phrases } from './phrases.ts'
import { fileNameOf, type ReadDocument } from './ranking.ts'

/** Files given a line of their own; the rest are counted ("and 7 more files"). */
export const MAX_FILES_LISTED = 20
/** Subfolders listed in one step, and the depth of listing, when the folder itself holds few files. */
export const MAX_FOLDERS_LISTED = 8
export const MAX_LISTING_ROUNDS = 3
/** The opening quoted for a file: whole sentences of its first passage, within this many code points (one at least). */
const OPENING_MAX_CHARS = 280
const ABSTRACT_QUOTE_MAX_CHARS = 1200
const OVERVIEW_QUOTE_MAX_CHARS = 2400
/** Text read of each file for its opening: the read budget shared, within these bounds. */
const OPENING_READ_TOTAL = 12_000
const OPENING_READ_MIN = 600
const OPENING_READ_MAX = 3000

/** Bytes to read of each of `files` files, for their title and opening. */
export function openingReadLimit(files: number): number {
  return Math.max(OPENING_READ_MIN, Math.min(OPENING_READ_MAX, Math.floor(OPENING_READ_TOTAL / Math.max(1, files))))
}

/** The folder's compiled pages when every one it has is up to date; none when it has none or one is stale. */
export function freshLayers(listing: LsResultView): FolderLayerView[] {
  const layers = [listing.abstract, listing.overview].filter((layer): layer is FolderLayerView => layer !== undefined)
  return layers.length > 0 && layers.every((layer) => !layer.stale) ? layers : []
}

/** Entries that are the workspace's own files: compiled pages (dot files, a compiled folder's summaries/) are left out. */
function ownEntries(listing: LsResultView): LsEntryView[] {
  const compiled = listing.abstract !== undefined || listing.overview !== undefined
  return listing.entries.filter((entry) => !entry.name.startsWith('.') && !(compiled && entry.kind === 'directory' && entry.name.replace(/\/$/u, '') === 'summaries'))
}

/**
 * The files under a folder as far as it was listed, breadth first (its own files, then each listed
 * subfolder's), the subfolders not listed yet, and how many entries the listings left out (paged).
 */
export function filesUnder({ folder, listings }: { readonly folder: LsResultView; readonly listings: ReadonlyArray<LsResultView> }): {
  files: LsEntryView[]
  unlisted: LsEntryView[]
  notShown: number
} {
  const files: LsEntryView[] = []
  const unlisted: LsEntryView[] = []
  let notShown = 0
  const queue: LsResultView[] = [folder]
  const seen = new Set<string>()
  while (queue.length > 0) {
    const listing = queue.shift()!
    if (listing.uri !== undefined && seen.has(listing.uri)) continue
    if (listing.uri !== undefined) seen.add(listing.uri)
    notShown += Math.max(0, (listing.total ?? listing.entries.length) - listing.entries.length)
    for (const entry of ownEntries(listing)) {
      if (entry.kind === 'file') files.push(entry)
      else if (entry.kind === 'directory') {
        const listed = listings.find((l) => l.uri === entry.uri)
        if (listed === undefined) unlisted.push(entry)
        else queue.push(listed)
      }
    }
  }
  return { files, unlisted, notShown }
}

/** A file's entry: its title (first heading, else its name) and its opening passage as a quote of whole sentences. */
export interface FileOpening {
  readonly uri: string
  readonly title: string
  readonly quote: Quote | undefined
}

const TERMINAL = /[.!?。！？]["'”’)\]*_`]*$/u
/** Not an opening: a paragraph wholly in italics ("*Status: closed. Severity: SEV1.*") or a short `Key: value` field ("Present: Ines, Tomas, Wen."). */
const FIELD = /^(?:[*_][^*_].*[*_]|[\p{L}][\p{L} ]{0,24}:\s.{0,60})$/u

/** The title and the first heading-led passage of a file read from its start (the first passage when none is under a heading). */
export function fileOpening(document: ReadDocument): FileOpening {
  const { blocks, page } = document
  const heading = isDelimitedName(page.name) ? undefined : blocks.find((block) => block.headings.length > 0)?.headings[0]?.replace(/[*_`]/gu, '').trim()
  const title = heading || page.name || fileNameOf(document.uri)
  // A block cut by the end of the page still opens the file: its whole sentences count.
  const usable = (block: Block) => block.kind !== 'heading' && (isEvidence(block) || (block.partial && isEvidence({ ...block, partial: false }) && page.atStart && block.start >= page.offset))
  const candidates = blocks.filter(usable)
  const prose = candidates.filter((b) => b.kind === 'row' || !FIELD.test(b.text.trim()))
  const pool = prose.length > 0 ? prose : candidates
  const block = pool.find((b) => b.headings.length > 0) ?? pool[0]
  if (block === undefined) return { uri: document.uri, title, quote: undefined }
  const sentences = block.partial ? block.sentences.filter((s, index) => index < block.sentences.length - 1 || TERMINAL.test(s.text)) : block.sentences
  const chosen = []
  let used = 0
  for (const sentence of sentences) {
    if (chosen.length > 0 && used + 1 + sentence.text.length > OPENING_MAX_CHARS) break
    chosen.push(sentence)
    used += (chosen.length > 1 ? 1 : 0) + sentence.text.length
  }
  if (chosen.length === 0) return { uri: document.uri, title, quote: undefined }
  const text = chosen.map((s) => s.text).join(' ')
  return { uri: document.uri, title, quote: { start: chosen[0]!.start, end: chosen.at(-1)!.end, lines: [text] } }
}

/**
 * The body of a compiled page as a quote: after its title and its `Directory:` line, before its
 * list of sources and its generated-by footer; whole lines within `maxChars`.
 */
export function layerPageQuote({ document, maxChars }: { readonly document: ReadDocument; readonly maxChars: number }): { quote: Quote; cut: boolean } | undefined {
  const { page } = document
  let offset = page.offset
  const lines = page.text.replace(/\r\n?/gu, '\n').split('\n').map((text) => {
    const line = { text, start: offset }
    offset += codePointLength(text) + 1
    return line
  })
  let first = 0
  while (first < lines.length && (lines[first]!.text.trim() === '' || /^#\s/u.test(lines[first]!.text) || /^(Directory|Overview):\s*\S+$/u.test(lines[first]!.text.trim()))) first += 1
  let last = first
  while (last < lines.length && !/^(---\s*$|## Sources\b|Overview:\s*\S+$)/u.test(lines[last]!.text.trim())) last += 1
  const body = lines.slice(first, last)
  while (body.length > 0 && body.at(-1)!.text.trim() === '') body.pop()
  if (body.length === 0) return undefined
  const kept: typeof body = []
  let used = 0
  for (const line of body) {
    const length = codePointLength(line.text) + 1
    if (kept.length > 0 && used + length > maxChars) break
    kept.push(line)
    used += length
  }
  while (kept.length > 0 && kept.at(-1)!.text.trim() === '') kept.pop()
  const end = kept.at(-1)!
  return {
    quote: { start: kept[0]!.start, end: end.start + codePointLength(end.text), lines: kept.map((line) => collapse(line.text)) },
    cut: kept.length < body.length,
  }
}

function quoteBlock({ uri, quote, phrases }: { uri: string; quote: Quote; phrases: Phrases }): string {
  return `${quote.lines.map((line) => (line === '' ? '>' : `> ${line}`)).join('\n')}\n> — ${uri} ${phrases.offset(quote.start)}`
}

/** The folder summed up by its compiled pages (up to date): the abstract, then the overview, each quoted and cited. */
export function answerFromCompiledPages({
  folderUri,
  pages,
  phrases,
}: {
  readonly folderUri: string
  readonly pages: ReadonlyArray<{ readonly layer: FolderLayerView; readonly document: ReadDocument; readonly kind: 'abstract' | 'overview' }>
  readonly phrases: Phrases
}): Answer | undefined {
  const parts = pages.flatMap(({ document, kind }) => {
    const body = layerPageQuote({ document, maxChars: kind === 'abstract' ? ABSTRACT_QUOTE_MAX_CHARS : OVERVIEW_QUOTE_MAX_CHARS })
    if (body === undefined) return []
    return [`${quoteBlock({ uri: document.uri, quote: body.quote, phrases })}${body.cut ? `\n\n${phrases.pageContinues(document.uri)}` : ''}`]
  })
  if (parts.length === 0) return undefined
  const writtenAt = pages.map((p) => p.layer.writtenAt).find((at) => at !== undefined)
  return {
    thinking: phrases.summarisingThinking,
    text: `${phrases.compiledSummaryOf(folderUri, writtenAt?.slice(0, 10))}\n\n${parts.join('\n\n')}\n\n${phrases.footer}`,
    answered: true,
  }
}

/**
 * The folder summed up file by file, labelled as not a compiled summary: each file's title and
 * opening, cited, at most MAX_FILES_LISTED, then how many more; a stale overview is named as out of date.
 */
export function answerFromOpenings({
  folderUri,
  openings,
  more,
  staleOverview,
  phrases,
}: {
  readonly folderUri: string
  readonly openings: ReadonlyArray<FileOpening>
  /** Files (and entries) in the folder beyond those listed. */
  readonly more: number
  /** The folder's overview (or abstract) when it is compiled but out of date. */
  readonly staleOverview: FolderLayerView | undefined
  readonly phrases: Phrases
}): Answer {
  if (openings.length === 0) return { thinking: phrases.nothingThinking, text: phrases.nothingToRead, answered: false }
  const entries = openings.map(({ uri, title, quote }) => {
    const line = `- **${title.replace(/\*/gu, '')}** — ${uri}`
    return quote === undefined ? `${line} ${phrases.noOpening}` : `${line}\n${quoteBlock({ uri, quote, phrases })}`
  })
  const stale = staleOverview === undefined ? '' : `${phrases.staleOverview(staleOverview.uri, staleOverview.changes)}\n\n`
  const tail = more > 0 ? `\n\n${phrases.andMore(more)}` : ''
  return {
    thinking: phrases.answeringThinking,
    text: `${stale}${phrases.noFreshOverview(folderUri)}\n\n${entries.join('\n\n')}${tail}\n\n${phrases.footer}`,
    answered: true,
  }
}
