import { describe, expect, test } from 'vitest'
import { computeRetryDelayMs, isRetryableStatus, parseRetryAfterMs } from './retry-policy.ts'

const NOW = Date.parse('2026-03-01T12:00:00Z')

describe('parseRetryAfterMs', () => {
  test.each([
    [{ 'retry-after': '3' }, 3000],
    [{ 'retry-after': '0' }, 0],
    [{ 'retry-after': '1.5' }, 1500],
    [{ 'retry-after': 'Sun, 01 Mar 2026 12:00:07 GMT' }, 7000],
    [{ 'retry-after': 'Sun, 01 Mar 2026 11:59:00 GMT' }, 0],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'retry-after': 'soon' }, undefined],
    [{ 'retry-after': '-5' }, undefined],
    [{}, undefined],
  ])('%j → %s', (headers, expected) => {
    expect(parseRetryAfterMs({ headers: new Headers(headers), nowMs: NOW })).toBe(expected)
  })
})

describe('computeRetryDelayMs', () => {
  test('exponential backoff from the base delay, capped', () => {
    expect([0, 1, 2, 3].map((retryNumber) => computeRetryDelayMs({ retryNumber, retryAfterMs: undefined, baseDelayMs: 100, maxDelayMs: 500 }))).toEqual([
      100, 200, 400, 500,
    ])
  })

  test('Retry-After wins; beyond the cap it means do not retry', () => {
    expect(computeRetryDelayMs({ retryNumber: 0, retryAfterMs: 1500, maxDelayMs: 2000 })).toBe(1500)
    expect(computeRetryDelayMs({ retryNumber: 0, retryAfterMs: 2001, maxDelayMs: 2000 })).toBeUndefined()
  })
})

test.each([
  [408, true],
  [429, true],
  [500, true],
  [503, true],
  [599, true],
  [400, false],
  [401, false],
  [404, false],
  [422, false],
])('isRetryableStatus(%i) = %s', (status, expected) => {
  expect(isRetryableStatus(status)).toBe(expected)
})
