import { describe, expect, it } from 'vitest'
import { addressKey, DEFAULT_SIGN_IN_POLICY, failureMemoryMs, lockoutMs } from './sign-in-throttle.ts'

describe('lockoutMs', () => {
  const policy = { ...DEFAULT_SIGN_IN_POLICY, baseLockoutMs: 1000, maxLockoutMs: 60_000 }
  it.each([
    [5, 0],
    [6, 1000],
    [7, 2000],
    [8, 4000],
    [12, 60_000],
    [10_000, 60_000],
  ])('after failure %i locks for %i ms (5 free)', (failures, ms) => {
    expect(lockoutMs({ failures, free: 5, policy })).toBe(ms)
  })

  it('remembers failures longer than the longest lock-out', () => {
    expect(failureMemoryMs({ ...policy, maxLockoutMs: 2 * 3600_000 })).toBe(8 * 3600_000)
    expect(failureMemoryMs(policy)).toBe(3600_000)
  })
})

describe('addressKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bb::99', '2001:db8:aa:bb::/64'],
    ['2001:DB8::1', '2001:db8:0:0::/64'],
    ['2001:0db8:0000:0001::1%eth0', '2001:db8:0:1::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, 'unknown'],
    ['not an address', 'unknown'],
  ])('%s → %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })
})
