// Which documents the local model reads: the files the search hits point to, ranked by the
// keywords their snippets and (strongly) their names match, each read around its best hit within
// a byte budget; and the file a passage refers to ("see incident-….md") when the question is
// about that file rather than the ones read.
import type { LsEntryView, SearchHitView, SearchResultView } from './conversation.ts'
import { isDelimitedName } from './blocks.ts'
import { fileNameOf } from './ranking.ts'
import { fileNameTerms, keywordTermsMatch, matchTerms, type Keyword, type QuestionTerms } from './terms.ts'

export interface Candidate {
  readonly uri: string
  readonly score: number
  /** Weight of the keywords the file name matches. */
  readonly nameScore: number
  /** Offset of the hit whose snippet matches the most keyword weight. */
  readonly bestOffset: number
  /** UTF-8 bytes per code point of its snippets (3 for CJK text, 1 for ASCII). */
  readonly bytesPerChar: number
}

/** Weight of a name match against a snippet match: the file name is the strongest field. */
const NAME_WEIGHT = 1.5
/** Candidates scoring less than this share of the best are not read. */
const MIN_SHARE_OF_BEST = 0.35
export const MAX_FILES_TO_READ = 3

/** Keyword weights from the search: inverse frequency over the files scanned. */
export function hitWeights({
  keywords,
  searches,
}: {
  readonly keywords: ReadonlyArray<Keyword>
  readonly searches: ReadonlyArray<SearchResultView>
}): Map<string, number> {
  const byUri = groupHits(searches.flatMap((s) => s.hits))
  const scanned = searches.reduce((sum, s) => sum + (s.filesScanned ?? 0), 0)
  const n = Math.max(scanned, byUri.size, 1)
  const idf = (df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5))
  const fileTerms = [...byUri.entries()].map(
    ([uri, hits]) => new Set([...fileNameTerms(fileNameOf(uri)), ...hits.flatMap((hit) => matchTerms(hit.snippet))]),
  )
  return new Map(keywords.map((keyword) => [keyword.text, idf(fileTerms.filter((terms) => keywordTermsMatch(keyword, terms)).length)]))
}

export function rankCandidates({
  question,
  searches,
  listing,
}: {
  readonly question: QuestionTerms
  readonly searches: ReadonlyArray<SearchResultView>
  readonly listing: ReadonlyArray<LsEntryView>
}): Candidate[] {
  const weights = hitWeights({ keywords: question.keywords, searches })
  const byUri = groupHits(searches.flatMap((s) => s.hits))
  for (const entry of listing) if (entry.kind === 'file' && !byUri.has(entry.uri)) byUri.set(entry.uri, [])
  const weightOf = (terms: ReadonlySet<string>) =>
    question.keywords.filter((k) => keywordTermsMatch(k, terms)).reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  const candidates = [...byUri.entries()].flatMap(([uri, hits], order) => {
    const nameScore = weightOf(new Set(fileNameTerms(fileNameOf(uri))))
    const snippetScores = hits.map((hit) => ({ hit, score: weightOf(new Set(matchTerms(hit.snippet))) }))
    const snippetScore = weightOf(new Set(hits.flatMap((hit) => matchTerms(hit.snippet))))
    const score = snippetScore + NAME_WEIGHT * nameScore + 0.05 * Math.min(hits.length, 3)
    if (hits.length === 0 && nameScore === 0) return []
    const best = snippetScores.sort((a, b) => b.score - a.score || a.hit.offset - b.hit.offset)[0]
    const sample = hits.map((hit) => hit.snippet).join('')
    const bytesPerChar = sample === '' ? 1 : Buffer.byteLength(sample) / Math.max(1, Array.from(sample).length)
    return [{ uri, score, nameScore, bestOffset: best?.hit.offset ?? 0, bytesPerChar, order }]
  })
  candidates.sort((a, b) => b.score - a.score || a.order - b.order)
  const top = candidates[0]?.score ?? 0
  return candidates.filter((c) => c.score >= MIN_SHARE_OF_BEST * top).map(({ order: _, ...candidate }) => candidate)
}

function groupHits(hits: ReadonlyArray<SearchHitView>): Map<string, SearchHitView[]> {
  const byUri = new Map<string, SearchHitView[]>()
  for (const hit of hits) byUri.set(hit.uri, [...(byUri.get(hit.uri) ?? []), hit])
  return byUri
}

export interface ReadRequest {
  readonly uri: string
  readonly offset: number
  readonly limit: number
}

const READ_MAX_CHARS = 6000
const READ_MIN_CHARS = 1500

/** Read calls for the best candidates: each from the start of the file when its best hit is near it, else around the hit. */
export function readRequests({
  candidates,
  budgetBytes,
}: {
  readonly candidates: ReadonlyArray<Candidate>
  readonly budgetBytes: number
}): ReadRequest[] {
  const chosen = candidates.slice(0, MAX_FILES_TO_READ)
  return chosen.flatMap((candidate) => {
    const limit = Math.max(READ_MIN_CHARS, Math.min(READ_MAX_CHARS, Math.floor(budgetBytes / chosen.length / candidate.bytesPerChar)))
    const offset = candidate.bestOffset < limit * 0.7 ? 0 : Math.max(0, candidate.bestOffset - Math.floor(limit / 3))
    const request = { uri: candidate.uri, offset, limit }
    // A CSV or TSV row read far into the file is quoted under its header row: read that too.
    return offset > 0 && isDelimitedName(fileNameOf(candidate.uri)) ? [{ uri: candidate.uri, offset: 0, limit: HEADER_READ_CHARS }, request] : [request]
  })
}

/** What is read of a CSV or TSV file's start for its header row (a longer header is not quoted). */
const HEADER_READ_CHARS = 800

// ---------------------------------------------------------------------------------------------
// References to other files

const FILE_REFERENCE = /(?:kb:\/\/[^\s`'"()<>]+|(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:md|markdown|txt|pdf|html?|docx|csv|json))(?![\w/])/giu

/** Paths and kb:// URIs of files named in a text. */
export function findFileReferences(text: string): string[] {
  return [...new Set([...text.matchAll(FILE_REFERENCE)].map((m) => m[0].replace(/[.,;:]+$/u, '')))]
}

export interface ReferenceSource {
  /** The file whose text names the reference. */
  readonly uri: string
  readonly text: string
}

/**
 * URIs to read for a file named in what was read or found, when the question is about that file
 * (its name matches more of the question than any file read, and at least half of it): the
 * named file where it is known, else the path resolved from the naming file's folder up to the
 * scope (at most two guesses; a wrong guess is a `not_found` tool result, nothing more).
 */
export function referencedFileToRead({
  question,
  weights,
  sources,
  readUris,
  knownUris,
  scopeUri,
}: {
  readonly question: QuestionTerms
  readonly weights: ReadonlyMap<string, number>
  readonly sources: ReadonlyArray<ReferenceSource>
  readonly readUris: ReadonlyArray<string>
  readonly knownUris: ReadonlyArray<string>
  readonly scopeUri: string | undefined
}): string[] {
  const total = question.keywords.reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  const nameScore = (name: string) => {
    const terms = new Set(fileNameTerms(name))
    return question.keywords.filter((k) => keywordTermsMatch(k, terms)).reduce((sum, k) => sum + (weights.get(k.text) ?? 0), 0)
  }
  const readNames = new Set(readUris.map(fileNameOf))
  const bestRead = Math.max(0, ...readUris.map((uri) => nameScore(fileNameOf(uri))))
  let best: { source: ReferenceSource; reference: string; score: number } | undefined
  for (const source of sources) {
    for (const reference of findFileReferences(source.text)) {
      const name = fileNameOf(reference)
      if (readNames.has(name)) continue
      const score = nameScore(name)
      if (score > bestRead && score * 2 >= total && (best === undefined || score > best.score)) best = { source, reference, score }
    }
  }
  if (best === undefined) return []
  return resolveReference({ reference: best.reference, from: best.source.uri, knownUris, scopeUri })
}

function resolveReference({
  reference,
  from,
  knownUris,
  scopeUri,
}: {
  readonly reference: string
  readonly from: string
  readonly knownUris: ReadonlyArray<string>
  readonly scopeUri: string | undefined
}): string[] {
  if (reference.startsWith('kb://')) return [reference]
  const path = reference.replace(/^\.\//u, '')
  const known = knownUris.find((uri) => uri.endsWith(`/${path}`))
  if (known !== undefined) return [known]
  const guesses: string[] = []
  let folder = from.slice(0, from.lastIndexOf('/') + 1)
  while (folder.startsWith('kb://') && (scopeUri === undefined || folder.startsWith(scopeUri.endsWith('/') ? scopeUri : `${scopeUri}/`) || folder === scopeUri)) {
    guesses.push(`${folder}${path}`)
    const parent = folder.slice(0, folder.slice(0, -1).lastIndexOf('/') + 1)
    if (parent === folder || parent.length <= 'kb://'.length) break
    folder = parent
  }
  return guesses.slice(0, 2)
}
