// `knowagent/testing`: chat-completions streams (SSE) built from a compact description, for the
// scripted provider (scripted-provider.ts) and for tests that parse a stream themselves.
//
//   chatCompletionSse([{ text: 'Hi' }, { finish: 'stop' }, 'done'])   // three `data:` frames
//   splitBytes(body, [3, 7])                                        // cut anywhere, even inside a code point

export type ChunkSpec =
  | { readonly text: string }
  | { readonly thinking: string; readonly field?: 'reasoning_content' | 'reasoning' }
  | {
      readonly toolCall: {
        readonly index?: number
        readonly id?: string
        readonly name?: string
        /** A string fragment, or an object (as Ollama sends). */
        readonly arguments?: string | Record<string, unknown>
      }
    }
  | { readonly finish: string }
  | { readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number; readonly total_tokens?: number } }
  /** A whole chunk object written as given. */
  | { readonly chunk: Record<string, unknown> }
  /** An SSE event written verbatim (comments, `event: error`, broken JSON …). */
  | { readonly raw: string }
  | 'done'

export interface ChunkStreamOptions {
  readonly id?: string
  readonly model?: string
  readonly created?: number
  readonly lineEnding?: '\n' | '\r\n' | '\r'
}

/** One SSE frame (`data: <json>` + blank line) per spec. */
export function chatCompletionSse(specs: ReadonlyArray<ChunkSpec>, options: ChunkStreamOptions = {}): string {
  const eol = options.lineEnding ?? '\n'
  const base = {
    id: options.id ?? 'chatcmpl-scripted',
    object: 'chat.completion.chunk',
    created: options.created ?? 1_700_000_000,
    model: options.model ?? 'scripted-model',
  }
  const frame = (data: string): string => `data: ${data}${eol}${eol}`
  const choiceChunk = (delta: Record<string, unknown>, finishReason: string | null = null): string =>
    frame(JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason }] }))
  return specs
    .map((spec) => {
      if (spec === 'done') return frame('[DONE]')
      if ('text' in spec) return choiceChunk({ content: spec.text })
      if ('thinking' in spec) return choiceChunk({ [spec.field ?? 'reasoning_content']: spec.thinking })
      if ('toolCall' in spec) {
        const { index, id, name, arguments: args } = spec.toolCall
        const fn: Record<string, unknown> = {}
        if (name !== undefined) fn['name'] = name
        if (args !== undefined) fn['arguments'] = args
        const call: Record<string, unknown> = { function: fn }
        if (index !== undefined) call['index'] = index
        if (id !== undefined) {
          call['id'] = id
          call['type'] = 'function'
        }
        return choiceChunk({ tool_calls: [call] })
      }
      if ('finish' in spec) return choiceChunk({}, spec.finish)
      if ('usage' in spec) return frame(JSON.stringify({ ...base, choices: [], usage: spec.usage }))
      if ('chunk' in spec) return frame(JSON.stringify(spec.chunk))
      return spec.raw
    })
    .join('')
}

/** A streamed text answer split into pieces of `chunkChars`, finished with stop + [DONE]. */
export function textAnswerSse(text: string, options: { readonly chunkChars?: number } & ChunkStreamOptions = {}): string {
  const pieces = Array.from(text)
  const size = options.chunkChars ?? 8
  const specs: ChunkSpec[] = []
  for (let i = 0; i < pieces.length; i += size) specs.push({ text: pieces.slice(i, i + size).join('') })
  return chatCompletionSse([...specs, { finish: 'stop' }, 'done'], options)
}

/** A streamed tool-call step: each call's arguments split in two deltas, then tool_calls + [DONE]. */
export function toolCallsSse(
  calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: Record<string, unknown> }>,
  options: ChunkStreamOptions = {},
): string {
  const specs: ChunkSpec[] = calls.flatMap((call, index) => {
    const json = JSON.stringify(call.arguments)
    const half = Math.floor(json.length / 2)
    return [
      { toolCall: { index, id: call.id, name: call.name, arguments: json.slice(0, half) } },
      { toolCall: { index, arguments: json.slice(half) } },
    ]
  })
  return chatCompletionSse([...specs, { finish: 'tool_calls' }, 'done'], options)
}

/** Cuts `body` at the given byte offsets (any offset: inside a code point, between CR and LF). */
export function splitBytes(body: string | Uint8Array, offsets: ReadonlyArray<number>): Uint8Array[] {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const cuts = [...new Set(offsets.filter((o) => o > 0 && o < bytes.length))].sort((a, b) => a - b)
  const parts: Uint8Array[] = []
  let start = 0
  for (const cut of [...cuts, bytes.length]) {
    parts.push(bytes.slice(start, cut))
    start = cut
  }
  return parts.filter((part) => part.length > 0)
}
