// Paired comparison of two builds' benchmark figures: the machine drifts between runs, so each
// figure is compared within a pair of back-to-back runs (one per build, alternating which goes
// first), never across pairs.
import { sortedCopy } from './stats.ts'

export interface Pair {
  readonly base: number
  readonly head: number
}

export interface PairedSummary {
  /** Pairs where both values are finite. */
  readonly pairs: number
  readonly baseMedian: number
  readonly headMedian: number
  /** Median of head − base over the pairs. */
  readonly medianDifference: number
  /** Pairs where head is below base, above it, and equal. */
  readonly lower: number
  readonly higher: number
  readonly equal: number
  /**
   * Two-sided sign test: the probability of a split at least this uneven if neither build were
   * lower more often than the other (ties left out). 1 when there is no pair to count.
   */
  readonly signTestP: number
}

export function median(values: ReadonlyArray<number>): number {
  if (values.length === 0) return Number.NaN
  const sorted = sortedCopy(values)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** P(X ≤ k) + P(X ≥ n − k) for X ~ Binomial(n, ½), with k the smaller side: at most 1. */
export function signTestP(lower: number, higher: number): number {
  const n = lower + higher
  if (n === 0) return 1
  const k = Math.min(lower, higher)
  let tail = 0
  for (let i = 0; i <= k; i += 1) tail += binomial(n, i)
  return Math.min(1, (2 * tail) / 2 ** n)
}

function binomial(n: number, k: number): number {
  let result = 1
  for (let i = 1; i <= k; i += 1) result = (result * (n - k + i)) / i
  return result
}

export function summarisePairs(pairs: ReadonlyArray<Pair>): PairedSummary {
  const usable = pairs.filter((pair) => Number.isFinite(pair.base) && Number.isFinite(pair.head))
  const lower = usable.filter((pair) => pair.head < pair.base).length
  const higher = usable.filter((pair) => pair.head > pair.base).length
  return {
    pairs: usable.length,
    baseMedian: median(usable.map((pair) => pair.base)),
    headMedian: median(usable.map((pair) => pair.head)),
    medianDifference: median(usable.map((pair) => pair.head - pair.base)),
    lower,
    higher,
    equal: usable.length - lower - higher,
    signTestP: signTestP(lower, higher),
  }
}
