import { describe, expect, it } from 'vitest'
import type { Db } from '../db/schema.ts'
import { callKey, makeRunningCalls } from './running-calls.ts'

/** No feed: nothing may reach the database (the NOTIFY is for other processes). */
const noDatabase = new Proxy({}, { get: (_target, name) => { throw new Error(`the database was used (${String(name)})`) } }) as Db

describe('callKey', () => {
  it('names one credential\'s, one session\'s, one request id\'s call: any other part gives another key', () => {
    const key = callKey({ credential: 'token-a', session: 's-1', requestId: 7 })
    expect(key).toMatch(/^[0-9a-f]{64}$/)
    expect(callKey({ credential: 'token-a', session: 's-1', requestId: 7 })).toBe(key)
    for (const other of [
      { credential: 'token-b', session: 's-1', requestId: 7 },
      { credential: 'token-a', session: 's-2', requestId: 7 },
      { credential: 'token-a', session: 's-1', requestId: 8 },
      { credential: 'token-a', session: 's-1', requestId: '7' }, // JSON-RPC ids 7 and "7" are different requests
      { credential: 'token-a', session: '', requestId: 7 },
    ]) {
      expect(callKey(other)).not.toBe(key)
    }
    expect(key).not.toContain('token-a')
  })
})

describe('makeRunningCalls', () => {
  it('a cancel aborts the call with its key only, and a released call is no longer cancelled', async () => {
    const calls = makeRunningCalls({ db: noDatabase, feed: undefined })
    const first = calls.start({ key: 'k1', userId: 'u' })!
    const second = calls.start({ key: 'k2', userId: 'u' })!
    await calls.cancel('k1', 'stop')
    expect(first.signal.aborted).toBe(true)
    expect(first.signal.reason).toBe('stop')
    expect(second.signal.aborted).toBe(false)
    second.release()
    await calls.cancel('k2', 'late') // nothing runs under it any more: a no-op, not a database call
    expect(second.signal.aborted).toBe(false)
    first.release()
    expect(calls.size()).toBe(0)
  })

  it('holds each user to perUser calls at once; a release (once, however often it is called) frees a place', () => {
    const calls = makeRunningCalls({ db: noDatabase, feed: undefined, perUser: 2 })
    const a = calls.start({ key: 'a', userId: 'alice' })!
    calls.start({ key: 'b', userId: 'alice' })
    expect(calls.start({ key: 'c', userId: 'alice' })).toBeUndefined()
    expect(calls.start({ key: 'd', userId: 'bob' })).toBeDefined()
    a.release()
    a.release()
    expect(calls.start({ key: 'c', userId: 'alice' })).toBeDefined()
    expect(calls.start({ key: 'e', userId: 'alice' })).toBeUndefined()
  })

  it('close aborts every running call', () => {
    const calls = makeRunningCalls({ db: noDatabase, feed: undefined })
    const call = calls.start({ key: 'k', userId: 'u' })!
    calls.close()
    expect(call.signal.aborted).toBe(true)
  })
})
