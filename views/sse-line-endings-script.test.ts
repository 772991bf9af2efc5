import { describe, expect, it } from 'vitest'
import { lineEndingNormalizer } from './static/js/sse-line-endings.js'

async function normalise(chunks: ReadonlyArray<string>): Promise<{ text: string; chunks: number }> {
  const encoder = new TextEncoder()
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      controller.close()
    },
  })
  const reader = source.pipeThrough(lineEndingNormalizer()).getReader()
  const parts: Uint8Array[] = []
  for (let read = await reader.read(); !read.done; read = await reader.read()) parts.push(read.value)
  const bytes = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let offset = 0
  for (const part of parts) {
    bytes.set(part, offset)
    offset += part.length
  }
  return { text: new TextDecoder().decode(bytes), chunks: parts.length }
}

describe('lineEndingNormalizer', () => {
  it.each([
    [['event: done\r\ndata: {}\r\n\r\n'], 'event: done\ndata: {}\n\n'],
    [['event: done\r', '\ndata: {}\r', '\n\r', '\n'], 'event: done\ndata: {}\n\n'],
    [['a\rb\r\rc\n\nd'], 'a\nb\n\nc\n\nd'],
    [['a\r', 'b'], 'a\nb'],
    [['a\r', '', '\nb'], 'a\nb'], // an empty chunk between CR and LF keeps them one line ending
  ])('%j → %j', async (chunks, expected) => {
    expect((await normalise(chunks)).text).toBe(expected)
  })

  it('passes multi-byte UTF-8 split across chunks through unchanged', async () => {
    const bytes = new TextEncoder().encode('知识 😀\r\n')
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 2))
        controller.enqueue(bytes.slice(2, 9))
        controller.enqueue(bytes.slice(9))
        controller.close()
      },
    })
    const decoder = new TextDecoder()
    let text = ''
    const reader = source.pipeThrough(lineEndingNormalizer()).getReader()
    for (let read = await reader.read(); !read.done; read = await reader.read()) text += decoder.decode(read.value, { stream: true })
    expect(text + decoder.decode()).toBe('知识 😀\n')
  })
})
