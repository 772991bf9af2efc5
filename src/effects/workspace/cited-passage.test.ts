import { describe, expect, it } from 'vitest'
import { citedWindow, passageLength } from './cited-passage.ts'

describe('the cited passage', () => {
  const text = '# Title\n\nFirst paragraph. It has two sentences.\n\nSecond paragraph 😀 here, and it goes on for a while without a stop\nnext line'

  it('runs to the end of its paragraph', () => {
    const offset = text.indexOf('First')
    expect(text.slice(offset, offset + passageLength(text, offset))).toBe('First paragraph. It has two sentences.')
  })

  it('splits the text around it by code points, so an emoji before it does not shift the offset', () => {
    const offset = Array.from(text).indexOf('h', Array.from(text).indexOf('😀'))
    const window = citedWindow({ text, offset })
    expect(window.passage).toBe('here, and it goes on for a while without a stop')
    expect(window.before.endsWith('😀 ')).toBe(true)
    expect(window.before + window.passage + window.after).toBe(text)
    expect(window.total).toBe(Array.from(text).length)
  })

  it('clamps an offset past the end, and a long unbroken text gets a bounded passage', () => {
    expect(citedWindow({ text: 'short', offset: 99 })).toMatchObject({ offset: 5, passage: '', before: 'short', after: '' })
    expect(citedWindow({ text: 'x'.repeat(5000), offset: 10 }).passage).toHaveLength(300)
  })

  it('a sentence end counts only after a few words', () => {
    const prose = 'Dr. Smith wrote it. Then a long explanation follows here. More.'
    expect(prose.slice(0, passageLength(prose, 0))).toBe('Dr. Smith wrote it. Then a long explanation follows here.')
  })
})
