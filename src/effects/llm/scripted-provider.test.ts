// The shared scripted provider (tests/support/scripted-provider.ts) is itself tested here, since
// every model, turn, HTTP and browser test relies on it.
import { request as httpRequest } from 'node:http'
import { afterEach, describe, expect, test, vi } from 'vitest'
import {
  chatCompletionSse,
  httpResponseScript,
  splitBytes,
  startScriptedProvider,
  streamScript,
  textAnswerSse,
  toolCallsSse,
} from '../../../tests/support/scripted-provider.ts'
import { createSseDecoder } from './sse-decoder.ts'

const post = (url: string, body: unknown, init: RequestInit = {}) =>
  fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init })

describe('startScriptedProvider', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  test('replays queued scripts in order and records each request', async () => {
    const provider = await startScriptedProvider()
    try {
      provider.enqueue(httpResponseScript(418, { error: { message: 'teapot' } }, { 'x-extra': 'yes' }), streamScript('data: one\n\n'))
      const first = await post(provider.baseUrl, { n: 1 }, { headers: { 'content-type': 'application/json', 'x-trace': 't1' } })
      expect(first.status).toBe(418)
      expect(first.headers.get('x-extra')).toBe('yes')
      expect(await first.json()).toEqual({ error: { message: 'teapot' } })
      const second = await post(provider.baseUrl, { n: 2 })
      expect(second.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
      expect(await second.text()).toBe('data: one\n\n')
      expect(provider.requests.map((r) => [r.index, r.method, r.path, r.body])).toEqual([
        [0, 'POST', '/v1/chat/completions', { n: 1 }],
        [1, 'POST', '/v1/chat/completions', { n: 2 }],
      ])
      expect(provider.requests[0]!.headers['x-trace']).toBe('t1')
      expect(provider.requests[1]!.finishedAt).toBeGreaterThan(provider.requests[1]!.receivedAt)
      expect(provider.requests[1]!.clientClosedAt).toBeUndefined()
    } finally {
      await provider.close()
    }
  })

  test('a handler answers when the queue is empty; with neither, a loud 500', async () => {
    const provider = await startScriptedProvider()
    try {
      const missing = await post(provider.baseUrl, {})
      expect(missing.status).toBe(500)
      expect(await missing.text()).toContain('no script for request #0')
      provider.setHandler((request) => httpResponseScript(200, `echo ${(request.body as { q: string }).q}`))
      expect(await (await post(provider.baseUrl, { q: 'hi' })).text()).toBe('echo hi')
    } finally {
      await provider.close()
    }
  })

  test('records when the client goes away before the script ends', async () => {
    const provider = await startScriptedProvider({ scripts: [{ kind: 'stream', chunks: [{ bytes: 'data: x\n\n' }], end: 'hang' }] })
    try {
      const controller = new AbortController()
      const response = await post(provider.baseUrl, {}, { signal: controller.signal })
      const reader = response.body!.getReader()
      await reader.read()
      const abortedAt = performance.now()
      controller.abort()
      const request = await provider.waitForClientClose(0)
      expect(request.clientClosedAt).toBeGreaterThanOrEqual(abortedAt) // recorded by this close, not before it
      expect(request.finishedAt).toBeUndefined()
      await provider.waitForNoConnections()
      expect(provider.openConnections()).toBe(0)
    } finally {
      await provider.close()
    }
  })

  // The provider's timers are faked (node:http's own are not), so the test decides when a delay
  // has passed: a delayed chunk waits on exactly its timer and is written when it fires.
  test('chunks are written as given, each after its delay', async () => {
    const provider = await startScriptedProvider({
      scripts: [{ kind: 'stream', chunks: [{ bytes: 'data: a\n\n' }, { bytes: 'data: b\n\n', delayMs: 120 }] }],
    })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const client = streamingClient(`${provider.baseUrl}/chat/completions`)
      await untilTimerPending() // chunk a, scheduled with no delay
      const first = client.nextChunk()
      vi.advanceTimersByTime(0)
      expect(await first).toBe('data: a\n\n')
      await untilTimerPending() // chunk b, scheduled once a reached the socket
      vi.advanceTimersByTime(119)
      expect(vi.getTimerCount()).toBe(1)
      expect(provider.requests[0]!.finishedAt).toBeUndefined()
      const second = client.nextChunk()
      vi.advanceTimersByTime(1)
      expect(await second).toBe('data: b\n\n')
      await client.ended
      expect(client.chunks).toEqual(['data: a\n\n', 'data: b\n\n'])
    } finally {
      await provider.close()
    }
  })

  test('a chunk with `after` is written only once the test opens its gate', async () => {
    const gate = testGate()
    const provider = await startScriptedProvider({
      scripts: [{ kind: 'stream', chunks: [{ bytes: 'data: a\n\n' }, { bytes: 'data: b\n\n', after: gate }] }],
    })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const client = streamingClient(`${provider.baseUrl}/chat/completions`)
      await untilTimerPending()
      const first = client.nextChunk()
      vi.advanceTimersByTime(0)
      expect(await first).toBe('data: a\n\n')
      await gate.waited // the provider reached chunk b and waits on the gate …
      expect(vi.getTimerCount()).toBe(0) // … with nothing scheduled to write it
      const second = client.nextChunk()
      gate.open()
      await untilTimerPending()
      vi.advanceTimersByTime(0)
      expect(await second).toBe('data: b\n\n')
      await client.ended
      expect(provider.requests[0]!.finishedAt).toEqual(expect.any(Number))
    } finally {
      await provider.close()
    }
  })
})

/** A promise-like the provider waits on; `waited` settles once something called its `then`. */
function testGate(): PromiseLike<void> & { readonly open: () => void; readonly waited: Promise<void> } {
  const opened = Promise.withResolvers<void>()
  const waited = Promise.withResolvers<void>()
  return {
    open: () => opened.resolve(),
    waited: waited.promise,
    then: (onOpen, onError) => {
      waited.resolve()
      return opened.promise.then(onOpen, onError)
    },
  }
}

/** Turns the event loop (setImmediate is not faked) until the provider has scheduled its next write. */
async function untilTimerPending(): Promise<void> {
  while (vi.getTimerCount() === 0) await new Promise((resolve) => setImmediate(resolve))
}

/** A POST through node:http (whose timers fake timers leave alone, unlike fetch's), read chunk by chunk. */
function streamingClient(url: string) {
  const chunks: string[] = []
  const ended = Promise.withResolvers<void>()
  let waiting: ((chunk: string) => void) | undefined
  httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => {
      chunks.push(chunk)
      waiting?.(chunk)
      waiting = undefined
    })
    response.on('end', () => ended.resolve())
  }).end('{}')
  return {
    chunks,
    ended: ended.promise,
    nextChunk: () => new Promise<string>((resolve) => (waiting = resolve)),
  }
}

describe('stream builders', () => {
  const decode = (body: string) => {
    const decoder = createSseDecoder()
    return [...decoder.push(new TextEncoder().encode(body)), ...decoder.end()].map((event) => event.data)
  }

  test('chatCompletionSse writes one frame per spec', () => {
    const frames = decode(
      chatCompletionSse([
        { text: 'Hi' },
        { thinking: 'hm', field: 'reasoning' },
        { toolCall: { index: 0, id: 'c1', name: 'ls', arguments: { uri: 'kb://me/' } } },
        { finish: 'tool_calls' },
        { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } },
        { raw: ': comment\n\n' },
        'done',
      ]),
    )
    expect(frames.at(-1)).toBe('[DONE]')
    const [text, thinking, call, finish, usage] = frames.slice(0, 5).map((frame) => JSON.parse(frame))
    expect(text.choices[0].delta).toEqual({ content: 'Hi' })
    expect(thinking.choices[0].delta).toEqual({ reasoning: 'hm' })
    expect(call.choices[0].delta.tool_calls).toEqual([{ index: 0, id: 'c1', type: 'function', function: { name: 'ls', arguments: { uri: 'kb://me/' } } }])
    expect(finish.choices[0].finish_reason).toBe('tool_calls')
    expect(usage).toMatchObject({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } })
    expect(frames).toHaveLength(6)
  })

  test('textAnswerSse and toolCallsSse end with a finish reason and [DONE]', () => {
    const text = decode(textAnswerSse('abcdefghij', { chunkChars: 4 }))
    expect(text.slice(0, 3).map((f) => JSON.parse(f).choices[0].delta.content)).toEqual(['abcd', 'efgh', 'ij'])
    expect(text.slice(3)).toEqual([expect.stringContaining('"finish_reason":"stop"'), '[DONE]'])
    const tools = decode(toolCallsSse([{ id: 'a', name: 'search', arguments: { query: 'q' } }]))
    expect(tools).toHaveLength(4)
    expect(tools.at(-2)).toContain('"finish_reason":"tool_calls"')
  })

  test('splitBytes cuts anywhere and keeps every byte', () => {
    const parts = splitBytes('知a', [1, 2, 2, 0, 99])
    expect(parts.map((part) => Array.from(part))).toEqual([[0xe7], [0x9f], [0xa5, 0x61]])
  })
})
