// The history a turn hands back: valid to send to a strict provider in the next turn.
import type { TurnStopReason } from './turn-contract.ts'
import type { ChatMessage, FinishReason } from './turn-types.ts'

/**
 * Adds a `role:"tool"` result with `content` for every tool call that has none, right after
 * the results its assistant message already has, so no `tool_calls` entry is left unanswered.
 */
export function closeUnansweredToolCalls({
  messages,
  content,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly content: string
}): ChatMessage[] {
  const closed: ChatMessage[] = []
  let index = 0
  while (index < messages.length) {
    const message = messages[index]!
    closed.push(message)
    index++
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue
    const answered = new Set<string>()
    while (index < messages.length) {
      const next = messages[index]!
      if (next.role !== 'tool') break
      answered.add(next.tool_call_id)
      closed.push(next)
      index++
    }
    for (const call of message.tool_calls) {
      if (!answered.has(call.id)) closed.push({ role: 'tool', tool_call_id: call.id, content })
    }
  }
  return closed
}

/** The conversation to carry into the next turn: everything but system messages. */
export function historyForNextTurn(messages: ReadonlyArray<ChatMessage>): ChatMessage[] {
  return messages.filter((message) => message.role !== 'system')
}

/**
 * What a strict provider would refuse in a history: a `role:"tool"` message that does not answer
 * a call of the assistant message before it, or a call left without a result before the next
 * non-tool message. Empty when the history is valid.
 */
export function toolPairingProblems(messages: ReadonlyArray<ChatMessage>): string[] {
  const problems: string[] = []
  let open = new Set<string>()
  const closeOpenCalls = (at: number) => {
    for (const id of open) problems.push(`tool call "${id}" has no result before message ${at}`)
    open = new Set()
  }
  messages.forEach((message, index) => {
    if (message.role === 'tool') {
      if (!open.delete(message.tool_call_id)) problems.push(`message ${index}: tool result "${message.tool_call_id}" answers no open assistant tool call`)
      return
    }
    closeOpenCalls(index)
    if (message.role !== 'assistant') return
    for (const call of message.tool_calls ?? []) {
      if (open.has(call.id)) problems.push(`message ${index}: duplicate tool call id "${call.id}"`)
      open.add(call.id)
    }
  })
  closeOpenCalls(messages.length)
  return problems
}

/**
 * The note a cut answer carries in the history, as the page marks an answer the person stopped
 * (`STOPPED_ANSWER_MARKS` below): the next turn's model must not take it as complete.
 */
export const CUT_ANSWER_MARKS = {
  length: '[This answer was cut off at the output limit; the text above is incomplete.]',
  content_filter: "[This answer was stopped by the provider's content filter; the text above is incomplete.]",
} as const satisfies Partial<Record<FinishReason, string>>

/** Appends the cut mark to the last assistant message when the answer ended on `length` or `content_filter`. */
export function markCutAnswer({
  messages,
  finishReason,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly finishReason: FinishReason | undefined
}): ChatMessage[] {
  if (finishReason !== 'length' && finishReason !== 'content_filter') return [...messages]
  const at = messages.findLastIndex((message) => message.role === 'assistant')
  const answer = messages[at]
  if (answer?.role !== 'assistant') return [...messages]
  const mark = CUT_ANSWER_MARKS[finishReason]
  const text = answer.content ?? ''
  return messages.with(at, { ...answer, content: text === '' ? mark : `${text}\n\n${mark}` })
}

/**
 * The note a stopped answer carries in the history, by what stopped it: the next turn's model must
 * not take the text as complete, and should know why it ends there.
 */
export const STOPPED_ANSWER_MARKS = {
  user: '[This answer was stopped by the user; the text above is incomplete.]',
  disconnect: '[This answer was cut off: the connection ended before it was complete.]',
  shutdown: '[This answer was cut off: the server stopped before it was complete.]',
  revoked: '[This answer was stopped when the sign-in it ran under ended; the text above is incomplete.]',
} as const satisfies Record<TurnStopReason, string>

/**
 * The history of a stopped turn keeps the text of the step it stopped in, marked: the person saw
 * it, so the next turn's model sees it too (the server's history is the page's; issue 38).
 */
export function keepStoppedAnswer({
  messages,
  partial,
  reason,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly partial: string | undefined
  readonly reason: TurnStopReason
}): ChatMessage[] {
  if (partial === undefined || partial === '' || messages.length === 0) return [...messages]
  return [...messages, { role: 'assistant', content: `${partial}\n\n${STOPPED_ANSWER_MARKS[reason]}` }]
}
