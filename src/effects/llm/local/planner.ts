// The built-in local model's decisions, from the messages and tool schemas alone:
//   question not searched yet      → search {query: keywords}           (uri omitted = scope)
//   no hit, scan incomplete        → search the next page (at most 3 pages)
//   hits                           → read the best 1–3 distinct URIs near their hit
//   read results                   → answer quoting the most relevant sentences with URI + offset
//   no `search` / no keywords      → ls the scope, read the best files, quote or summarise
//   no tools (text-only use)       → answer extractively from the message contents
// It quotes only text found in tool results or messages, and says plainly when nothing matched.
import { summariseExtractively } from './extractive-summary.ts'
import {
  availableToolNames,
  findKbUris,
  observeTurn,
  lastUserMessageIndex,
  type ReadResultView,
  type SearchHitView,
  type SearchResultView,
  type TurnObservations,
} from './conversation.ts'
import type { ChatMessage, ToolSchema } from '../model.ts'
import { containsCjk, createKeywordMatcher, extractKeywords, splitSentences, type KeywordMatcher } from './text-relevance.ts'

export const MAX_SEARCH_PAGES = 3
export const MAX_FILES_TO_READ = 3
const MAX_QUOTES = 6
const MAX_QUOTES_PER_FILE = 3
/** Read from a little before the hit so the quoted sentence is whole. */
const READ_LEAD_IN_CHARS = 200

export interface PlannedToolCall {
  readonly name: string
  readonly arguments: Record<string, unknown>
}

export type LocalStep =
  | { readonly kind: 'tool_calls'; readonly thinking: string; readonly calls: ReadonlyArray<PlannedToolCall> }
  | { readonly kind: 'answer'; readonly thinking: string; readonly text: string }

export function planLocalStep({
  messages,
  tools,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSchema> | undefined
}): LocalStep {
  const available = availableToolNames(tools)
  const observations = observeTurn(messages)
  const keywords = extractKeywords(observations.question)
  const context: PlanContext = {
    messages,
    available,
    observations,
    keywords,
    matcher: createKeywordMatcher(keywords),
    phrases: phrasesFor(observations.question),
  }
  if (!available.has('search') && !available.has('ls') && !available.has('read')) return answerFromMessages(context)
  if (available.has('search') && keywords.length > 0) return planSearchPath(context)
  return planListingPath(context)
}

interface PlanContext {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly available: ReadonlySet<string>
  readonly observations: TurnObservations
  readonly keywords: ReadonlyArray<string>
  readonly matcher: KeywordMatcher
  readonly phrases: Phrases
}

// ---------------------------------------------------------------------------------------------
// search → read → answer

function planSearchPath(context: PlanContext): LocalStep {
  const { observations, keywords, phrases } = context
  const query = keywords.join(' ')
  const lastSearch = observations.searches.at(-1)
  if (lastSearch === undefined) {
    return { kind: 'tool_calls', thinking: phrases.searching(keywords), calls: [{ name: 'search', arguments: { query } }] }
  }
  if (lastSearch.error !== undefined && observations.searches.every((s) => s.result === undefined)) {
    return { kind: 'answer', thinking: phrases.toolFailedThinking, text: phrases.searchFailed(lastSearch.error) }
  }
  const hits = observations.searches.flatMap((s) => s.result?.hits ?? [])
  const lastResult = lastSearch.result
  if (hits.length === 0 && lastResult !== undefined && canSearchFurther(lastResult, observations.searches.length)) {
    return {
      kind: 'tool_calls',
      thinking: phrases.searchingNextPage(lastResult.filesScanned),
      calls: [{ name: 'search', arguments: { query, offset: lastResult.nextOffset } }],
    }
  }
  if (hits.length > 0 && observations.reads.length === 0 && context.available.has('read')) {
    const targets = bestHitPerUri({ hits, matcher: context.matcher }).slice(0, MAX_FILES_TO_READ)
    return {
      kind: 'tool_calls',
      thinking: phrases.reading(targets.map((hit) => hit.uri)),
      calls: targets.map((hit) => ({
        name: 'read',
        arguments: { uri: hit.uri, offset: Math.max(0, hit.offset - READ_LEAD_IN_CHARS) },
      })),
    }
  }
  return answerFromObservations({ context, hits, coverage: describeCoverage(observations.searches) })
}

function canSearchFurther(result: SearchResultView, pagesDone: number): boolean {
  return result.complete === false && result.nextOffset !== undefined && pagesDone < MAX_SEARCH_PAGES
}

function bestHitPerUri({ hits, matcher }: { hits: ReadonlyArray<SearchHitView>; matcher: KeywordMatcher }): SearchHitView[] {
  const best = new Map<string, { hit: SearchHitView; score: number; order: number }>()
  hits.forEach((hit, order) => {
    const score = matcher.score(hit.snippet)
    const current = best.get(hit.uri)
    if (current === undefined || score > current.score) best.set(hit.uri, { hit, score, order: current?.order ?? order })
  })
  return [...best.values()].sort((a, b) => b.score - a.score || a.order - b.order).map((entry) => entry.hit)
}

interface Coverage {
  readonly filesScanned: number | undefined
  readonly complete: boolean | undefined
}

function describeCoverage(searches: TurnObservations['searches']): Coverage {
  const results = searches.flatMap((s) => (s.result === undefined ? [] : [s.result]))
  const scanned = results.reduce<number | undefined>(
    (sum, r) => (r.filesScanned === undefined ? sum : (sum ?? 0) + r.filesScanned),
    undefined,
  )
  return { filesScanned: scanned, complete: results.at(-1)?.complete }
}

// ---------------------------------------------------------------------------------------------
// ls → read → answer (no search tool, or nothing to search for)

function planListingPath(context: PlanContext): LocalStep {
  const { observations, available, phrases } = context
  if (observations.reads.length > 0) return answerFromObservations({ context, hits: [], coverage: undefined })
  const listing = observations.lists.at(-1)
  if (listing === undefined && available.has('ls')) {
    return { kind: 'tool_calls', thinking: phrases.listing, calls: [{ name: 'ls', arguments: {} }] }
  }
  if (!available.has('read')) return answerFromListing(context)
  const files = (listing?.result?.entries ?? []).filter((entry) => entry.kind === 'file')
  const ranked = files
    .map((entry, order) => ({ entry, order, score: context.matcher.score(`${entry.name} ${entry.uri}`) }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, MAX_FILES_TO_READ)
    .map((candidate) => candidate.entry.uri)
  const targets = ranked.length > 0 ? ranked : scopeFileUri(context)
  if (targets.length === 0) return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.nothingToRead }
  return {
    kind: 'tool_calls',
    thinking: phrases.reading(targets),
    calls: targets.map((uri) => ({ name: 'read', arguments: { uri, offset: 0 } })),
  }
}

/** When listing is impossible (the scope is a file, or ls failed): the scope URI named in the context. */
function scopeFileUri(context: PlanContext): string[] {
  const listedUri = context.observations.lists.at(-1)?.result?.uri
  if (listedUri !== undefined) return []
  const systemText = context.messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n')
  const [uri] = findKbUris(systemText)
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
// Answers

interface Quote {
  readonly uri: string
  readonly offset: number
  readonly text: string
  readonly fileOrder: number
}

function answerFromObservations({
  context,
  hits,
  coverage,
}: {
  readonly context: PlanContext
  readonly hits: ReadonlyArray<SearchHitView>
  readonly coverage: Coverage | undefined
}): LocalStep {
  const { phrases, matcher } = context
  const reads = context.observations.reads.flatMap((r) => (r.result === undefined ? [] : [r.result]))
  if (matcher.isEmpty) {
    return reads.length === 0
      ? { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.nothingToRead }
      : { kind: 'answer', thinking: phrases.answeringThinking, text: summariseReads({ reads, phrases }) }
  }
  const fromReads = quotesFromReads({ reads, matcher })
  const quotes = fromReads.length > 0 ? fromReads : quotesFromHits({ hits, matcher })
  if (quotes.length === 0) {
    return {
      kind: 'answer',
      thinking: phrases.nothingThinking,
      text: phrases.nothingFound({ keywords: context.keywords, coverage }),
    }
  }
  const note = coverage !== undefined && coverage.complete === false ? `\n${phrases.incompleteScan(coverage.filesScanned)}\n` : ''
  return {
    kind: 'answer',
    thinking: phrases.answeringThinking,
    text: `${phrases.intro(context.observations.question)}\n\n${quotes.map((q) => formatQuote({ quote: q, phrases })).join('\n\n')}\n${note}\n${phrases.footer}`,
  }
}

function quotesFromReads({ reads, matcher }: { reads: ReadonlyArray<ReadResultView>; matcher: KeywordMatcher }): Quote[] {
  const perFile = reads.flatMap((read, fileOrder) =>
    splitSentences(read.text)
      .map((sentence) => ({ sentence, score: matcher.score(sentence.text) }))
      .filter((candidate) => candidate.score > 0)
      .sort((a, b) => b.score - a.score || a.sentence.offset - b.sentence.offset)
      .slice(0, MAX_QUOTES_PER_FILE)
      .map(({ sentence, score }) => ({
        quote: { uri: read.uri, offset: read.offset + sentence.offset, text: sentence.text, fileOrder },
        score,
      })),
  )
  const seen = new Set<string>()
  return perFile
    .sort((a, b) => b.score - a.score || a.quote.fileOrder - b.quote.fileOrder || a.quote.offset - b.quote.offset)
    .filter(({ quote }) => {
      const key = `${quote.uri}#${quote.offset}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    .slice(0, MAX_QUOTES)
    .map(({ quote }) => quote)
    .sort(byDocumentPosition)
}

function quotesFromHits({ hits, matcher }: { hits: ReadonlyArray<SearchHitView>; matcher: KeywordMatcher }): Quote[] {
  return bestHitPerUri({ hits, matcher })
    .filter((hit) => hit.snippet.trim() !== '')
    .slice(0, MAX_QUOTES)
    .map((hit, fileOrder) => ({ uri: hit.uri, offset: hit.offset, text: hit.snippet.replace(/\s+/gu, ' ').trim(), fileOrder }))
}

function byDocumentPosition(a: Quote, b: Quote): number {
  return a.fileOrder - b.fileOrder || a.offset - b.offset
}

function formatQuote({ quote, phrases }: { quote: Quote; phrases: Phrases }): string {
  return `> ${quote.text}\n> — ${quote.uri} ${phrases.offset(quote.offset)}`
}

function summariseReads({ reads, phrases }: { reads: ReadonlyArray<ReadResultView>; phrases: Phrases }): string {
  const parts = reads.map((read) => {
    const summary = summariseExtractively({ text: read.text, maxChars: 600 })
    const quoted = summary === '' ? phrases.emptyFile : summary.split('\n').map((line) => `> ${line}`).join('\n')
    return `${quoted}\n> — ${read.uri} ${phrases.offset(read.offset)}`
  })
  return `${phrases.summaryIntro}\n\n${parts.join('\n\n')}\n\n${phrases.footer}`
}

/** No tools: quote the messages that were given (host-provided material, earlier answers). */
function answerFromMessages(context: PlanContext): LocalStep {
  const { messages, phrases, matcher } = context
  const questionIndex = lastUserMessageIndex(messages)
  const material = messages.flatMap((message, index) =>
    index === questionIndex || message.role === 'assistant' || typeof message.content !== 'string' || message.content.trim() === ''
      ? []
      : [message.content],
  )
  if (material.length === 0) return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.noMaterial }
  if (matcher.isEmpty) {
    const summary = summariseExtractively({ text: material.join('\n\n'), maxChars: 1200 })
    return { kind: 'answer', thinking: phrases.answeringThinking, text: `${phrases.summaryIntro}\n\n> ${summary}\n\n${phrases.footer}` }
  }
  const quotes = material
    .flatMap((text, messageOrder) =>
      splitSentences(text).map((sentence) => ({
        text: sentence.text,
        source: nearestUriBefore({ text, sentenceText: sentence.text }),
        score: matcher.score(sentence.text),
        messageOrder,
        offset: sentence.offset,
      })),
    )
    .filter((candidate) => candidate.score > 0)
    .sort((a, b) => b.score - a.score || a.messageOrder - b.messageOrder || a.offset - b.offset)
    .slice(0, MAX_QUOTES)
    .sort((a, b) => a.messageOrder - b.messageOrder || a.offset - b.offset)
  if (quotes.length === 0) {
    return { kind: 'answer', thinking: phrases.nothingThinking, text: phrases.nothingInMaterial(context.keywords) }
  }
  const blocks = quotes.map((q) => `> ${q.text}\n> — ${q.source ?? phrases.providedMaterial}`)
  return {
    kind: 'answer',
    thinking: phrases.answeringThinking,
    text: `${phrases.intro(context.observations.question)}\n\n${blocks.join('\n\n')}\n\n${phrases.footer}`,
  }
}

function nearestUriBefore({ text, sentenceText }: { text: string; sentenceText: string }): string | undefined {
  const position = text.indexOf(sentenceText)
  const before = position === -1 ? text : text.slice(0, position + sentenceText.length)
  return findKbUris(before).at(-1)
}

// ---------------------------------------------------------------------------------------------
// Wording (English, or Chinese when the question is)

interface Phrases {
  readonly searching: (keywords: ReadonlyArray<string>) => string
  readonly searchingNextPage: (filesScanned: number | undefined) => string
  readonly reading: (uris: ReadonlyArray<string>) => string
  readonly listing: string
  readonly answeringThinking: string
  readonly nothingThinking: string
  readonly toolFailedThinking: string
  readonly intro: (question: string) => string
  readonly summaryIntro: string
  readonly listingIntro: string
  readonly footer: string
  readonly offset: (offset: number) => string
  readonly incompleteScan: (filesScanned: number | undefined) => string
  readonly nothingFound: (input: { keywords: ReadonlyArray<string>; coverage: Coverage | undefined }) => string
  readonly nothingToRead: string
  readonly nothingInMaterial: (keywords: ReadonlyArray<string>) => string
  readonly noMaterial: string
  readonly emptyListing: (error: string | undefined) => string
  readonly emptyFile: string
  readonly providedMaterial: string
  readonly searchFailed: (error: string) => string
}

const QUESTION_DISPLAY_CHARS = 120

function shortQuestion(question: string): string {
  const single = question.replace(/\s+/gu, ' ').trim()
  const chars = Array.from(single)
  return chars.length <= QUESTION_DISPLAY_CHARS ? single : chars.slice(0, QUESTION_DISPLAY_CHARS - 1).join('') + '…'
}

const ENGLISH: Phrases = {
  searching: (keywords) => `Searching the selected scope for: ${keywords.join(', ')}.`,
  searchingNextPage: (n) => `No hit in the first ${n ?? 'page of'} files; searching the next page.`,
  reading: (uris) => `Reading the best matches: ${uris.join(', ')}.`,
  listing: 'Listing the selected scope.',
  answeringThinking: 'Quoting the most relevant passages.',
  nothingThinking: 'Nothing relevant was found.',
  toolFailedThinking: 'The search tool failed.',
  intro: (q) => `Here is what the workspace says about “${shortQuestion(q)}”:`,
  summaryIntro: 'Extractive summary of what I read:',
  listingIntro: 'The selected scope contains:',
  footer: '_Local extractive answer (no LLM): only quoted passages, check the sources._',
  offset: (offset) => `(offset ${offset})`,
  incompleteScan: (n) =>
    `Note: the search scanned ${n ?? 'some'} files and was not complete, so other files may also be relevant.`,
  nothingFound: ({ keywords, coverage }) => {
    const scope = `I found nothing about “${keywords.join(' ')}” in the selected scope`
    if (coverage?.filesScanned === undefined) return `${scope}.`
    return coverage.complete === false
      ? `${scope} (${coverage.filesScanned} files scanned; the scan was not complete, so there may be matches elsewhere).`
      : `${scope} (${coverage.filesScanned} files scanned).`
  },
  nothingToRead: 'I found no file to read in the selected scope.',
  nothingInMaterial: (keywords) => `The material I was given says nothing about “${keywords.join(' ')}”.`,
  noMaterial: 'I have no material to answer from: the local model can only quote what it is given.',
  emptyListing: (error) => (error === undefined ? 'The selected scope is empty.' : `I could not list the selected scope: ${error}`),
  emptyFile: '> (empty)',
  providedMaterial: 'the provided material',
  searchFailed: (error) => `The search failed: ${error}`,
}

const CHINESE: Phrases = {
  searching: (keywords) => `在所选范围内搜索：${keywords.join('、')}。`,
  searchingNextPage: (n) => `前 ${n ?? '一页'} 个文件中没有命中，继续搜索下一页。`,
  reading: (uris) => `读取最相关的文件：${uris.join('、')}。`,
  listing: '列出所选范围。',
  answeringThinking: '引用最相关的段落。',
  nothingThinking: '没有找到相关内容。',
  toolFailedThinking: '搜索工具出错。',
  intro: (q) => `工作区中关于“${shortQuestion(q)}”的内容：`,
  summaryIntro: '已读内容的抽取式摘要：',
  listingIntro: '所选范围包含：',
  footer: '_本地抽取式回答（未使用大模型）：仅引用原文，请核对来源。_',
  offset: (offset) => `（偏移 ${offset}）`,
  incompleteScan: (n) => `注意：搜索扫描了 ${n ?? '部分'} 个文件，扫描未完成，其他文件中可能还有相关内容。`,
  nothingFound: ({ keywords, coverage }) => {
    const scope = `在所选范围内没有找到与“${keywords.join(' ')}”相关的内容`
    if (coverage?.filesScanned === undefined) return `${scope}。`
    return coverage.complete === false
      ? `${scope}（已扫描 ${coverage.filesScanned} 个文件，扫描未完成，其他文件中可能还有）。`
      : `${scope}（已扫描 ${coverage.filesScanned} 个文件）。`
  },
  nothingToRead: '所选范围内没有可读取的文件。',
  nothingInMaterial: (keywords) => `提供的资料中没有与“${keywords.join(' ')}”相关的内容。`,
  noMaterial: '没有可供回答的资料：本地模型只能引用提供给它的内容。',
  emptyListing: (error) => (error === undefined ? '所选范围为空。' : `无法列出所选范围：${error}`),
  emptyFile: '>（空）',
  providedMaterial: '提供的资料',
  searchFailed: (error) => `搜索失败：${error}`,
}

function phrasesFor(question: string): Phrases {
  return containsCjk(question) ? CHINESE : ENGLISH
}
