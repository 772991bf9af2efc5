// Source-tagged context blocks (the pre-step slot): material a host places in front of the model
// before every step — the retrieval-service catalog, for one. A block is a system message right
// after the system prompt, before the history, whose first line names its source. Placing a
// block of a source that is already there replaces it in place; content `null` removes it.
// Compaction never summarises system messages, so a block stays until its host changes it; the
// history carried into the next turn has no system messages, so a new turn starts without
// blocks and the host sees that (`visibleBlocks`) and places them again.
import type { ChatMessage } from './turn-types.ts'

export interface ContextBlock {
  /** Stable name of what the block holds, e.g. `retrieval-catalog` (letters, digits, `.`, `_`, `-`). */
  readonly source: string
  readonly content: string
}

/** A change the pre-step hook asks for: set (insert or replace) a block, or remove it with `content: null`. */
export interface ContextBlockChange {
  readonly source: string
  readonly content: string | null
}

const SOURCE_PATTERN = /^[A-Za-z0-9._-]{1,64}$/
const HEADER = /^\[knowagent:context source="([A-Za-z0-9._-]{1,64})"\]\n/

export function isValidBlockSource(source: string): boolean {
  return SOURCE_PATTERN.test(source)
}

export function renderContextBlock(block: ContextBlock): ChatMessage {
  return { role: 'system', content: `[knowagent:context source="${block.source}"]\n${block.content}` }
}

/** The block a message holds, if it is one. */
export function readContextBlock(message: ChatMessage): ContextBlock | undefined {
  if (message.role !== 'system') return undefined
  const header = HEADER.exec(message.content)
  return header ? { source: header[1]!, content: message.content.slice(header[0].length) } : undefined
}

/** The blocks currently placed, in order. */
export function visibleContextBlocks(messages: ReadonlyArray<ChatMessage>): ContextBlock[] {
  return messages.flatMap((message) => {
    const block = readContextBlock(message)
    return block ? [block] : []
  })
}

/** Where a new block goes: after the leading system messages (the system prompt and earlier blocks). */
function insertionIndex(messages: ReadonlyArray<ChatMessage>): number {
  let index = 0
  while (index < messages.length && messages[index]!.role === 'system') index++
  return index
}

/**
 * Applies the changes in order: replace a block of the same source in place, insert a new one
 * after the leading system messages, remove one whose content is null. Invalid sources are
 * refused (reported back) rather than placed.
 */
export function placeContextBlocks({
  messages,
  changes,
}: {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly changes: ReadonlyArray<ContextBlockChange>
}): { readonly messages: ReadonlyArray<ChatMessage>; readonly refused: ReadonlyArray<string> } {
  let next = [...messages]
  const refused: string[] = []
  for (const change of changes) {
    if (!isValidBlockSource(change.source)) {
      refused.push(change.source)
      continue
    }
    const at = next.findIndex((message) => readContextBlock(message)?.source === change.source)
    if (change.content === null) {
      if (at >= 0) next = [...next.slice(0, at), ...next.slice(at + 1)]
      continue
    }
    const message = renderContextBlock({ source: change.source, content: change.content })
    if (at >= 0) next[at] = message
    else next = [...next.slice(0, insertionIndex(next)), message, ...next.slice(insertionIndex(next))]
  }
  return { messages: next, refused }
}
