import { describe, expect, it } from 'vitest'
import { median, signTestP, summarisePairs } from '../../bench/lib/compare-stats.ts'

describe('paired comparison of two builds (bench/compare.ts)', () => {
  it('takes the median of an odd and an even count', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([])).toBeNaN()
  })

  it('gives the two-sided sign test of a split', () => {
    expect(signTestP(6, 0)).toBeCloseTo(2 / 64) // all six pairs one way
    expect(signTestP(5, 1)).toBeCloseTo((2 * 7) / 64)
    expect(signTestP(3, 3)).toBe(1)
    expect(signTestP(0, 0)).toBe(1)
  })

  it('compares within pairs, not across them, and leaves out pairs with a missing figure', () => {
    // The machine got slower for the last pairs: head is lower in every pair although its
    // median is above base's.
    const summary = summarisePairs([
      { base: 5.0, head: 4.5 },
      { base: 5.2, head: 4.9 },
      { base: 7.0, head: 6.4 },
      { base: 7.4, head: 7.1 },
      { base: Number.NaN, head: 1 },
    ])
    expect(summary).toMatchObject({ pairs: 4, lower: 4, higher: 0, equal: 0 })
    expect(summary.medianDifference).toBeCloseTo(-0.4)
    expect(summary.baseMedian).toBeCloseTo(6.1)
    expect(summary.signTestP).toBeCloseTo(2 / 16)
  })
})
