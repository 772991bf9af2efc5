import { describe, expect, it } from 'vitest'
import { createRateLimiter } from './rate-limit.ts'

describe('createRateLimiter', () => {
  it('allows `limit` hits per window per key and says how long to wait', () => {
    let now = 1_000
    const limiter = createRateLimiter({ limit: 2, windowMs: 60_000, now: () => now })
    expect(limiter.take('a')).toBe(0)
    now += 10_000
    expect(limiter.take('a')).toBe(0)
    expect(limiter.take('b')).toBe(0)
    expect(limiter.take('a')).toBe(50_000)
    now += 50_000
    expect(limiter.take('a')).toBe(0)
  })
})
