// Incremental `text/event-stream` decoder following the WHATWG "event stream interpretation"
// rules (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
// Pure and dependency-free: the model client, the HTTP client tests and the browser reuse it.
//
// - bytes are decoded as UTF-8 in stream mode (a code point may be split across chunks);
//   a leading BOM is dropped
// - lines end with CRLF, LF or a bare CR, and a CR at the end of one chunk followed by an LF
//   at the start of the next is one line ending
// - `data:` lines are joined with "\n"; one space after the colon is dropped
// - an event whose data buffer is empty is not dispatched (but its `id:` still counts)
// - comment lines (starting with ":") never become events; `onComment` sees them
// - at the end of the stream a pending, unterminated event is discarded (WHATWG). With
//   `dispatchCompleteLinesOnEnd`, an event whose lines were all terminated but which lacks the
//   final blank line is dispatched; a truncated last line is still dropped.

export interface SseEvent {
  /** The `event:` name, "message" when none was given. */
  readonly event: string
  /** The `data:` lines joined with "\n". */
  readonly data: string
  /** The last event ID in effect when the event was dispatched ("" when none). */
  readonly id: string
}

export interface SseDecoderOptions {
  /** Called with the text after ":" for every comment line (keep-alives, provider notices). */
  readonly onComment?: ((text: string) => void) | undefined
  /** Called when a `retry:` field holds a valid reconnection time in milliseconds. */
  readonly onRetry?: ((milliseconds: number) => void) | undefined
  /** See the file comment. Default false, as WHATWG says. */
  readonly dispatchCompleteLinesOnEnd?: boolean | undefined
}

export interface SseDecoder {
  /** Feed raw bytes; returns the events completed by them, in order. */
  readonly push: (bytes: Uint8Array) => SseEvent[]
  /** Feed already-decoded text (e.g. from an XHR `responseText` slice). */
  readonly pushText: (text: string) => SseEvent[]
  /** The stream ended: flushes the UTF-8 decoder and applies the end-of-stream rule. */
  readonly end: () => SseEvent[]
}

const LF = 10
const CR = 13

export function createSseDecoder(options: SseDecoderOptions = {}): SseDecoder {
  // The BOM is stripped by hand (once, for bytes and text alike), so TextDecoder keeps it.
  const utf8 = new TextDecoder('utf-8', { ignoreBOM: true })
  let sawFirstText = false
  let partialLine = ''
  let skipLeadingLineFeed = false
  let dataLines: string[] | undefined
  let eventName = ''
  let lastEventId = ''
  let ended = false

  const dispatch = (out: SseEvent[]): void => {
    if (dataLines !== undefined) {
      out.push({ event: eventName === '' ? 'message' : eventName, data: dataLines.join('\n'), id: lastEventId })
    }
    dataLines = undefined
    eventName = ''
  }

  const processField = (line: string): void => {
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    switch (field) {
      case 'data':
        if (dataLines === undefined) dataLines = [value]
        else dataLines.push(value)
        return
      case 'event':
        eventName = value
        return
      case 'id':
        if (!value.includes('\u0000')) lastEventId = value
        return
      case 'retry':
        if (/^[0-9]+$/.test(value)) options.onRetry?.(Number(value))
        return
      default:
        return // unknown fields are ignored
    }
  }

  const processLine = (line: string, out: SseEvent[]): void => {
    if (line === '') dispatch(out)
    else if (line.charCodeAt(0) === 58 /* ":" */) options.onComment?.(line.slice(1))
    else processField(line)
  }

  const processText = (input: string, out: SseEvent[]): void => {
    let text = input
    if (!sawFirstText && text.length > 0) {
      sawFirstText = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    let position = 0
    if (skipLeadingLineFeed && text.length > 0) {
      skipLeadingLineFeed = false
      if (text.charCodeAt(0) === LF) position = 1
    }
    let nextCr = text.indexOf('\r', position)
    let nextLf = text.indexOf('\n', position)
    while (nextCr !== -1 || nextLf !== -1) {
      const lineEnd = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf)
      const piece = text.slice(position, lineEnd)
      const line = partialLine === '' ? piece : partialLine + piece
      partialLine = ''
      processLine(line, out)
      position = lineEnd + 1
      if (text.charCodeAt(lineEnd) === CR) {
        if (position === text.length) skipLeadingLineFeed = true
        else if (text.charCodeAt(position) === LF) position += 1
      }
      if (nextCr !== -1 && nextCr < position) nextCr = text.indexOf('\r', position)
      if (nextLf !== -1 && nextLf < position) nextLf = text.indexOf('\n', position)
    }
    if (position < text.length) partialLine += text.slice(position)
  }

  const push = (bytes: Uint8Array): SseEvent[] => {
    if (ended) throw new Error('SSE decoder: push after end')
    const out: SseEvent[] = []
    processText(utf8.decode(bytes, { stream: true }), out)
    return out
  }

  const pushText = (text: string): SseEvent[] => {
    if (ended) throw new Error('SSE decoder: push after end')
    const out: SseEvent[] = []
    processText(text, out)
    return out
  }

  const end = (): SseEvent[] => {
    if (ended) return []
    const out: SseEvent[] = []
    processText(utf8.decode(), out)
    ended = true
    partialLine = '' // an unterminated last line is never trusted
    if (options.dispatchCompleteLinesOnEnd === true) dispatch(out)
    return out
  }

  return { push, pushText, end }
}

/** Decodes a byte stream (a fetch body, a Node stream, any async iterable) into events. */
export async function* decodeSseStream(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  options: SseDecoderOptions = {},
): AsyncGenerator<SseEvent, void, undefined> {
  const decoder = createSseDecoder(options)
  for await (const bytes of iterateBytes(source)) {
    yield* decoder.push(bytes)
  }
  yield* decoder.end()
}

async function* iterateBytes(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array, void, undefined> {
  if (!isReadableStream(source)) {
    yield* source
    return
  }
  // Some browsers' ReadableStream is not async-iterable; a reader works everywhere.
  const reader = source.getReader()
  let finished = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        finished = true
        return
      }
      yield value
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined)
    reader.releaseLock()
  }
}

function isReadableStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof value === 'object' && value !== null && typeof (value as ReadableStream).getReader === 'function'
}
