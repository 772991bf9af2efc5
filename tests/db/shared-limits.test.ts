// Limits that must hold across every server process sharing one PostgreSQL: the per-user stream
// rate limit and sign-in throttling. Two pools on one database stand for two processes; time is
// injected, never slept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgres, type DatabaseHandle } from '../../src/effects/db/database.ts'
import { createRateLimiter } from '../../src/effects/limits/rate-limiter.ts'
import { beginSignInAttempt, DEFAULT_SIGN_IN_POLICY, lockoutMs, type SignInPolicy } from '../../src/effects/auth/sign-in-throttle.ts'
import { openTestDatabase, synchronousCommitAround, type TestDatabase } from '../support/test-database.ts'

let database: TestDatabase
let other: DatabaseHandle
beforeAll(async () => {
  database = await openTestDatabase('postgres')
  other = await openPostgres({ url: database.url!, max: 5 })
})
afterAll(async () => {
  await other?.close()
  await database?.close()
})

describe('the stream rate limit in PostgreSQL', () => {
  it('holds across two processes: a sliding window of `limit` hits per key, with the wait until a slot frees', async () => {
    let now = 1_000_000
    const clock = () => now
    const first = createRateLimiter({ db: database.db, limit: 3, windowMs: 60_000, now: clock })
    const second = createRateLimiter({ db: other.db, limit: 3, windowMs: 60_000, now: clock })
    expect(await first.take('stream:u1')).toBe(0)
    now += 10_000
    expect(await second.take('stream:u1')).toBe(0)
    expect(await first.take('stream:u1')).toBe(0)
    expect(await second.take('stream:u2')).toBe(0) // another user is not affected
    expect(await second.take('stream:u1')).toBe(50_000)
    expect(await first.take('stream:u1')).toBe(50_000) // refused takes are not counted
    now += 50_000 // the first hit leaves the window
    expect(await first.take('stream:u1')).toBe(0)
    expect(await second.take('stream:u1')).toBe(10_000)
  })

  it("keeps the log in time order when a process's clock is behind: its hit counts from the latest one recorded", async () => {
    const at = 20_000_000
    let aheadNow = at
    const ahead = createRateLimiter({ db: database.db, limit: 2, windowMs: 60_000, now: () => aheadNow })
    const behind = createRateLimiter({ db: other.db, limit: 2, windowMs: 60_000, now: () => at - 5_000 })
    expect(await ahead.take('stream:skew')).toBe(0)
    expect(await behind.take('stream:skew')).toBe(0) // recorded at `at`, not 5 s before it
    const row = await database.db.selectFrom('rate_limit_hits').select('hits').where('key', '=', 'stream:skew').executeTakeFirstOrThrow()
    expect(row.hits.map((hit) => new Date(hit).getTime())).toEqual([at, at])
    aheadNow = at + 55_001 // the behind process's own time would have left the window by now
    expect(await ahead.take('stream:skew')).toBe(4_999)
    aheadNow = at + 60_000
    expect(await ahead.take('stream:skew')).toBe(0)
  })

  it('holds for a long log: a limit of 1,000 admits exactly that many, then refuses until the oldest leaves', async () => {
    let now = 30_000_000
    const limiter = createRateLimiter({ db: database.db, limit: 1_000, windowMs: 60_000, now: () => now })
    for (let i = 0; i < 1_000; i++) {
      expect(await limiter.take('stream:long')).toBe(0)
      now += 50 // 1,000 hits over 50 s
    }
    expect(await limiter.take('stream:long')).toBe(10_000) // the first hit leaves the window at 30,060,000
    now = 30_060_000
    expect(await limiter.take('stream:long')).toBe(0)
    const row = await database.db.selectFrom('rate_limit_hits').select('hits').where('key', '=', 'stream:long').executeTakeFirstOrThrow()
    expect(row.hits).toHaveLength(1_000) // the expired hit is dropped, the new one appended
  })

  it("turns off waiting for the flush for the take's own transaction only: the connection's setting is unchanged after it", async () => {
    const settings = await synchronousCommitAround(database.db, async (db) => {
      const limiter = createRateLimiter({ db, limit: 2, windowMs: 60_000, now: () => 40_000_000 })
      expect(await limiter.take('stream:durability')).toBe(0)
    })
    expect(settings).toEqual(['on', 'on'])
  })

  it('admits exactly `limit` of many concurrent takes from both processes', async () => {
    const now = () => 5_000_000
    const limiters = [database.db, other.db].map((db) => createRateLimiter({ db, limit: 5, windowMs: 60_000, now }))
    const waits = await Promise.all(Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.take('stream:burst')))
    expect(waits.filter((w) => w === 0)).toHaveLength(5)
  })
})

describe('sign-in throttling in PostgreSQL', () => {
  const policy: SignInPolicy = { ...DEFAULT_SIGN_IN_POLICY, freeFailuresPerLogin: 3, freeFailuresPerAddress: 100, baseLockoutMs: 1000, maxLockoutMs: 8000 }

  it('locks a login out for exponentially longer after its free failures, shared by both processes', async () => {
    let now = 10_000_000
    const attempt = (db: DatabaseHandle['db'], address = '198.51.100.1') => beginSignInAttempt(db, { login: 'alice', address, now, policy })
    for (let i = 0; i < 3; i++) expect((await attempt(i % 2 ? other.db : database.db)).ok).toBe(true)
    expect((await attempt(other.db)).ok).toBe(true) // the 4th failure is checked, then locks for 1 s
    const locked = await attempt(database.db, '203.0.113.9') // from anywhere
    expect(locked).toEqual({ ok: false, scope: 'login', retryAfterMs: lockoutMs({ failures: 4, free: 3, policy }) })
    now += 1000
    expect((await attempt(database.db)).ok).toBe(true) // 5th failure: 2 s
    now += 1999
    expect(await attempt(other.db)).toEqual({ ok: false, scope: 'login', retryAfterMs: 1 })
    now += 1
    expect((await attempt(other.db)).ok).toBe(true) // 6th: 4 s
    now += 4000
    expect((await attempt(other.db)).ok).toBe(true) // 7th: 8 s (the cap)
    now += 8000
    expect((await attempt(other.db)).ok).toBe(true) // 8th: still 8 s
    expect(await attempt(database.db)).toEqual({ ok: false, scope: 'login', retryAfterMs: 8000 })
  })

  it('a success after the lock-out clears the login; the attempts that were refused were never checked', async () => {
    let now = 20_000_000
    const attempt = () => beginSignInAttempt(database.db, { login: 'bob', address: '198.51.100.2', now, policy })
    for (let i = 0; i < 4; i++) expect((await attempt()).ok).toBe(true)
    expect((await attempt()).ok).toBe(false)
    now += 1000
    const allowed = await attempt()
    if (!allowed.ok) throw new Error('expected the lock-out to have passed')
    await allowed.succeeded()
    for (let i = 0; i < 4; i++) expect((await attempt()).ok).toBe(true) // free failures again
  })

  it('an attempt whose password was never checked (server busy) is not held against the login or the address', async () => {
    const now = 25_000_000
    const attempt = () => beginSignInAttempt(database.db, { login: 'busy', address: '198.51.100.3', now, policy })
    for (let i = 0; i < 10; i++) {
      const admitted = await attempt()
      if (!admitted.ok) throw new Error(`attempt ${i} was refused`)
      await admitted.notChecked()
    }
    for (let i = 0; i < 4; i++) expect((await attempt()).ok).toBe(true) // still 3 free failures + 1
    expect((await attempt()).ok).toBe(false)
  })

  it('counts a client address across logins, with its own threshold', async () => {
    const now = 30_000_000
    const strict = { ...policy, freeFailuresPerAddress: 2, freeFailuresPerLogin: 100 }
    const attempt = (login: string) => beginSignInAttempt(other.db, { login, address: '2001:db8:1:2::7', now, policy: strict })
    expect((await attempt('u1')).ok).toBe(true)
    expect((await attempt('u2')).ok).toBe(true)
    expect((await attempt('u3')).ok).toBe(true)
    // the same /64, another address
    expect(await beginSignInAttempt(database.db, { login: 'u4', address: '2001:db8:1:2::99', now, policy: strict })).toEqual({
      ok: false,
      scope: 'address',
      retryAfterMs: 1000,
    })
    expect((await beginSignInAttempt(database.db, { login: 'u4', address: '2001:db8:1:3::99', now, policy: strict })).ok).toBe(true)
  })

  it('admits at most free + 1 of many concurrent guesses at one login (the rest are refused before any hash)', async () => {
    const now = 40_000_000
    const attempts = await Promise.all(
      Array.from({ length: 30 }, (_, i) => beginSignInAttempt(i % 2 ? other.db : database.db, { login: 'carol', address: `192.0.2.${i}`, now, policy })),
    )
    expect(attempts.filter((a) => a.ok)).toHaveLength(policy.freeFailuresPerLogin + 1)
  })
})
