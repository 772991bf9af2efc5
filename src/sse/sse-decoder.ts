// Incremental `text/event-stream` decoder following the WHATWG "event stream interpretation"
// rules (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
// Pure and dependency-free: the model client, the HTTP client tests and the browser reuse it.
//
// - bytes are decoded as UTF-8 line by line (a code point may be split across chunks: lines are
//   cut on bytes, and CR/LF never occur inside a UTF-8 sequence); a leading BOM is dropped
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
  /**
   * Receive each event as it completes instead of in the arrays `push` and `end` return (those
   * are then always empty): no array per chunk, for the hot path of the model client.
   */
  readonly onEvent?: ((event: SseEvent) => void) | undefined
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
const NO_EVENTS: SseEvent[] = Object.freeze([]) as unknown as SseEvent[]

// Node's Buffer decodes a byte range without a view object and exactly as TextDecoder does
// (U+FFFD for every malformed sequence); elsewhere TextDecoder decodes a subarray.
type NodeBufferLike = Uint8Array & { toString: (encoding: 'utf8', start: number, end: number) => string }
interface NodeBufferClass {
  isBuffer: (value: unknown) => boolean
  allocUnsafe: (size: number) => Uint8Array
}
const NodeBuffer = (globalThis as { Buffer?: NodeBufferClass }).Buffer

/** The line starts with `data:` (a BOM starts with 0xEF, so the first line is no exception). */
function isDataLine(bytes: Uint8Array, start: number, end: number): boolean {
  return end - start >= 5 && bytes[start] === 100 && bytes[start + 1] === 97 && bytes[start + 2] === 116 && bytes[start + 3] === 97 && bytes[start + 4] === 58
}

/**
 * Lines are cut on the bytes (CR and LF never occur inside a UTF-8 sequence) and each complete
 * line is decoded once, so a chunk is never decoded as a whole, sliced into lines and glued back
 * together; a line split across chunks waits in one reused byte buffer.
 */
export function createSseDecoder(options: SseDecoderOptions = {}): SseDecoder {
  const textDecoder = new TextDecoder('utf-8', { ignoreBOM: true })
  const allocate = (size: number): Uint8Array => (NodeBuffer ? NodeBuffer.allocUnsafe(size) : new Uint8Array(size))
  const decodeRange = (bytes: Uint8Array, start: number, end: number): string =>
    NodeBuffer?.isBuffer(bytes) ? (bytes as NodeBufferLike).toString('utf8', start, end) : textDecoder.decode(bytes.subarray(start, end))
  const encoder = new TextEncoder()
  const sink = options.onEvent
  let out: SseEvent[] | undefined
  /** The start of a line not terminated yet (bytes of earlier chunks). */
  let pending = allocate(256)
  let pendingLength = 0
  let skipLeadingLineFeed = false
  let firstLine = true
  let data: string | undefined
  let eventName = ''
  let lastEventId = ''
  let ended = false

  const dispatch = (): void => {
    if (data !== undefined) {
      const event: SseEvent = { event: eventName === '' ? 'message' : eventName, data, id: lastEventId }
      if (sink !== undefined) sink(event)
      else (out ??= []).push(event)
    }
    data = undefined
    eventName = ''
  }

  const appendData = (value: string): void => {
    data = data === undefined ? value : `${data}\n${value}`
  }

  const processField = (line: string): void => {
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const valueStart = colon === -1 ? line.length : line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1
    switch (field) {
      case 'data':
        appendData(line.slice(valueStart))
        return
      case 'event':
        eventName = line.slice(valueStart)
        return
      case 'id': {
        const value = line.slice(valueStart)
        if (!value.includes('\u0000')) lastEventId = value
        return
      }
      case 'retry': {
        const value = line.slice(valueStart)
        if (/^[0-9]+$/.test(value)) options.onRetry?.(Number(value))
        return
      }
      default:
        return // unknown fields are ignored
    }
  }

  const processLine = (bytes: Uint8Array, start: number, end: number): void => {
    const first = firstLine
    firstLine = false
    if (start === end) return dispatch()
    if (isDataLine(bytes, start, end)) {
      // The common line: only its value is decoded (no field split, no second string).
      const valueStart = start + 5 < end && bytes[start + 5] === 32 ? start + 6 : start + 5
      return appendData(decodeRange(bytes, valueStart, end))
    }
    let line = decodeRange(bytes, start, end)
    if (first && line.charCodeAt(0) === 0xfeff) {
      line = line.slice(1) // one leading BOM is dropped (it may have been split across chunks)
      if (line === '') return dispatch()
    }
    if (line.charCodeAt(0) === 58 /* ":" */) options.onComment?.(line.slice(1))
    else processField(line)
  }

  const keepPending = (bytes: Uint8Array, start: number, end: number): void => {
    const needed = pendingLength + (end - start)
    if (needed > pending.length) {
      const grown = allocate(Math.max(needed, pending.length * 2))
      grown.set(pending.subarray(0, pendingLength))
      pending = grown
    }
    pending.set(bytes.subarray(start, end), pendingLength)
    pendingLength = needed
  }

  const processBytes = (bytes: Uint8Array): void => {
    const length = bytes.length
    let position = 0
    if (skipLeadingLineFeed && length > 0) {
      skipLeadingLineFeed = false
      if (bytes[0] === LF) position = 1
    }
    let nextCr = bytes.indexOf(CR, position)
    let nextLf = bytes.indexOf(LF, position)
    while (nextCr !== -1 || nextLf !== -1) {
      const lineEnd = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf)
      if (pendingLength === 0) processLine(bytes, position, lineEnd)
      else {
        keepPending(bytes, position, lineEnd)
        const whole = pendingLength
        pendingLength = 0
        processLine(pending, 0, whole)
      }
      position = lineEnd + 1
      if (bytes[lineEnd] === CR) {
        if (position === length) skipLeadingLineFeed = true
        else if (bytes[position] === LF) position += 1
      }
      if (nextCr !== -1 && nextCr < position) nextCr = bytes.indexOf(CR, position)
      if (nextLf !== -1 && nextLf < position) nextLf = bytes.indexOf(LF, position)
    }
    if (position < length) keepPending(bytes, position, length)
  }

  const collect = (): SseEvent[] => {
    const events = out ?? NO_EVENTS
    out = undefined
    return events
  }

  const push = (bytes: Uint8Array): SseEvent[] => {
    if (ended) throw new Error('SSE decoder: push after end')
    processBytes(bytes)
    return collect()
  }

  const pushText = (text: string): SseEvent[] => push(encoder.encode(text))

  const end = (): SseEvent[] => {
    if (ended) return NO_EVENTS
    ended = true
    pendingLength = 0 // an unterminated last line is never trusted
    if (options.dispatchCompleteLinesOnEnd === true) dispatch()
    return collect()
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
