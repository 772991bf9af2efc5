// The built-in local model's decisions, from the messages and tool schemas alone:
//   question not searched yet      → search {query: keywords} (and ls, when the question names a file)
//   no hit, scan incomplete        → search the next page (at most 3 pages)
//   hits                           → read the best 1–3 files (name and snippets ranked), around their best hit
//   read, and the question is about a file named in what was read → read that file (once)
//   read results                   → answer with the best passages (BM25), or say plainly that nothing covers it
//   no `search` / no keywords      → ls the scope, read the best-named files, quote or summarise
//   no tools (text-only use)       → answer from the message contents
// It quotes only text found in tool results or messages.
import { answerFromDocuments, answerFromMaterial, summariseDocuments, type Answer } from './answer.ts'
import { hitWeights, rankCandidates, readRequests, referencedFileToRead, type ReadRequest } from './candidates.ts'
import {
  availableToolNames,
  findKbUris,
  lastUserMessageIndex,
  observeTurn,
  type SearchResultView,
  type TurnObservations,
} from './conversation.ts'
import type { ChatMessage, ToolSchema } from '../model.ts'
import { DEFAULT_TURN_LIMITS } from '../../../machines/turn-contract.ts'
import { phrasesFor, type Phrases, type SearchCoverage } from './phrases.ts'
import { fileNameOf, readDocument, type ReadDocument } from './ranking.ts'
import { summariseDocument } from './summaries.ts'
import { folderSummaryRequest } from './folder-summary-request.ts'
import { analyseQuestion, type QuestionTerms } from './terms.ts'
import {
  answerFromCompiledPages,
  answerFromOpenings,
  fileOpening,
  filesUnder,
  freshLayers,
  MAX_FILES_LISTED,
  MAX_FOLDERS_LISTED,
  MAX_LISTING_ROUNDS,
  openingReadLimit,
} from './folder-summary.ts'
import type { LsResultView } from './conversation.ts'

import { MAX_FILES_TO_READ } from './candidates.ts'
export { MAX_FILES_TO_READ }
export const MAX_SEARCH_PAGES = 3
/** Tool calls one summary of a folder makes at most (listings and reads), within the turn's default limit of 24. */
const FOLDER_SUMMARY_MAX_CALLS = DEFAULT_TURN_LIMITS.maxToolCalls - 2
/** A step cap inside the turn's own limits, so a confused plan still ends with an answer. */
const MAX_TOOL_STEPS = 6
const SEARCH_QUERY_MAX_CHARS = 200
/** Bytes of file text read in one step, within the local model's 32 768-byte-estimate window. */
const READ_BUDGET_MAX = 15_000
const READ_BUDGET_MIN = 4_500
const TURN_BYTES_TARGET = 22_000

export interface PlannedToolCall {
  readonly name: string
  readonly arguments: Record<string, unknown>
}

export type LocalStep =
  | { readonly kind: 'tool_calls'; readonly thinking: string; readonly calls: ReadonlyArray<PlannedToolCall> }
  | { readonly kind: 'answer'; readonly thinking: string; readonly text: string }

interface PlanContext {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly available: ReadonlySet<string>
  readonly observations: TurnObservations
  readonly terms: QuestionTerms
  readonly phrases: Phrases
}

export function planLocalStep({
  messages,
  tools,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSchema> | undefined
}): LocalStep {
  const available = availableToolNames(tools)
  const observations = observeTurn(messages)
  const context: PlanContext = {
    messages,
    available,
    observations,
    terms: analyseQuestion(observations.question),
    phrases: phrasesFor(observations.question),
  }
  if (!available.has('search') && !available.has('ls') && !available.has('read')) return answerFromMessages(context)
  const summary = folderSummaryRequest(observations.question)
  if (summary !== undefined && available.has('ls') && available.has('read')) return planFolderSummary({ context, folder: summary.folder })
  if (available.has('search') && context.terms.keywords.length > 0) return planSearchPath(context)
  return planListingPath(context)
}

const answer = ({ thinking, text }: Answer): LocalStep => ({ kind: 'answer', thinking, text })

// ---------------------------------------------------------------------------------------------
// search → read → answer

function planSearchPath(context: PlanContext): LocalStep {
  const { observations, terms, phrases, available } = context
  // A search of one file named by uri looks further into a file already read; the scope searches are the others.
  const searches = observations.searches.flatMap((s) => (s.result === undefined || isTargeted(s) ? [] : [s.result]))
  if (observations.reads.length > 0) return planAfterReading({ context, searches })
  const lastSearch = observations.searches.at(-1)
  if (lastSearch === undefined) {
    const calls: PlannedToolCall[] = [{ name: 'search', arguments: { query: searchQuery(terms) } }]
    if (available.has('ls') && terms.keywords.some((k) => k.proper && /\.[a-z0-9]{1,5}$/iu.test(k.text))) calls.push({ name: 'ls', arguments: {} })
    return { kind: 'tool_calls', thinking: phrases.searching(terms.keywords.map((k) => k.text)), calls }
  }
  if (searches.length === 0 && lastSearch.error !== undefined) {
    return { kind: 'answer', thinking: phrases.toolFailedThinking, text: phrases.searchFailed(lastSearch.error) }
  }
  const lastResult = searches.at(-1)
  if (searches.every((s) => s.hits.length === 0) && lastResult !== undefined && canSearchFurther(lastResult, observations.searches.length)) {
    return {
      kind: 'tool_calls',
      thinking: phrases.searchingNextPage(lastResult.filesScanned),
      calls: [{ name: 'search', arguments: { query: searchQuery(terms), offset: lastResult.nextOffset } }],
    }
  }
  const listing = observations.lists.flatMap((l) => l.result?.entries ?? [])
  const candidates = rankCandidates({ question: terms, searches, listing })
  if (candidates.length === 0 || !available.has('read') || observations.assistantStepsInTurn >= MAX_TOOL_STEPS) {
    return answer(answerFromDocuments({ question: observations.question, terms, documents: [], coverage: describeCoverage(searches), phrases }))
  }
  const requests = readRequests({ candidates, budgetBytes: readBudget(context) })
  return readStep({ requests, thinking: phrases.reading([...new Set(requests.map((r) => r.uri))]) })
}

const isTargeted = (exchange: { readonly arguments: Record<string, unknown> }): boolean => typeof exchange.arguments['uri'] === 'string'

/**
 * After the first reads: follow a reference the question is about (once), answer — or, when
 * nothing answers it, search the files read only in part and read where that search points.
 */
function planAfterReading({ context, searches }: { readonly context: PlanContext; readonly searches: ReadonlyArray<SearchResultView> }): LocalStep {
  const { observations, terms, phrases, available } = context
  const documents = documentsRead(observations)
  const coverage = describeCoverage(searches)
  const answerNow = () => answerFromDocuments({ question: observations.question, terms, documents, coverage, phrases })
  const targeted = observations.searches.filter(isTargeted)
  if (targeted.length > 0) {
    if (observations.steps.at(-1)?.includes('search') === true) {
      const requests = windowsAroundHits({ hits: targeted.flatMap((s) => s.result?.hits ?? []), documents })
      if (requests.length > 0) return readStep({ requests, thinking: phrases.reading(requests.map((r) => r.uri)) })
    }
    return answer(answerNow())
  }
  const follow = available.has('read') && observations.readRounds === 1 ? referenceToFollow({ context, searches }) : []
  if (follow.length > 0) return readStep({ requests: follow.map((uri) => ({ uri, offset: 0, limit: 6000 })), thinking: phrases.followingReference(follow) })
  const result = answerNow()
  const further = result.answered ? [] : filesToSearchFurther({ context, searches, documents })
  if (further.length === 0) return answer(result)
  return {
    kind: 'tool_calls',
    thinking: phrases.lookingFurther(further.map((f) => f.uri)),
    calls: further.map((f) => ({ name: 'search', arguments: { query: f.query, uri: f.uri } })),
  }
}

/**
 * When nothing read answers the question, the files read only in part: each searched again on its
 * own with the rarest keywords first (the search tool reports the first hits of its first terms,
 * so a long file's relevant part may not have been among them).
 */
function filesToSearchFurther({
  context,
  searches,
  documents,
}: {
  readonly context: PlanContext
  readonly searches: ReadonlyArray<SearchResultView>
  readonly documents: ReadonlyArray<ReadDocument>
}): Array<{ uri: string; query: string }> {
  const { available, observations, terms } = context
  if (!available.has('search') || !available.has('read') || observations.assistantStepsInTurn >= MAX_TOOL_STEPS - 2) return []
  const partial = new Set(documents.filter((d) => !(d.page.atStart && d.page.atEnd)).map((d) => d.uri))
  const weights = hitWeights({ keywords: terms.keywords, searches })
  const rarestFirst = [...terms.keywords].sort((a, b) => (weights.get(b.text) ?? 0) - (weights.get(a.text) ?? 0))
  const query = searchQuery({ ...terms, keywords: rarestFirst })
  return [...partial].slice(0, MAX_FILES_TO_READ).map((uri) => ({ uri, query }))
}

const FURTHER_READ_CHARS = 3000

/** Read windows around the hits of a search into one file, leaving out what was read already (at most two). */
function windowsAroundHits({
  hits,
  documents,
}: {
  readonly hits: ReadonlyArray<{ readonly uri: string; readonly offset: number }>
  readonly documents: ReadonlyArray<ReadDocument>
}): ReadRequest[] {
  // Read already: inside a page and not so near a page boundary that its paragraph was cut.
  const margin = (atEdge: boolean) => (atEdge ? 0 : 300)
  const read = (uri: string, offset: number) =>
    documents.some(
      (d) =>
        d.uri === uri &&
        offset >= d.page.offset + margin(d.page.atStart) &&
        offset < d.page.offset + codePoints(d.page.text) - margin(d.page.atEnd),
    )
  const requests: ReadRequest[] = []
  for (const hit of hits) {
    if (read(hit.uri, hit.offset) || requests.some((r) => r.uri === hit.uri && hit.offset >= r.offset && hit.offset < r.offset + r.limit)) continue
    requests.push({ uri: hit.uri, offset: Math.max(0, hit.offset - FURTHER_READ_CHARS / 3), limit: FURTHER_READ_CHARS })
  }
  return requests.slice(0, MAX_FILES_TO_READ)
}

function codePoints(text: string): number {
  let count = 0
  for (const _ of text) count += 1
  return count
}

function readStep({ requests, thinking }: { readonly requests: ReadonlyArray<ReadRequest>; readonly thinking: string }): LocalStep {
  return {
    kind: 'tool_calls',
    thinking,
    calls: requests.map((r) => ({ name: 'read', arguments: { uri: r.uri, offset: r.offset, limit: r.limit } })),
  }
}

function searchQuery(terms: QuestionTerms): string {
  let query = ''
  for (const keyword of terms.keywords) {
    const next = query === '' ? keyword.text : `${query} ${keyword.text}`
    if (Array.from(next).length > SEARCH_QUERY_MAX_CHARS) break
    query = next
  }
  return query
}

function canSearchFurther(result: SearchResultView, pagesDone: number): boolean {
  return result.complete === false && result.nextOffset !== undefined && pagesDone < MAX_SEARCH_PAGES
}

function describeCoverage(searches: ReadonlyArray<SearchResultView>): SearchCoverage | undefined {
  if (searches.length === 0) return undefined
  const scanned = searches.reduce<number | undefined>((sum, r) => (r.filesScanned === undefined ? sum : (sum ?? 0) + r.filesScanned), undefined)
  return { uri: searches[0]!.uri, filesScanned: scanned, complete: searches.at(-1)!.complete }
}

/** This turn's messages (system prompt, question, tool exchanges) as UTF-8 bytes; earlier history can be compacted, these cannot. */
function readBudget(context: PlanContext): number {
  const questionIndex = lastUserMessageIndex(context.messages)
  const turn = [...context.messages.filter((m) => m.role === 'system'), ...context.messages.slice(Math.max(0, questionIndex))]
  const used = Buffer.byteLength(JSON.stringify(turn))
  return Math.max(READ_BUDGET_MIN, Math.min(READ_BUDGET_MAX, TURN_BYTES_TARGET - used))
}

function documentsRead(observations: TurnObservations): ReadDocument[] {
  return observations.reads.flatMap(({ result }) =>
    result === undefined || result.text === ''
      ? []
      : [
          readDocument({
            uri: result.uri,
            layer: result.layer,
            page: {
              text: result.text,
              offset: result.offset,
              atStart: result.offset === 0,
              atEnd: result.nextOffset === undefined,
              name: fileNameOf(result.uri),
            },
          }),
        ],
  )
}

function referenceToFollow({ context, searches }: { readonly context: PlanContext; readonly searches: ReadonlyArray<SearchResultView> }): string[] {
  const hits = searches.flatMap((s) => s.hits)
  const pages = context.observations.reads.flatMap((r) => (r.result === undefined ? [] : [{ uri: r.result.uri, text: r.result.text }]))
  const attempted = context.observations.reads.map((r) => String(r.arguments['uri'] ?? ''))
  return referencedFileToRead({
    question: context.terms,
    weights: hitWeights({ keywords: context.terms.keywords, searches }),
    sources: [...pages, ...hits.map((hit) => ({ uri: hit.uri, text: hit.snippet }))],
    readUris: attempted,
    knownUris: [...hits.map((hit) => hit.uri), ...context.observations.lists.flatMap((l) => l.result?.entries.map((e) => e.uri) ?? [])],
    scopeUri: searches[0]?.uri ?? scopeUriOf(context.messages),
  })
}

// ---------------------------------------------------------------------------------------------
// A summary of the folder: ls → its compiled pages when up to date, else each file's opening

function planFolderSummary({ context, folder }: { readonly context: PlanContext; readonly folder: string | undefined }): LocalStep {
  const { observations, phrases } = context
  const listings = observations.lists.flatMap((l) => (l.result === undefined ? [] : [l.result]))
  const root = listings[0]
  if (observations.lists.length === 0) return { kind: 'tool_calls', thinking: phrases.listing, calls: [{ name: 'ls', arguments: {} }] }
  if (root === undefined) return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.emptyListing(observations.lists[0]?.error) }
  let target: LsResultView = root
  const named = folder === undefined ? undefined : root.entries.find((e) => e.kind === 'directory' && e.name.toLowerCase().replace(/\/$/u, '').startsWith(folder))
  if (named !== undefined) {
    const listed = listings.find((l) => l.uri === named.uri)
    if (listed === undefined) return { kind: 'tool_calls', thinking: phrases.listingFolders([named.uri]), calls: [{ name: 'ls', arguments: { uri: named.uri } }] }
    target = listed
  }
  const folderUri = target.uri ?? root.uri ?? ''
  const layers = freshLayers(target)
  const layerUris = new Set([target.abstract?.uri, target.overview?.uri].filter((uri) => uri !== undefined))
  const documents = documentsRead(observations)
  if (layers.length > 0) {
    if (observations.reads.length === 0) {
      const uris = layers.map((l) => l.uri)
      return { kind: 'tool_calls', thinking: phrases.readingCompiled(uris), calls: uris.map((uri) => ({ name: 'read', arguments: { uri, offset: 0, limit: 6000 } })) }
    }
    const pages = layers.flatMap((layer) => {
      const document = documents.find((d) => d.uri === layer.uri && d.page.offset === 0)
      return document === undefined ? [] : [{ layer, document, kind: layer === target.abstract ? ('abstract' as const) : ('overview' as const) }]
    })
    const compiled = answerFromCompiledPages({ folderUri, pages, phrases })
    if (compiled !== undefined) return answer(compiled)
  }
  const { files, unlisted, notShown } = filesUnder({ folder: target, listings })
  const fileReads = observations.reads.filter((r) => !layerUris.has(String(r.arguments['uri'] ?? '')))
  if (fileReads.length === 0) {
    if (files.length < MAX_FILES_LISTED && unlisted.length > 0 && observations.lists.length < MAX_LISTING_ROUNDS + 1) {
      const next = unlisted.slice(0, MAX_FOLDERS_LISTED).map((entry) => entry.uri)
      return { kind: 'tool_calls', thinking: phrases.listingFolders(next), calls: next.map((uri) => ({ name: 'ls', arguments: { uri } })) }
    }
    // The listings and the reads of one summary stay within a turn's default limit of 24 tool calls (a file's title is still listed unread).
    const chosen = files.slice(0, Math.max(0, Math.min(MAX_FILES_LISTED, FOLDER_SUMMARY_MAX_CALLS - observations.lists.length - observations.reads.length)))
    if (chosen.length > 0) {
      // Within what is left of the turn's window after the listings (many folders list many entries).
      const limit = Math.max(200, Math.min(openingReadLimit(chosen.length), Math.floor(readBudget(context) / chosen.length)))
      return { kind: 'tool_calls', thinking: phrases.readingOpenings(chosen.length), calls: chosen.map((f) => ({ name: 'read', arguments: { uri: f.uri, offset: 0, limit } })) }
    }
  }
  const listed = files.slice(0, MAX_FILES_LISTED)
  const openings = listed.map((file) => {
    const document = documents.find((d) => d.uri === file.uri && d.page.offset === 0)
    return document === undefined ? { uri: file.uri, title: file.name, quote: undefined } : fileOpening(document)
  })
  const more = files.length - listed.length + notShown + unlisted.length
  const staleOverview = layers.length > 0 ? undefined : [target.overview, target.abstract].find((l) => l?.stale === true)
  return answer(answerFromOpenings({ folderUri, openings, more, staleOverview, phrases }))
}

// ---------------------------------------------------------------------------------------------
// ls → read → answer (no search tool, or nothing to search for)

function planListingPath(context: PlanContext): LocalStep {
  const { observations, available, phrases, terms } = context
  if (observations.reads.length > 0) {
    const documents = documentsRead(observations)
    if (terms.keywords.length === 0) return answer(summariseDocuments({ documents, phrases }))
    return answer(answerFromDocuments({ question: observations.question, terms, documents, coverage: undefined, phrases }))
  }
  const listing = observations.lists.at(-1)
  if (listing === undefined && available.has('ls')) {
    return { kind: 'tool_calls', thinking: phrases.listing, calls: [{ name: 'ls', arguments: {} }] }
  }
  if (!available.has('read')) return answerFromListing(context)
  const files = (listing?.result?.entries ?? []).filter((entry) => entry.kind === 'file')
  const candidates = rankCandidates({ question: terms, searches: [], listing: files })
  const named = candidates.map((c) => c.uri)
  const ranked = (named.length > 0 ? named : files.map((f) => f.uri)).slice(0, 3)
  const targets = ranked.length > 0 ? ranked : listing?.result?.uri === undefined ? scopeFileUri(context) : []
  if (targets.length === 0) return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.nothingToRead }
  return {
    kind: 'tool_calls',
    thinking: phrases.reading(targets),
    calls: targets.map((uri) => ({ name: 'read', arguments: { uri, offset: 0 } })),
  }
}

function scopeUriOf(messages: ReadonlyArray<ChatMessage>): string | undefined {
  const systemText = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n')
  return findKbUris(systemText)[0]
}

/** When listing is impossible (the scope is a file, or ls failed): the scope URI named in the system prompt. */
function scopeFileUri(context: PlanContext): string[] {
  const uri = scopeUriOf(context.messages)
  return uri === undefined ? [] : [uri]
}

function answerFromListing(context: PlanContext): LocalStep {
  const listing = context.observations.lists.at(-1)
  const entries = listing?.result?.entries ?? []
  if (entries.length === 0) {
    return { kind: 'answer', thinking: context.phrases.nothingThinking, text: context.phrases.emptyListing(listing?.error) }
  }
  const lines = entries.map((entry) => `- ${entry.uri}`)
  return { kind: 'answer', thinking: context.phrases.answeringThinking, text: `${context.phrases.listingIntro}\n\n${lines.join('\n')}\n` }
}

// ---------------------------------------------------------------------------------------------
// No tools: the messages that were given (host-provided material, earlier answers)

function answerFromMessages(context: PlanContext): LocalStep {
  const { messages, phrases, terms } = context
  const questionIndex = lastUserMessageIndex(messages)
  const material = messages.flatMap((message, index) =>
    index === questionIndex || message.role === 'assistant' || typeof message.content !== 'string' || message.content.trim() === ''
      ? []
      : [message.content],
  )
  if (material.length === 0) return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.noMaterial }
  if (terms.keywords.length === 0) {
    const summary = summariseDocument({ title: '', text: material.join('\n\n'), maxChars: 1200 })
    return { kind: 'answer', thinking: phrases.answeringThinking, text: `${phrases.summaryIntro}\n\n> ${summary}\n\n${phrases.footer}` }
  }
  return answer(answerFromMaterial({ question: context.observations.question, terms, contents: material, phrases }))
}
