// What the local model can learn from the messages it is given (and nothing else): the current
// question, and the tool calls and results of the current turn (after the question; a
// compaction summary placed there is not a question).
import { isCompactionSummary } from '../../../machines/compaction-plan.ts'
import type { ChatMessage, ToolSchema } from '../model.ts'

/** What a compiled page is a layer of (search hits and read results mark them: SearchHit.layer). */
export interface LayerView {
  readonly kind: string
  readonly of: string | null
}
export interface SearchHitView {
  readonly uri: string
  readonly offset: number
  readonly snippet: string
  readonly layer?: LayerView | undefined
}
export interface SearchResultView {
  /** The node searched (the scope when the call named none). */
  readonly uri: string | undefined
  readonly hits: ReadonlyArray<SearchHitView>
  readonly filesScanned: number | undefined
  readonly nextOffset: number | undefined
  readonly complete: boolean | undefined
}
export interface ReadResultView {
  readonly uri: string
  readonly offset: number
  readonly nextOffset: number | undefined
  readonly total: number | undefined
  readonly text: string
  /** Set when the file read is a compiled page (a summary, an overview, an abstract). */
  readonly layer?: LayerView | undefined
}
export interface LsEntryView {
  readonly name: string
  readonly kind: string
  readonly uri: string
}
/** A folder's compiled page as `ls` reports it: where it is and whether it is stale (layer-freshness.ts). */
export interface FolderLayerView {
  readonly uri: string
  readonly stale: boolean
  readonly writtenAt: string | undefined
  /** What changed since it was written, when stale. */
  readonly changes: string | undefined
}
export interface LsResultView {
  readonly uri: string | undefined
  readonly entries: ReadonlyArray<LsEntryView>
  /** Entries of the folder in all (the listing is paged). */
  readonly total: number | undefined
  /** The folder's `.abstract.md` and `.overview.md`, when it was compiled (first page only). */
  readonly abstract?: FolderLayerView | undefined
  readonly overview?: FolderLayerView | undefined
}

export interface ToolExchange<Result> {
  readonly arguments: Record<string, unknown>
  readonly result: Result | undefined
  /** The tool's error text when it failed (or its result could not be read). */
  readonly error: string | undefined
}

export interface TurnObservations {
  readonly question: string
  readonly searches: ReadonlyArray<ToolExchange<SearchResultView>>
  readonly reads: ReadonlyArray<ToolExchange<ReadResultView>>
  readonly lists: ReadonlyArray<ToolExchange<LsResultView>>
  /** Steps of this turn that called `read`. */
  readonly readRounds: number
  /** Assistant messages after the question. */
  readonly assistantStepsInTurn: number
  /** The tools each of those messages called, in order. */
  readonly steps: ReadonlyArray<ReadonlyArray<string>>
  /** Assistant messages in the whole conversation (used to make tool-call ids unique). */
  readonly assistantMessageCount: number
}

export function availableToolNames(tools: ReadonlyArray<ToolSchema> | undefined): ReadonlySet<string> {
  return new Set((tools ?? []).map((tool) => tool.function.name))
}

/** The current question: the last user message that is not a compaction summary. */
export function lastUserMessageIndex(messages: ReadonlyArray<ChatMessage>): number {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i]?.role === 'user' && !isCompactionSummary(messages[i])) return i
  }
  return -1
}

export function observeTurn(messages: ReadonlyArray<ChatMessage>): TurnObservations {
  const questionIndex = lastUserMessageIndex(messages)
  const callsById = new Map<string, { name: string; arguments: Record<string, unknown> }>()
  const searches: ToolExchange<SearchResultView>[] = []
  const reads: ToolExchange<ReadResultView>[] = []
  const lists: ToolExchange<LsResultView>[] = []
  let readRounds = 0
  let assistantStepsInTurn = 0
  const steps: string[][] = []
  for (const message of messages.slice(questionIndex + 1)) {
    if (message.role === 'assistant') {
      assistantStepsInTurn += 1
      steps.push((message.tool_calls ?? []).map((call) => call.function.name))
      if ((message.tool_calls ?? []).some((call) => call.function.name === 'read')) readRounds += 1
      for (const call of message.tool_calls ?? []) {
        callsById.set(call.id, { name: call.function.name, arguments: parseObject(call.function.arguments) ?? {} })
      }
    } else if (message.role === 'tool') {
      const call = callsById.get(message.tool_call_id)
      if (call === undefined) continue
      if (call.name === 'search') searches.push(exchange(call.arguments, message.content, readSearchResult))
      else if (call.name === 'read') reads.push(exchange(call.arguments, message.content, readReadResult))
      else if (call.name === 'ls') lists.push(exchange(call.arguments, message.content, readLsResult))
    }
  }
  const question = questionIndex === -1 ? '' : (messages[questionIndex] as { content: string }).content
  return {
    question,
    searches,
    reads,
    lists,
    readRounds,
    assistantStepsInTurn,
    steps,
    assistantMessageCount: messages.filter((m) => m.role === 'assistant').length,
  }
}

function exchange<Result>(
  args: Record<string, unknown>,
  content: string,
  read: (value: Record<string, unknown>) => Result | undefined,
): ToolExchange<Result> {
  const parsed = parseObject(content)
  if (parsed === undefined) return { arguments: args, result: undefined, error: content.trim() || 'empty tool result' }
  const error = parsed['error']
  if (error !== undefined && error !== null) {
    const text = typeof error === 'string' ? error : typeof (error as { message?: unknown }).message === 'string' ? (error as { message: string }).message : JSON.stringify(error)
    return { arguments: args, result: undefined, error: text }
  }
  const result = read(parsed)
  return result === undefined
    ? { arguments: args, result: undefined, error: 'unexpected tool result shape' }
    : { arguments: args, result, error: undefined }
}

function readSearchResult(value: Record<string, unknown>): SearchResultView | undefined {
  if (!Array.isArray(value['hits'])) return undefined
  const hits = value['hits'].flatMap((hit): SearchHitView[] =>
    isRecord(hit) && typeof hit['uri'] === 'string'
      ? [{ uri: hit['uri'], offset: numberOr(hit['offset'], 0), snippet: typeof hit['snippet'] === 'string' ? hit['snippet'] : '', layer: readLayer(hit['layer']) }]
      : [],
  )
  return {
    uri: typeof value['uri'] === 'string' ? value['uri'] : undefined,
    hits,
    filesScanned: numberOr(value['files_scanned'], undefined),
    nextOffset: numberOr(value['next_offset'], undefined),
    complete: typeof value['complete'] === 'boolean' ? value['complete'] : undefined,
  }
}

function readReadResult(value: Record<string, unknown>): ReadResultView | undefined {
  if (typeof value['uri'] !== 'string' || typeof value['text'] !== 'string') return undefined
  return {
    uri: value['uri'],
    offset: numberOr(value['offset'], 0),
    nextOffset: numberOr(value['next_offset'], undefined),
    total: numberOr(value['total'], undefined),
    text: value['text'],
    layer: readLayer(value['layer']),
  }
}

function readLayer(value: unknown): LayerView | undefined {
  if (!isRecord(value) || typeof value['kind'] !== 'string') return undefined
  return { kind: value['kind'], of: typeof value['of'] === 'string' ? value['of'] : null }
}

function readLsResult(value: Record<string, unknown>): LsResultView | undefined {
  if (!Array.isArray(value['entries'])) return undefined
  const entries = value['entries'].flatMap((entry): LsEntryView[] =>
    isRecord(entry) && typeof entry['uri'] === 'string'
      ? [{ uri: entry['uri'], name: typeof entry['name'] === 'string' ? entry['name'] : entry['uri'], kind: String(entry['kind'] ?? '') }]
      : [],
  )
  return {
    uri: typeof value['uri'] === 'string' ? value['uri'] : undefined,
    entries,
    total: numberOr(value['total'], undefined),
    abstract: readFolderLayer(value['abstract']),
    overview: readFolderLayer(value['overview']),
  }
}

function readFolderLayer(value: unknown): FolderLayerView | undefined {
  if (!isRecord(value) || typeof value['uri'] !== 'string') return undefined
  return {
    uri: value['uri'],
    stale: value['stale'] === true,
    writtenAt: typeof value['written_at'] === 'string' ? value['written_at'] : undefined,
    changes: typeof value['changes'] === 'string' ? value['changes'] : undefined,
  }
}

export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

function numberOr<T>(value: unknown, fallback: T): number | T {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const KB_URI = /kb:\/\/[^\s"'<>()[\]{}`，。；、！？：]+/gu

/** Every `kb://` URI in a text, trailing sentence punctuation removed. */
export function findKbUris(text: string): string[] {
  return [...text.matchAll(KB_URI)].map((match) => match[0].replace(/[.,;:!?]+$/u, ''))
}
