import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { summariseExtractively } from './extractive-summary.ts'

const ARTICLE = [
  'The wiki compiler turns raw files into a layered wiki.',
  'Cats are not involved.',
  'Each raw file gets a summary written by the compiler.',
  'The weather was nice that day.',
  'Directory overviews are built by the compiler from the file summaries.',
  'Lunch was pasta.',
].join(' ')

describe('summariseExtractively', () => {
  test('a text within the budget is returned whole (line endings normalised, trimmed)', () => {
    expect(summariseExtractively({ text: '  Short.\r\nText.  ', maxChars: 100 })).toBe('Short.\nText.')
  })

  test('keeps the leading sentence plus the sentences about the recurring topic, in order', () => {
    expect(summariseExtractively({ text: ARTICLE, maxChars: 180 })).toBe(
      'The wiki compiler turns raw files into a layered wiki. ' +
        'Each raw file gets a summary written by the compiler. ' +
        'Directory overviews are built by the compiler from the file summaries.',
    )
  })

  test('a leading sentence longer than the budget is cut with …', () => {
    expect(summariseExtractively({ text: `${'word '.repeat(100)}. Next.`, maxChars: 20 })).toBe(`${'word '.repeat(3)}word…`)
  })

  test('empty text gives an empty summary', () => {
    expect(summariseExtractively({ text: '   ', maxChars: 10 })).toBe('')
  })

  propertyTest.prop(
    [fc.array(fc.stringMatching(/^[A-Za-z][a-z ]{0,40}[.!?]$/), { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 400 })],
    { numRuns: 200 },
  )('within budget, deterministic, and made only of source sentences', (sentences, maxChars) => {
    const text = sentences.join(' ')
    const summary = summariseExtractively({ text, maxChars })
    expect(Array.from(summary).length).toBeLessThanOrEqual(maxChars)
    expect(summariseExtractively({ text, maxChars })).toBe(summary)
    if (summary.endsWith('…')) expect(text.startsWith(summary.slice(0, -1).trimEnd())).toBe(true)
    else if (summary !== text.trim()) for (const piece of summary.match(/[^.!?]+[.!?]/g) ?? []) expect(text).toContain(piece.trim())
  })
})
