// Compaction planning (SPEC §5). Pure: which messages to summarise next, and how the summary
// replaces them. The summarising call itself is the turn machine's `compact` actor.
//
// Units: a compaction never splits an assistant message with `tool_calls` from its
// `role:"tool"` results — the group is compacted whole or not at all. System messages (the
// system prompt, host material, the retrieval catalog) and the current question are never
// compacted, nor is the latest tool exchange of the turn (the observation the next step
// builds on). Batches are taken oldest first, earlier history before this turn's exchanges,
// never mixing the two; a batch covers the overflow plus some headroom but never more than one
// summarising call can take, so a large overflow takes several rounds.
//
// The summary is a `user` message starting with `COMPACTION_SUMMARY_PREFIX`: strict providers
// accept a user message anywhere, whereas a mid-conversation system message or an assistant
// message without a preceding user turn is refused by some.
import { estimateMessagesBytes } from './context-accounting.ts'
import type { ChatMessage } from './turn-types.ts'

/**
 * Marks a summarising request: the turn machine puts it at the start of `COMPACTION_INSTRUCTION`,
 * and a model that cannot read instructions (the built-in local model) recognises the request by
 * it through `isCompactionRequest` — the one predicate, used by every side.
 */
export const COMPACTION_MARKER = '[knowagent:compaction]'

export const COMPACTION_INSTRUCTION = [
  COMPACTION_MARKER,
  'Summarise the conversation excerpt below so that it can replace the excerpt in the context of a',
  'knowledge-workspace agent. Keep, verbatim:',
  '- every file or directory URI (kb://…) that appears, with the offsets and page ranges that were read;',
  '- every decision taken and every answer given, with the URIs it relied on;',
  '- every open question, uncertainty or contradiction still unresolved;',
  '- tool errors that matter for what to do next.',
  'Drop quoted passages: the source files are unchanged and can be re-read with the `read` tool',
  '(uri, offset, limit). Write plain text, at most a few short paragraphs or a bullet list, and do not',
  'invent anything that is not in the excerpt.',
].join('\n')

/** Whether a model request is a compaction call: a system or user message carries `COMPACTION_MARKER`. */
export function isCompactionRequest(messages: ReadonlyArray<ChatMessage>): boolean {
  return messages.some((message) => (message.role === 'system' || message.role === 'user') && message.content.includes(COMPACTION_MARKER))
}

export const COMPACTION_SUMMARY_PREFIX =
  '[Summary of earlier conversation — compacted by knowagent. Source files were not changed; re-read evidence with `read` before quoting it.]'

export interface CompactionUnit {
  /** Indices of the unit's messages, ascending. */
  readonly indices: ReadonlyArray<number>
  readonly bytes: number
  readonly region: 'history' | 'turn'
  readonly isToolExchange: boolean
}

export type CompactionPlan =
  | { readonly kind: 'batch'; readonly indices: ReadonlyArray<number>; readonly bytes: number }
  | { readonly kind: 'none' }

/** Index of the current question: the question message itself when present, else the last user message with its text. */
export function findQuestionIndex({
  messages,
  question,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly question: ChatMessage
}): number {
  const byReference = messages.lastIndexOf(question)
  if (byReference >= 0) return byReference
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role === question.role && message.content === question.content) return i
  }
  return -1
}

/** Splits a conversation into compactable units (see the file comment for what is kept). */
export function groupCompactionUnits({
  messages,
  questionIndex,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly questionIndex: number
}): CompactionUnit[] {
  const units: CompactionUnit[] = []
  let index = 0
  while (index < messages.length) {
    const message = messages[index]!
    if (message.role === 'system' || index === questionIndex) {
      index++
      continue
    }
    const isToolExchange = message.role === 'assistant' && (message.tool_calls?.length ?? 0) > 0
    const { end, complete } = isToolExchange ? toolExchangeExtent(messages, index) : { end: index + 1, complete: true }
    if (complete) {
      units.push({
        indices: range(index, end),
        bytes: estimateMessagesBytes(messages.slice(index, end)),
        region: index < questionIndex ? 'history' : 'turn',
        isToolExchange,
      })
    }
    index = end
  }
  return mergeSummariesForward({ messages, units })
}

export function isCompactionSummary(message: ChatMessage | undefined): boolean {
  return message?.role === 'user' && message.content.startsWith(COMPACTION_SUMMARY_PREFIX)
}

/**
 * A previous summary joins the unit after it (same region), so a batch always brings new
 * material: re-summarising a summary alone would not shrink it.
 */
function mergeSummariesForward({
  messages,
  units,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly units: ReadonlyArray<CompactionUnit>
}): CompactionUnit[] {
  const merged: CompactionUnit[] = []
  for (const unit of units) {
    const previous = merged.at(-1)
    const summaryAlone = previous?.indices.length === 1 && isCompactionSummary(messages[previous.indices[0]!])
    if (previous && summaryAlone && previous.region === unit.region) {
      merged[merged.length - 1] = {
        indices: [...previous.indices, ...unit.indices],
        bytes: previous.bytes + unit.bytes,
        region: unit.region,
        isToolExchange: unit.isToolExchange,
      }
    } else merged.push(unit)
  }
  return merged
}

/**
 * The extent of the tool exchange starting at `start`: the assistant message and the
 * `role:"tool"` results right after it that answer its calls. Incomplete when a call has no
 * result (then it is not compactable: compacting part of it would orphan the rest).
 */
function toolExchangeExtent(
  messages: ReadonlyArray<ChatMessage>,
  start: number,
): { readonly end: number; readonly complete: boolean } {
  const assistant = messages[start]
  const pending = new Set(assistant?.role === 'assistant' ? (assistant.tool_calls ?? []).map((call) => call.id) : [])
  let end = start + 1
  while (end < messages.length) {
    const next = messages[end]!
    if (next.role !== 'tool' || !pending.has(next.tool_call_id)) break
    pending.delete(next.tool_call_id)
    end++
  }
  return { end, complete: pending.size === 0 }
}

/** The units that may be compacted now: all but the latest tool exchange of the turn. */
function compactableUnits(units: ReadonlyArray<CompactionUnit>): CompactionUnit[] {
  let latestExchange = -1
  units.forEach((unit, position) => {
    if (unit.region === 'turn' && unit.isToolExchange) latestExchange = position
  })
  return units.filter((_, position) => position !== latestExchange)
}

/**
 * The messages no compaction can take away: the system messages, the current question and the
 * latest tool exchange of the turn (everything `compactableUnits` leaves). Their size is the floor
 * of the input however much is compacted.
 */
export function incompressibleMessages({ messages, questionIndex }: { readonly messages: ReadonlyArray<ChatMessage>; readonly questionIndex: number }): ChatMessage[] {
  const compactable = new Set(compactableUnits(groupCompactionUnits({ messages, questionIndex })).flatMap((unit) => unit.indices))
  return messages.filter((_, index) => !compactable.has(index))
}

/** Bytes one summarising call can take for its batch: the input limit minus the instruction. */
export function compactionCallBudget(limit: number): number {
  return Math.max(1, limit - estimateMessagesBytes([{ role: 'system', content: COMPACTION_INSTRUCTION }]))
}

/**
 * Picks the next batch: the oldest compactable units of one region (always at least one),
 * adding units until the batch covers the overflow plus a quarter of the limit (room for the
 * summary and the next step), and never more than one summarising call can take.
 */
export function planCompactionBatch({
  messages,
  questionIndex,
  limit,
  used,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly questionIndex: number
  readonly limit: number
  /** The current input estimate. */
  readonly used: number
}): CompactionPlan {
  const candidates = compactableUnits(groupCompactionUnits({ messages, questionIndex }))
  const first = candidates[0]
  if (first === undefined) return { kind: 'none' }
  const budget = compactionCallBudget(limit)
  const wanted = used - limit + Math.floor(limit / 4)
  const chosen: CompactionUnit[] = [first]
  let bytes = first.bytes
  for (const unit of candidates.slice(1)) {
    if (bytes >= wanted || unit.region !== first.region || bytes + unit.bytes > budget) break
    chosen.push(unit)
    bytes += unit.bytes
  }
  const indices = chosen.flatMap((unit) => unit.indices)
  return { kind: 'batch', indices, bytes: estimateMessagesBytes(indices.map((i) => messages[i]!)) }
}

function range(start: number, end: number): number[] {
  return Array.from({ length: end - start }, (_, offset) => start + offset)
}

export function pickMessages({
  messages,
  indices,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly indices: ReadonlyArray<number>
}): ChatMessage[] {
  return indices.map((index) => messages[index]!)
}

/** Replaces the batch by the summary message, placed where the batch's first message was. */
export function applyCompactionSummary({
  messages,
  indices,
  summaryMessage,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly indices: ReadonlyArray<number>
  readonly summaryMessage: ChatMessage
}): ChatMessage[] {
  const removed = new Set(indices)
  const first = Math.min(...indices)
  return messages.flatMap((message, index) => {
    if (index === first) return [summaryMessage]
    return removed.has(index) ? [] : [message]
  })
}

export function buildSummaryMessage(summary: string): Extract<ChatMessage, { role: 'user' }> {
  return { role: 'user', content: `${COMPACTION_SUMMARY_PREFIX}\n\n${summary.trim()}` }
}

const KB_URI_PATTERN = /kb:\/\/[^\s"'`<>\\)\]}]+/g

/** Every `kb://` URI mentioned in some messages (contents and tool-call arguments), in first-seen order. */
export function collectKbUris(messages: ReadonlyArray<ChatMessage>): string[] {
  const uris = new Set<string>()
  const scan = (text: string | null) => {
    for (const match of (text ?? '').matchAll(KB_URI_PATTERN)) uris.add(match[0].replace(/[.,;:!?]+$/, ''))
  }
  for (const message of messages) {
    scan(message.content)
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) scan(call.function.arguments)
  }
  return [...uris]
}

/** The summary, with a list of the batch's URIs the summariser dropped appended, so none is lost. */
export function ensureUrisKept({
  batch,
  summary,
}: {
  readonly batch: ReadonlyArray<ChatMessage>
  readonly summary: string
}): string {
  const missing = collectKbUris(batch).filter((uri) => !summary.includes(uri))
  if (missing.length === 0) return summary
  return `${summary.trim()}\n\nFiles referenced earlier (re-read with \`read\`): ${missing.join(', ')}`
}

/** The batch as a plain-text transcript for the summariser. */
export function renderCompactionTranscript(batch: ReadonlyArray<ChatMessage>): string {
  return batch.map(renderTranscriptEntry).join('\n\n')
}

function renderTranscriptEntry(message: ChatMessage): string {
  switch (message.role) {
    case 'system':
      return `[system]\n${message.content}`
    case 'user':
      return `[user]\n${message.content}`
    case 'tool':
      return `[tool result ${message.tool_call_id}]\n${message.content}`
    case 'assistant': {
      const calls = (message.tool_calls ?? []).map(
        (call) => `[assistant called ${call.function.name} ${call.function.arguments} as ${call.id}]`,
      )
      return [message.content ? `[assistant]\n${message.content}` : '', ...calls].filter(Boolean).join('\n')
    }
  }
}
