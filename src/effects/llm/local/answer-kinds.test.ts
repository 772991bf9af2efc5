import { describe, expect, test } from 'vitest'
import { givesCount, isDated } from './answer-kinds.ts'
import { NUMBER_IN_TEXT } from './terms.ts'

describe('givesCount', () => {
  test.each([
    ['The review was held on 14 March 2026.', false],
    ['Held on March 3rd at 09:30, in Q4.', false],
    ['Released as v2.1 on 2026-03-04.', false],
    ['Four engineers joined.', true],
    ['The team has 12 engineers since 2024.', true],
    ['1,840 paying workspaces at the end of Q4.', true],
  ])('%s → %s', (text, count) => {
    expect(givesCount(text, NUMBER_IN_TEXT)).toBe(count)
  })
})

describe('isDated', () => {
  test.each([
    ['2026-03-09-pipeline-review.md', 'month', true],
    ['Launch a Q1 SPIF.', 'month', true],
    ['Signed on 9 May.', 'month', true],
    ['You may launch a SPIF at any time.', 'month', false],
    ['commission-plan-2026.md: SPIFs are announced in the pipeline review.', 'month', false],
    ['commission-plan-2026.md: SPIFs are announced in the pipeline review.', 'year', true],
    ['SPIFs are announced in the pipeline review.', 'year', false],
  ] as const)('%s (%s) → %s', (text, period, dated) => {
    expect(isDated(text, period)).toBe(dated)
  })
})
