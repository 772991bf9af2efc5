// Compaction calls (SPEC §5) and how the local model answers them.
//
// A compaction request is recognised by the machine's own predicate (`isCompactionRequest`, on
// `COMPACTION_MARKER`, both from src/machines/compaction-plan.ts). Every other message, and any
// text after the instruction in the same message, is the material to summarise. A real model
// reads the instruction; the local model writes an extractive summary that keeps every kb://
// URI and every offset it saw.
import { summariseExtractively } from './summaries.ts'
import { findKbUris, parseObject } from './conversation.ts'
import { COMPACTION_INSTRUCTION, COMPACTION_MARKER } from '../../../machines/compaction-plan.ts'
import type { ChatMessage } from '../model.ts'


const USER_CHARS = 300
const ASSISTANT_CHARS = 400
const TOOL_TEXT_CHARS = 240
const CONTEXT_CHARS = 300
const LISTED_NAMES = 20

/** An extractive summary of the material messages, ending with every URI and offset seen. */
export function summariseForCompaction(messages: ReadonlyArray<ChatMessage>): string {
  const material = materialMessages(messages)
  const callNames = new Map<string, string>()
  const lines: string[] = []
  const references = new ReferenceCollector()
  for (const message of material) {
    references.addText(message.content ?? '')
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) {
        callNames.set(call.id, call.function.name)
        references.addJson(parseObject(call.function.arguments))
        lines.push(`- Assistant called ${call.function.name} ${call.function.arguments}`)
      }
      if (message.content !== null && message.content.trim() !== '') {
        lines.push(`- Assistant: ${oneLine(summariseExtractively({ text: message.content, maxChars: ASSISTANT_CHARS }))}`)
      }
    } else if (message.role === 'tool') {
      const result = parseObject(message.content)
      references.addJson(result)
      lines.push(describeToolResult({ name: callNames.get(message.tool_call_id), content: message.content, result }))
    } else if (message.role === 'user') {
      lines.push(`- User: ${oneLine(cut(message.content, USER_CHARS))}`)
    } else {
      lines.push(`- Context: ${oneLine(summariseExtractively({ text: message.content, maxChars: CONTEXT_CHARS }))}`)
    }
  }
  const referenceLines = references.lines()
  return [
    'Summary of the earlier conversation (local extractive summary; re-read sources with `read` for evidence):',
    ...lines,
    ...(referenceLines.length > 0 ? ['', 'References (URI — offsets seen):', ...referenceLines] : []),
  ].join('\n')
}

type MaterialMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | Extract<ChatMessage, { role: 'assistant' }>
  | Extract<ChatMessage, { role: 'tool' }>

function materialMessages(messages: ReadonlyArray<ChatMessage>): MaterialMessage[] {
  return messages.flatMap((message): MaterialMessage[] => {
    if ((message.role === 'system' || message.role === 'user') && message.content.includes(COMPACTION_MARKER)) {
      const rest = message.content.split(COMPACTION_INSTRUCTION).join('').split(COMPACTION_MARKER).join('').trim()
      return rest === '' ? [] : [{ role: message.role, content: rest }]
    }
    return [message]
  })
}

function describeToolResult({
  name,
  content,
  result,
}: {
  readonly name: string | undefined
  readonly content: string
  readonly result: Record<string, unknown> | undefined
}): string {
  const label = name ?? 'tool'
  if (result === undefined) return `- ${label} result: ${oneLine(cut(content, TOOL_TEXT_CHARS))}`
  if (result['error'] !== undefined) return `- ${label} failed: ${oneLine(cut(JSON.stringify(result['error']), TOOL_TEXT_CHARS))}`
  if (Array.isArray(result['hits'])) {
    const hits = result['hits'].flatMap((hit) =>
      typeof hit === 'object' && hit !== null && typeof (hit as { uri?: unknown }).uri === 'string'
        ? [`${(hit as { uri: string }).uri} (offset ${String((hit as { offset?: unknown }).offset ?? 0)})`]
        : [],
    )
    const scan = `${String(result['files_scanned'] ?? '?')} files scanned, ${result['complete'] === true ? 'complete' : 'not complete'}`
    return `- ${label}: ${hits.length} hit(s), ${scan}${hits.length > 0 ? `: ${hits.join(', ')}` : ''}`
  }
  if (typeof result['text'] === 'string' && typeof result['uri'] === 'string') {
    const range = `offset ${String(result['offset'] ?? 0)}–${String(result['next_offset'] ?? 'end')} of ${String(result['total'] ?? '?')}`
    const gist = oneLine(summariseExtractively({ text: result['text'], maxChars: TOOL_TEXT_CHARS }))
    return `- ${label} ${result['uri']} ${range}: ${gist === '' ? '(empty)' : gist}`
  }
  if (Array.isArray(result['entries'])) {
    const names = result['entries'].flatMap((entry) =>
      typeof entry === 'object' && entry !== null && typeof (entry as { name?: unknown }).name === 'string'
        ? [(entry as { name: string }).name]
        : [],
    )
    const more = names.length > LISTED_NAMES ? ` … (+${names.length - LISTED_NAMES})` : ''
    return `- ${label} ${String(result['uri'] ?? '')}: ${names.slice(0, LISTED_NAMES).join(', ')}${more}`
  }
  return `- ${label} result: ${oneLine(cut(content, TOOL_TEXT_CHARS))}`
}

/** Every kb:// URI seen, with the offsets attached to it (JSON fields or "offset N" in text). */
class ReferenceCollector {
  private readonly offsetsByUri = new Map<string, Set<number>>()

  addText(text: string): void {
    for (const match of text.matchAll(/kb:\/\/\S+/gu)) {
      const [uri] = findKbUris(match[0])
      if (uri === undefined) continue
      const after = text.slice((match.index ?? 0) + match[0].length, (match.index ?? 0) + match[0].length + 40)
      const offset = /^\W{0,3}(?:offset|偏移|@)\s*(\d+)/iu.exec(after)?.[1]
      this.add(uri, offset === undefined ? undefined : Number(offset))
    }
  }

  addJson(value: unknown): void {
    if (Array.isArray(value)) {
      for (const item of value) this.addJson(item)
      return
    }
    if (typeof value !== 'object' || value === null) return
    const record = value as Record<string, unknown>
    if (typeof record['uri'] === 'string') {
      // A search result's own `offset` counts files (paging), not characters.
      const isSearchPage = Array.isArray(record['hits'])
      this.add(record['uri'], !isSearchPage && typeof record['offset'] === 'number' ? record['offset'] : undefined)
      if (!isSearchPage && typeof record['next_offset'] === 'number') this.add(record['uri'], record['next_offset'])
    }
    for (const nested of Object.values(record)) if (typeof nested === 'object') this.addJson(nested)
  }

  lines(): string[] {
    return [...this.offsetsByUri.entries()].map(([uri, offsets]) =>
      offsets.size === 0 ? `- ${uri}` : `- ${uri} — ${[...offsets].sort((a, b) => a - b).join(', ')}`,
    )
  }

  private add(uri: string, offset: number | undefined): void {
    const offsets = this.offsetsByUri.get(uri) ?? new Set<number>()
    if (offset !== undefined && Number.isFinite(offset)) offsets.add(offset)
    this.offsetsByUri.set(uri, offsets)
  }
}

function cut(text: string, maxChars: number): string {
  const chars = Array.from(text)
  return chars.length <= maxChars ? text : chars.slice(0, maxChars - 1).join('') + '…'
}

function oneLine(text: string): string {
  return text.replace(/\s+/gu, ' ').trim()
}
