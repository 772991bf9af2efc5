// Compaction calls (SPEC §5) and how the local model answers them.
//
// A compaction request is recognised by the machine's own predicate (`isCompactionRequest`, on
// `COMPACTION_MARKER`). The batch arrives as the transcript `renderCompactionTranscript` writes
// (or, from other callers, as plain messages); either way the local model reads it back into
// messages and writes an extractive summary: what was asked, what was looked up and answered, a
// summary in the batch carried forward line by line (never nested), and a References list with
// every kb:// URI whole and the offsets seen next to it.
import {
  COMPACTION_INSTRUCTION,
  COMPACTION_MARKER,
  COMPACTION_SUMMARY_PREFIX,
  isCompactionSummary,
} from '../../../machines/compaction-plan.ts'
import type { ChatMessage } from '../model.ts'
import { findKbUris, parseObject } from './conversation.ts'
import { cutText, summariseDocument, summarisePage } from './summaries.ts'

const SUMMARY_HEADER = 'Summary of the earlier conversation (local extractive summary; re-read sources with `read` for evidence):'
const REFERENCES_HEADER = 'References (URI — offsets seen):'
const USER_CHARS = 240
const ANSWER_CHARS = 240
const TOOL_TEXT_CHARS = 160
const CONTEXT_CHARS = 200
const LISTED_NAMES = 12

/** An extractive summary of the material, ending with every URI and the offsets seen for it. */
export function summariseForCompaction(messages: ReadonlyArray<ChatMessage>): string {
  const material = materialMessages(messages)
  const calls = new Map<string, { name: string; args: Record<string, unknown> | undefined }>()
  const lines: string[] = []
  const references = new ReferenceCollector()
  for (const message of material) {
    if (isCompactionSummary(message)) {
      const earlier = parseSummary(message.content as string)
      lines.push(...earlier.lines)
      references.merge(earlier.references)
    } else if (message.role === 'assistant') {
      references.addText(message.content ?? '')
      for (const call of message.tool_calls ?? []) {
        const args = parseObject(call.function.arguments)
        calls.set(call.id, { name: call.function.name, args })
        references.addJson(args, { isSearch: call.function.name === 'search' })
        // A read is described by its result (URI and range); other calls by what they asked.
        if (call.function.name !== 'read') lines.push(`- Assistant called ${call.function.name} ${describeArguments(args, call.function.arguments)}`)
      }
      if (message.content !== null && message.content.trim() !== '') lines.push(`- Assistant answered: ${answerGist(message.content)}`)
    } else if (message.role === 'tool') {
      const result = parseObject(message.content)
      references.addJson(result, { isSearch: result !== undefined && Array.isArray(result['hits']) })
      references.addText(mentionsIn(result, message.content))
      lines.push(describeToolResult({ call: calls.get(message.tool_call_id), content: message.content, result }))
    } else if (message.role === 'user') {
      references.addText(message.content)
      lines.push(`- User asked: ${cutText(oneLine(message.content), USER_CHARS)}`)
    } else {
      references.addText(message.content)
      lines.push(`- Context: ${cutText(oneLine(summariseDocument({ title: '', text: message.content, maxChars: CONTEXT_CHARS })), CONTEXT_CHARS)}`)
    }
  }
  const referenceLines = references.lines()
  return [SUMMARY_HEADER, ...lines, ...(referenceLines.length > 0 ? ['', REFERENCES_HEADER, ...referenceLines] : [])].join('\n')
}

// ---------------------------------------------------------------------------------------------
// The batch

/** The messages to summarise: the instruction dropped, a transcript read back into messages. */
function materialMessages(messages: ReadonlyArray<ChatMessage>): ChatMessage[] {
  return messages.flatMap((message): ChatMessage[] => {
    if (message.role !== 'system' && message.role !== 'user') return [message]
    if (message.content.includes(COMPACTION_MARKER)) {
      const rest = message.content.split(COMPACTION_INSTRUCTION).join('').split(COMPACTION_MARKER).join('').trim()
      return rest === '' ? [] : materialMessages([{ role: message.role, content: rest }])
    }
    if (message.role === 'user' && TRANSCRIPT_START.test(message.content)) return parseTranscript(message.content)
    return [message]
  })
}

const TRANSCRIPT_START = /^\[(?:system|user|assistant|tool result [^\]\n]+)\]\n|^\[assistant called \S+ /u
const ENTRY_START = /\n\n(?=\[(?:system|user|assistant|tool result [^\]\n]+)\]\n|\[assistant called \S+ )/u
const CALL_LINE = /^\[assistant called (\S+) (.*) as (\S+)\]$/u

/** Reads back the transcript of `renderCompactionTranscript` (src/machines/compaction-plan.ts). */
export function parseTranscript(transcript: string): ChatMessage[] {
  return transcript.split(ENTRY_START).flatMap((entry): ChatMessage[] => {
    const header = /^\[(system|user|assistant|tool result ([^\]\n]+))\]\n/u.exec(entry)
    if (header === null) {
      const calls = entry.split('\n').flatMap((line) => callOf(line))
      return calls.length > 0 ? [{ role: 'assistant', content: null, tool_calls: calls }] : [{ role: 'user', content: entry }]
    }
    const body = entry.slice(header[0].length)
    if (header[2] !== undefined) return [{ role: 'tool', tool_call_id: header[2], content: body }]
    if (header[1] === 'system') return [{ role: 'system', content: body }]
    if (header[1] === 'user') return [{ role: 'user', content: body }]
    const lines = body.split('\n')
    let firstCall = lines.length
    while (firstCall > 0 && CALL_LINE.test(lines[firstCall - 1]!)) firstCall -= 1
    const calls = lines.slice(firstCall).flatMap((line) => callOf(line))
    const content = lines.slice(0, firstCall).join('\n')
    return [{ role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) }]
  })
}

function callOf(line: string) {
  const call = CALL_LINE.exec(line)
  return call === null ? [] : [{ id: call[3]!, type: 'function' as const, function: { name: call[1]!, arguments: call[2]! } }]
}

// ---------------------------------------------------------------------------------------------
// Lines

function describeArguments(args: Record<string, unknown> | undefined, raw: string): string {
  if (args === undefined) return cutText(oneLine(raw), TOOL_TEXT_CHARS)
  const parts = Object.entries(args).map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
  return parts.join(' ')
}

/**
 * An answer's own words, whole URIs kept; its quotes are not repeated (their URIs and offsets are
 * in the References), nor a line that only introduces them ("Here is what … says about …:").
 */
function answerGist(content: string): string {
  const lines = content.split('\n')
  const own = lines
    .filter((line, i) => {
      if (line.startsWith('>') || /^_.*_$/u.test(line.trim())) return false
      const next = lines.slice(i + 1).find((l) => l.trim() !== '')
      return !(/[:：]\s*$/u.test(line) && next?.startsWith('>'))
    })
    .join('\n')
    .trim()
  const cited = [...content.matchAll(/^> — (kb:\/\/\S+) (?:\(offset (\d+)\)|（偏移 (\d+)）)$/gmu)].map((m) => `${m[1]} @${m[2] ?? m[3]}`)
  const gist = cutText(oneLine(summariseDocument({ title: '', text: own, maxChars: ANSWER_CHARS })), ANSWER_CHARS)
  if (cited.length === 0) return gist
  const quotes = `quoting ${cited.join(', ')}`
  return gist === '' ? quotes : `${gist} (${quotes})`
}

function describeToolResult({
  call,
  content,
  result,
}: {
  readonly call: { readonly name: string; readonly args: Record<string, unknown> | undefined } | undefined
  readonly content: string
  readonly result: Record<string, unknown> | undefined
}): string {
  const label = call?.name ?? 'tool'
  const asked = call?.name === 'read' && call.args !== undefined ? ` ${describeArguments(call.args, '')}` : ''
  if (result === undefined) return `- ${label}${asked} result: ${cutText(oneLine(content), TOOL_TEXT_CHARS)}`
  if (result['error'] !== undefined) return `- ${label}${asked} failed: ${cutText(oneLine(JSON.stringify(result['error'])), TOOL_TEXT_CHARS)}`
  if (Array.isArray(result['hits'])) {
    const files = new Set(result['hits'].flatMap((hit) => (isRecord(hit) && typeof hit['uri'] === 'string' ? [hit['uri']] : [])))
    const scan = `${String(result['files_scanned'] ?? '?')} files scanned, ${result['complete'] === true ? 'complete' : 'not complete'}`
    return `- ${label}: ${result['hits'].length} hit(s) in ${files.size} file(s), ${scan}`
  }
  if (typeof result['text'] === 'string' && typeof result['uri'] === 'string') {
    const offset = typeof result['offset'] === 'number' ? result['offset'] : 0
    const range = `offset ${offset}–${String(result['next_offset'] ?? 'end')} of ${String(result['total'] ?? '?')}`
    const page = { text: result['text'], offset, atStart: offset === 0, atEnd: typeof result['next_offset'] !== 'number', name: String(result['uri']) }
    const gist = cutText(oneLine(summarisePage({ page, maxChars: TOOL_TEXT_CHARS })), TOOL_TEXT_CHARS)
    return `- ${label} ${result['uri']} ${range}: ${gist === '' ? '(empty)' : gist}`
  }
  if (Array.isArray(result['entries'])) {
    const names = result['entries'].flatMap((entry) => (isRecord(entry) && typeof entry['name'] === 'string' ? [entry['name']] : []))
    const more = names.length > LISTED_NAMES ? ` … (+${names.length - LISTED_NAMES})` : ''
    return `- ${label} ${String(result['uri'] ?? '')}: ${names.slice(0, LISTED_NAMES).join(', ')}${more}`
  }
  return `- ${label} result: ${cutText(oneLine(content), TOOL_TEXT_CHARS)}`
}

/**
 * The text of a tool result whose kb:// URIs count as mentioned: a page read, less a URI the page
 * boundary may have cut; never search snippets, which are cut windows (their hits' URIs are kept).
 */
function mentionsIn(result: Record<string, unknown> | undefined, content: string): string {
  if (result === undefined) return content
  if (typeof result['text'] !== 'string') return ''
  const text = result['text']
  return typeof result['next_offset'] === 'number' ? text.replace(/kb:\/\/\S*$/u, '') : text
}

// ---------------------------------------------------------------------------------------------
// An earlier summary, carried forward

interface ParsedSummary {
  readonly lines: ReadonlyArray<string>
  readonly references: ReadonlyMap<string, ReadonlySet<number>>
}

const REFERENCE_LINE = /^- (kb:\/\/\S+)(?: — ([\d, ]+))?$/u

/** The lines and references of a summary written earlier (by this summariser or by another model). */
function parseSummary(content: string): ParsedSummary {
  const body = content.startsWith(COMPACTION_SUMMARY_PREFIX) ? content.slice(COMPACTION_SUMMARY_PREFIX.length) : content
  const lines: string[] = []
  const references = new Map<string, Set<number>>()
  const addReference = (uri: string, offsets: ReadonlyArray<number>) => {
    const known = references.get(uri) ?? new Set<number>()
    for (const offset of offsets) known.add(offset)
    references.set(uri, known)
  }
  let inReferences = false
  for (const line of body.trim().split('\n')) {
    if (line === SUMMARY_HEADER || line.trim() === '') continue
    if (line === REFERENCES_HEADER) {
      inReferences = true
      continue
    }
    const reference = REFERENCE_LINE.exec(line)
    if (inReferences && reference !== null) {
      addReference(reference[1]!, (reference[2] ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '').map(Number))
    } else if (line.startsWith('Files referenced earlier')) {
      for (const uri of findKbUris(line)) addReference(uri, [])
    } else {
      for (const uri of findKbUris(line)) addReference(uri, [])
      lines.push(line.startsWith('- ') ? line : `- ${line}`)
    }
  }
  return { lines, references }
}

// ---------------------------------------------------------------------------------------------
// References

/** Every kb:// URI seen, whole, with the offsets attached to it (JSON fields or "offset N" in text). */
class ReferenceCollector {
  private readonly offsetsByUri = new Map<string, Set<number>>()

  addText(text: string): void {
    for (const match of text.matchAll(/kb:\/\/\S+/gu)) {
      const [uri] = findKbUris(match[0])
      if (uri === undefined) continue
      const end = (match.index ?? 0) + match[0].length
      const offset = /^\W{0,3}(?:offset|偏移|@)\s*(\d+)/iu.exec(text.slice(end, end + 40))?.[1]
      this.add(uri, offset === undefined ? undefined : Number(offset))
    }
  }

  addJson(value: unknown, { isSearch }: { readonly isSearch: boolean }): void {
    if (Array.isArray(value)) {
      for (const item of value) this.addJson(item, { isSearch })
      return
    }
    if (!isRecord(value)) return
    if (typeof value['uri'] === 'string') {
      // A search's own `offset` counts files (paging), not characters; its hits' offsets are characters.
      const offset = !isSearch && typeof value['offset'] === 'number' ? value['offset'] : undefined
      const [uri] = findKbUris(value['uri'])
      if (uri !== undefined) this.add(uri, offset)
    }
    // a search's `matches_ahead` are files it points to by their place in the scan, not characters
    for (const [key, nested] of Object.entries(value)) if (typeof nested === 'object' && key !== 'error') this.addJson(nested, { isSearch: isSearch && key === 'matches_ahead' })
  }

  merge(references: ReadonlyMap<string, ReadonlySet<number>>): void {
    for (const [uri, offsets] of references) {
      if (offsets.size === 0) this.add(uri, undefined)
      for (const offset of offsets) this.add(uri, offset)
    }
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function oneLine(text: string): string {
  return text.replace(/\s+/gu, ' ').trim()
}
