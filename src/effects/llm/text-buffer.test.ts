import { describe, expect, test } from 'vitest'
import { TextBuffer } from './text-buffer.ts'

/** Deterministic pieces of 0–11 code units: ASCII, CJK, an emoji (a surrogate pair) and empty ones. */
function pieces(count: number): string[] {
  const alphabet = ['a', 'Zq', '知识', '🙂', '', ' \n', 'x'.repeat(11), 'é']
  let seed = 7
  return Array.from({ length: count }, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return alphabet[seed % alphabet.length]!
  })
}

describe('TextBuffer', () => {
  test('holds exactly what was appended, read at any point, across many folds', () => {
    const buffer = new TextBuffer()
    let expected = ''
    for (const [position, piece] of pieces(1_000).entries()) {
      buffer.append(piece)
      expected += piece
      expect(buffer.length).toBe(expected.length)
      // Read sometimes (a cancelled step reads its partial text mid-stream), not after every piece.
      if (position % 97 === 0) expect(buffer.toString()).toBe(expected)
    }
    expect(buffer.toString()).toBe(expected)
    expect(buffer.toString()).toBe(expected) // reading does not consume
  })

  test('appending after a read continues the same text', () => {
    const buffer = new TextBuffer()
    buffer.append('Hello')
    expect(buffer.toString()).toBe('Hello')
    buffer.append(', ')
    buffer.append('world')
    expect(buffer.toString()).toBe('Hello, world')
    expect(buffer.length).toBe(12)
  })

  test('clear forgets everything, folded or not', () => {
    const buffer = new TextBuffer()
    for (const piece of pieces(100)) buffer.append(piece)
    buffer.clear()
    expect(buffer.toString()).toBe('')
    expect(buffer.length).toBe(0)
    buffer.append('next step')
    expect(buffer.toString()).toBe('next step')
  })

  test('an empty buffer and empty pieces read as the empty string', () => {
    const buffer = new TextBuffer()
    expect(buffer.toString()).toBe('')
    buffer.append('')
    expect(buffer.length).toBe(0)
    expect(buffer.toString()).toBe('')
  })
})
