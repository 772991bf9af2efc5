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
})
