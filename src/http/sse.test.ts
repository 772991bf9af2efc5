import type { Response } from 'express'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { createSseDecoder } from '../sse/sse-decoder.ts'
import { formatSseEvent, openSse } from './sse.ts'
import { jsonTurnProjector, type TurnProgressEvent } from './turn-stream.ts'

/** A stand-in express response that records what is written. */
function recordingResponse() {
  const writes: string[] = []
  const res = {
    writableEnded: false,
    destroyed: false,
    headersSent: false,
    /** Times the headers were sent alone (not with a write). */
    headerFlushes: 0,
    status: () => res,
    set: () => res,
    flushHeaders: () => {
      res.headersSent = true
      res.headerFlushes += 1
    },
    socket: { setNoDelay: () => undefined },
    write: (chunk: string) => {
      res.headersSent = true
      writes.push(chunk)
      return true
    },
    end: () => {
      res.headersSent = true
      res.writableEnded = true
    },
  }
  return { res: res as unknown as Response, writes, state: res }
}

afterEach(() => {
  vi.useRealTimers()
})

const microtask = () => new Promise<void>((resolve) => queueMicrotask(resolve))

describe('openSse', () => {
  const nextLoopTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

  test('the headers leave with the events of the same turn of the event loop, not in a write of their own', async () => {
    const { res, writes, state } = recordingResponse()
    const sse = openSse(res)
    await microtask()
    sse.sendJson('context', '{}')
    await nextLoopTurn()
    expect(writes).toEqual(['event: context\ndata: {}\n\n'])
    expect(state.headerFlushes).toBe(0)
    sse.close()
  })

  test('with no event in that turn the headers leave alone, before the next I/O; a stream closed first sends none alone', async () => {
    const { res, state } = recordingResponse()
    openSse(res)
    await nextLoopTurn()
    expect(state.headerFlushes).toBe(1)
    const closed = recordingResponse()
    openSse(closed.res).close()
    await nextLoopTurn()
    expect(closed.state.headerFlushes).toBe(0)
  })

  test('sendJson frames exactly as send with the parsed object', async () => {
    const { res, writes } = recordingResponse()
    const sse = openSse(res)
    const text = 'quote " backslash \\ newline \n tab \t é 🎉 \u2028'
    sse.send('delta', { text })
    await microtask()
    sse.sendJson('delta', JSON.stringify({ text }))
    await microtask()
    sse.close()
    expect(writes).toEqual([formatSseEvent('delta', { text }), formatSseEvent('delta', { text })])
  })

  test('the events of one synchronous run leave in one write, in order, before the next run', async () => {
    const { res, writes } = recordingResponse()
    const sse = openSse(res)
    sse.sendJson('delta', '{"text":"a"}')
    sse.sendJson('delta', '{"text":"b"}')
    sse.comment('note')
    expect(writes).toEqual([])
    await microtask()
    expect(writes).toEqual(['event: delta\ndata: {"text":"a"}\n\nevent: delta\ndata: {"text":"b"}\n\n: note\n\n'])
    sse.sendJson('done', '{}')
    sse.close() // flushes what is pending, then ends
    expect(writes.at(-1)).toBe('event: done\ndata: {}\n\n')
    expect(sse.sendJson('delta', '{"text":"late"}')).toBe(false)
    await microtask()
    expect(writes).toHaveLength(2)
  })

  test('a keep-alive comment after the silence, none while events flow; nothing after close', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] })
    const { res, writes } = recordingResponse()
    const sse = openSse(res, { keepAliveMs: 1000 })
    for (let step = 0; step < 8; step += 1) {
      vi.advanceTimersByTime(250)
      sse.sendJson('delta', '{"text":"x"}')
      await microtask()
    }
    expect(writes.filter((chunk) => chunk.startsWith(':'))).toEqual([])
    vi.advanceTimersByTime(1000)
    await microtask()
    expect(writes.at(-1)).toBe(': keep-alive\n\n')
    sse.close()
    sse.close()
    const count = writes.length
    vi.advanceTimersByTime(5000)
    await microtask()
    expect(writes).toHaveLength(count)
  })
})

describe('jsonTurnProjector', () => {
  test.each<TurnProgressEvent>([
    { type: 'delta', text: 'a "quoted" \n line' },
    { type: 'thinking', text: '思考…' },
    { type: 'tool', phase: 'start', call_id: 'c1', name: 'ls', arguments: { uri: 'kb://me/' } },
  ])('$type: the event name and its fields without `type`, as JSON', async (event) => {
    const { res, writes } = recordingResponse()
    const sse = openSse(res)
    jsonTurnProjector(sse).progress(event)
    sse.close()
    const decoded = createSseDecoder().pushText(writes.join(''))
    const { type, ...fields } = event
    expect(decoded).toEqual([{ event: type, data: JSON.stringify(fields), id: '' }])
  })
})
