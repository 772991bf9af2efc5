import { describe, expect, it } from 'vitest'
import { createTokenMemo } from './token-memo.ts'

const user = (id: string) => ({ id, login: `u${id}`, createdAt: new Date(0), role: 'member' as const })

describe('the token memo', () => {
  it('keeps a verified token for its time to live, then forgets it', () => {
    let now = 1_000
    const memo = createTokenMemo({ ttlMs: 60_000, now: () => now })
    memo.remember('h1', user('1'))
    now += 59_999
    expect(memo.get('h1')).toEqual(user('1'))
    now += 1
    expect(memo.get('h1')).toBeUndefined()
  })

  it('holds at most maxEntries, dropping the least recently remembered', () => {
    const memo = createTokenMemo({ maxEntries: 2 })
    memo.remember('h1', user('1'))
    memo.remember('h2', user('2'))
    memo.remember('h1', user('1')) // remembered again: now the newest
    memo.remember('h3', user('3'))
    expect(['h1', 'h2', 'h3'].map((hash) => memo.get(hash)?.id)).toEqual(['1', undefined, '3'])
  })

  it('forgets a token on request', () => {
    const memo = createTokenMemo()
    memo.remember('h1', user('1'))
    memo.forget('h1')
    expect(memo.get('h1')).toBeUndefined()
  })

  it('shares one lookup among the requests that ask for a token while it runs, and remembers what it found', async () => {
    const memo = createTokenMemo()
    let loads = 0
    let release!: (found: ReturnType<typeof user> | undefined) => void
    const load = () => {
      loads += 1
      return new Promise<ReturnType<typeof user> | undefined>((resolve) => (release = resolve))
    }
    const asked = [memo.lookup('h1', load), memo.lookup('h1', load), memo.lookup('h1', load)]
    expect(loads).toBe(1)
    release(user('1'))
    expect(await Promise.all(asked)).toEqual([user('1'), user('1'), user('1')])
    expect(memo.get('h1')).toEqual(user('1'))
    // the next lookup runs anew (the memo is a hint; a lookup is the full check)
    const again = memo.lookup('h1', load)
    expect(loads).toBe(2)
    release(undefined)
    expect(await again).toBeUndefined()
  })

  it('neither shares nor remembers a lookup under way once the token is forgotten, and shares no failure after it', async () => {
    const memo = createTokenMemo()
    const releases: Array<(found: ReturnType<typeof user> | undefined) => void> = []
    const load = () => new Promise<ReturnType<typeof user> | undefined>((resolve) => releases.push(resolve))
    const before = memo.lookup('h1', load)
    memo.forget('h1') // revoked meanwhile
    const after = memo.lookup('h1', load)
    expect(releases).toHaveLength(2)
    releases[0]!(user('1'))
    releases[1]!(undefined)
    expect(await before).toEqual(user('1'))
    expect(await after).toBeUndefined()
    expect(memo.get('h1')).toBeUndefined()
    const failing = memo.lookup('h2', () => Promise.reject(new Error('database down')))
    await expect(failing).rejects.toThrow('database down')
    expect(await memo.lookup('h2', async () => user('2'))).toEqual(user('2'))
  })
})
