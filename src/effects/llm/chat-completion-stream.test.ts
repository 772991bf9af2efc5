import { describe, expect, test } from 'vitest'
import { createChatCompletionStreamParser } from './chat-completion-stream.ts'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

describe('createChatCompletionStreamParser — end of stream', () => {
  test('[DONE] succeeds at once; later bytes are ignored', () => {
    const parser = createChatCompletionStreamParser()
    expect(parser.pushBytes(bytes(chunk({ content: 'a' }) + 'data: [DONE]\n\n')).status).toBe('succeeded')
    expect(parser.pushBytes(bytes('data: not json\n\n')).status).toBe('succeeded')
    const final = parser.end('eof')
    expect(final.status === 'succeeded' && final.result.text).toBe('a')
  })

  test('a finish reason then EOF succeeds', () => {
    const parser = createChatCompletionStreamParser()
    parser.pushBytes(bytes(chunk({ content: 'a' }, 'stop')))
    expect(parser.state().status).toBe('streaming')
    expect(parser.end('eof').status).toBe('succeeded')
  })

  test('EOF with neither is StreamIncomplete keeping the text; a lost connection says so', () => {
    for (const ending of ['eof', 'connection-lost'] as const) {
      const parser = createChatCompletionStreamParser()
      parser.pushBytes(bytes(chunk({ content: 'par' }) + chunk({ content: 'tial' })))
      const final = parser.end(ending)
      expect(final.status).toBe('failed')
      if (final.status !== 'failed') continue
      expect(final.error._tag).toBe('StreamIncomplete')
      expect(final.error.partialText).toBe('partial')
      expect(final.error.message).toMatch(ending === 'eof' ? /without \[DONE\]/ : /connection .* lost/)
    }
  })

  test('an empty body is StreamIncomplete', () => {
    const final = createChatCompletionStreamParser().end('eof')
    expect(final.status === 'failed' && final.error._tag).toBe('StreamIncomplete')
  })

  test('idle without a finish reason is StreamIdleTimeout; after a finish reason it succeeds', () => {
    const waiting = createChatCompletionStreamParser()
    waiting.pushBytes(bytes(chunk({ content: 'w' })))
    const idle = waiting.idle(1234)
    expect(idle.status === 'failed' && idle.error).toMatchObject({ _tag: 'StreamIdleTimeout', idleMs: 1234, partialText: 'w' })

    const finished = createChatCompletionStreamParser()
    finished.pushBytes(bytes(chunk({ content: 'w' }, 'stop')))
    expect(finished.idle(1234).status).toBe('succeeded')
  })

  test('the first failure sticks', () => {
    const parser = createChatCompletionStreamParser()
    parser.pushBytes(bytes('data: {"error":{"message":"first"}}\n\ndata: {"error":{"message":"second"}}\n\n'))
    parser.pushBytes(bytes(chunk({}, 'stop')))
    const final = parser.end('eof')
    expect(final.status === 'failed' && final.error.message).toBe('first')
  })

  test('an error message longer than 500 characters is cut', () => {
    const parser = createChatCompletionStreamParser()
    parser.pushBytes(bytes(`data: ${JSON.stringify({ error: { message: 'x'.repeat(2000) } })}\n\n`))
    const state = parser.state()
    expect(state.status === 'failed' && Array.from(state.error.message).length).toBe(500)
  })

  test('events reach onEvent as chunks arrive, before the end', () => {
    const seen: string[] = []
    const parser = createChatCompletionStreamParser({ onEvent: (event) => seen.push(`${event.type}:${event.text}`) })
    parser.pushBytes(bytes(chunk({ reasoning_content: 'r' })))
    expect(seen).toEqual(['thinking:r'])
    parser.pushBytes(bytes(chunk({ content: 'c' })))
    expect(seen).toEqual(['thinking:r', 'delta:c'])
  })
})
