import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { createSseDecoder, decodeSseStream, type SseEvent } from './sse-decoder.ts'

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

function decodeAll(parts: ReadonlyArray<string | Uint8Array>, options: Parameters<typeof createSseDecoder>[0] = {}): SseEvent[] {
  const decoder = createSseDecoder(options)
  const events = parts.flatMap((part) => decoder.push(typeof part === 'string' ? utf8(part) : part))
  return [...events, ...decoder.end()]
}

const message = (data: string, extra: Partial<SseEvent> = {}): SseEvent => ({ event: 'message', data, id: '', ...extra })

describe('createSseDecoder', () => {
  test('several events in one chunk', () => {
    expect(decodeAll(['data: a\n\ndata: b\n\nevent: ping\ndata: c\n\n'])).toEqual([
      message('a'),
      message('b'),
      { event: 'ping', data: 'c', id: '' },
    ])
  })

  test.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['bare CR', '\r'],
  ])('%s line endings', (_name, eol) => {
    expect(decodeAll([`data: one${eol}${eol}data: two${eol}${eol}`])).toEqual([message('one'), message('two')])
  })

  test('a CR at the end of a chunk and the LF at the start of the next are one line ending', () => {
    expect(decodeAll(['data: a\r', '\ndata: b\r', '\n\r', '\n'])).toEqual([message('a\nb')])
  })

  test('a CR followed by a CR in the next chunk is two line endings', () => {
    expect(decodeAll(['data: a\r', '\rdata: b\r\r'])).toEqual([message('a'), message('b')])
  })

  test('UTF-8 split inside a code point, byte by byte', () => {
    const bytes = utf8('data: 知识 🎉\n\n')
    expect(decodeAll(Array.from(bytes, (byte) => Uint8Array.of(byte)))).toEqual([message('知识 🎉')])
  })

  test('data with and without the space; only one space is removed', () => {
    expect(decodeAll(['data:tight\n\ndata:  two spaces\n\n'])).toEqual([message('tight'), message(' two spaces')])
  })

  test('multi-line data is joined with \\n; an empty data line adds an empty line', () => {
    expect(decodeAll(['data: first\ndata:\ndata: third\n\n'])).toEqual([message('first\n\nthird')])
  })

  test('a `data` line without a colon counts as empty data and is dispatched', () => {
    expect(decodeAll(['data\n\n'])).toEqual([message('')])
  })

  test('an event without data is not dispatched and its event name does not leak', () => {
    expect(decodeAll(['event: lonely\n\ndata: next\n\n'])).toEqual([message('next')])
  })

  test('id persists across events and is set even by an event without data; NUL ids are ignored', () => {
    expect(decodeAll(['id: 7\n\ndata: a\n\nid: 8\ndata: b\n\nid: x\u0000y\ndata: c\n\nid\ndata: d\n\n'])).toEqual([
      message('a', { id: '7' }),
      message('b', { id: '8' }),
      message('c', { id: '8' }),
      message('d', { id: '' }),
    ])
  })

  test('comments are not events; onComment sees them (keep-alive, OpenRouter)', () => {
    const comments: string[] = []
    const events = decodeAll([': keep-alive\n', ': OPENROUTER PROCESSING\n\n', 'data: x\n:inline\n\n'], {
      onComment: (text) => comments.push(text),
    })
    expect(events).toEqual([message('x')])
    expect(comments).toEqual([' keep-alive', ' OPENROUTER PROCESSING', 'inline'])
  })

  test('retry: only ASCII digits count', () => {
    const retries: number[] = []
    decodeAll(['retry: 3000\nretry: 12a\nretry: -1\nretry:250\n\n'], { onRetry: (ms) => retries.push(ms) })
    expect(retries).toEqual([3000, 250])
  })

  test('unknown fields are ignored', () => {
    expect(decodeAll(['foo: bar\ndata: ok\nbaz\n\n'])).toEqual([message('ok')])
  })

  test('one leading BOM is dropped, also when split across chunks; a second one is kept', () => {
    const bom = utf8('\ufeff')
    expect(decodeAll([bom.slice(0, 1), bom.slice(1), 'data: a\n\n'])).toEqual([message('a')])
    expect(decodeAll(['\ufeff\ufeffdata: a\n\n'])).toEqual([])
    expect(decodeAll(['\ufeff\ufeffdata: a\n\ndata: b\n\n'])).toEqual([message('b')])
  })

  test('WHATWG: at the end of the stream a pending event is discarded', () => {
    expect(decodeAll(['data: a\n\ndata: pending\n'])).toEqual([message('a')])
  })

  test('dispatchCompleteLinesOnEnd: a terminated pending event is dispatched, a truncated line is not', () => {
    const options = { dispatchCompleteLinesOnEnd: true }
    expect(decodeAll(['data: [DONE]\n'], options)).toEqual([message('[DONE]')])
    expect(decodeAll(['data: [DONE]\r'], options)).toEqual([message('[DONE]')])
    expect(decodeAll(['data: whole\ndata: trunc'], options)).toEqual([message('whole')])
    expect(decodeAll(['data: trunc'], options)).toEqual([])
  })

  test('an incomplete UTF-8 sequence at the end becomes U+FFFD', () => {
    const decoder = createSseDecoder({ dispatchCompleteLinesOnEnd: true })
    expect(decoder.push(utf8('data: a'))).toEqual([])
    expect(decoder.push(Uint8Array.of(0xe7, 0x9f))).toEqual([])
    expect(decoder.push(utf8('\n'))).toEqual([])
    expect(decoder.end()).toEqual([message('a\ufffd')])
  })

  test('a line longer than the reused line buffer, cut into small chunks, arrives whole', () => {
    const long = '长'.repeat(4000) + 'x'.repeat(3001)
    const bytes = utf8(`data: ${long}\n\ndata: next\n\n`)
    const parts = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.slice(i * 7, i * 7 + 7))
    expect(decodeAll(parts)).toEqual([message(long), message('next')])
  })

  test('onEvent receives each event as it completes; push and end then return none', () => {
    const seen: SseEvent[] = []
    const decoder = createSseDecoder({ onEvent: (event) => seen.push(event), dispatchCompleteLinesOnEnd: true })
    expect(decoder.push(utf8('data: a\n\nevent: e\ndata: b'))).toEqual([])
    expect(seen).toEqual([message('a')])
    expect(decoder.push(utf8('\n'))).toEqual([])
    expect(decoder.end()).toEqual([])
    expect(seen).toEqual([message('a'), { event: 'e', data: 'b', id: '' }])
  })

  test('pushText accepts decoded text; push after end throws', () => {
    const decoder = createSseDecoder()
    expect(decoder.pushText('data: t\n\n')).toEqual([message('t')])
    decoder.end()
    expect(() => decoder.push(utf8('data: late\n\n'))).toThrow(/after end/)
    expect(decoder.end()).toEqual([])
  })
})

describe('decodeSseStream', () => {
  test('reads a ReadableStream', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(utf8('data: a\r'))
        controller.enqueue(utf8('\n\r\ndata: b\n\n'))
        controller.close()
      },
    })
    const events: SseEvent[] = []
    for await (const event of decodeSseStream(stream)) events.push(event)
    expect(events).toEqual([message('a'), message('b')])
  })

  test('reads an async iterable', async () => {
    async function* source(): AsyncGenerator<Uint8Array> {
      yield utf8('data: x\n')
      yield utf8('\n')
    }
    const events: SseEvent[] = []
    for await (const event of decodeSseStream(source())) events.push(event)
    expect(events).toEqual([message('x')])
  })

  test('breaking out early cancels the stream', async () => {
    let cancelled = false
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(utf8('data: again\n\n'))
      },
      cancel() {
        cancelled = true
      },
    })
    for await (const event of decodeSseStream(stream)) {
      expect(event.data).toBe('again')
      break
    }
    expect(cancelled).toBe(true)
  })
})

// ---------------------------------------------------------------------------------------------
// Property: serialise random events with random line endings, cut the bytes anywhere, decode.

const fieldText = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ''))
const eventArbitrary = fc.record({
  event: fc.option(fc.stringMatching(/^[a-z]{1,8}$/), { nil: undefined }),
  dataLines: fc.array(fieldText, { minLength: 1, maxLength: 3 }),
  id: fc.option(fc.stringMatching(/^[0-9a-z]{1,6}$/), { nil: undefined }),
  comment: fc.option(fieldText, { nil: undefined }),
})
const lineEnding = fc.constantFrom('\n', '\r\n', '\r')

propertyTest.prop([fc.array(eventArbitrary, { maxLength: 8 }), lineEnding, fc.array(fc.nat(), { maxLength: 30 })], {
  numRuns: 500,
})('any events, any line ending, any chunking: the same events', (events, eol, cutSeeds) => {
  let text = ''
  let lastId = ''
  const expected: SseEvent[] = []
  for (const e of events) {
    if (e.comment !== undefined) text += `:${e.comment}${eol}`
    if (e.event !== undefined) text += `event: ${e.event}${eol}`
    if (e.id !== undefined) {
      text += `id: ${e.id}${eol}`
      lastId = e.id
    }
    for (const line of e.dataLines) text += `data: ${line}${eol}`
    text += eol
    expected.push({ event: e.event ?? 'message', data: e.dataLines.join('\n'), id: lastId })
  }
  const bytes = utf8(text)
  const cuts = [...new Set(cutSeeds.map((seed) => (bytes.length === 0 ? 0 : seed % bytes.length)))].sort((a, b) => a - b)
  const parts: Uint8Array[] = []
  let start = 0
  for (const cut of [...cuts, bytes.length]) {
    parts.push(bytes.slice(start, cut))
    start = cut
  }
  expect(decodeAll(parts)).toEqual(expected)
})
