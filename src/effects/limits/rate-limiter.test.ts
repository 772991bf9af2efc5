import { describe, expect, it } from 'vitest'
import { waitMsFor } from './rate-limiter.ts'

describe('waitMsFor', () => {
  it('waits until the oldest hit that fills the window leaves it', () => {
    expect(waitMsFor({ hits: [1_000, 11_000], now: 12_000, limit: 2, windowMs: 60_000 })).toBe(49_000)
  })

  it('ignores hits already outside the window and sorts what it keeps', () => {
    expect(waitMsFor({ hits: [30_000, 500, 20_000, 10_000], now: 61_000, limit: 3, windowMs: 60_000 })).toBe(9_000)
  })

  it('says "try again at once" when the window has room again', () => {
    expect(waitMsFor({ hits: [1_000], now: 2_000, limit: 2, windowMs: 60_000 })).toBe(1)
  })
})
