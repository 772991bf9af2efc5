import { afterEach, describe, expect, it, vi } from 'vitest'
import { parseCommand } from './static/js/commands.js'
import { newMessageKey } from './static/js/message-key.js'

describe('parseCommand', () => {
  it.each([
    ['/ls', { kind: 'dialog' }],
    ['/ls deep/', { kind: 'run', command: 'ls', path: 'deep/' }],
    ['/read guide.md', { kind: 'run', command: 'read', path: 'guide.md', offset: undefined }],
    ['/read my notes.md 3000', { kind: 'run', command: 'read', path: 'my notes.md', offset: '3000' }],
    ['/search  missing done ', { kind: 'run', command: 'search', query: 'missing done' }],
    ['/status', { kind: 'run', command: 'status', path: undefined }],
    ['/STATUS kb://me/a/', { kind: 'run', command: 'status', path: 'kb://me/a/' }],
    ['/compile', { kind: 'compile' }],
    ['/compiler', { kind: 'compile' }],
    ['/parse everything', { kind: 'compile' }],
  ])('%s', (text, parsed) => {
    expect(parseCommand(text)).toEqual(parsed)
  })

  it.each([
    ['/read', 'Usage: /read'],
    ['/search', 'Usage: /search'],
    ['/rm -rf', 'Unknown command /rm'],
  ])('%s is refused with guidance', (text, message) => {
    expect(parseCommand(text)).toMatchObject({ kind: 'error', message: expect.stringContaining(message) })
  })
})

describe('newMessageKey', () => {
  afterEach(() => vi.unstubAllGlobals())

  it('uses crypto.randomUUID when the page has it', () => {
    vi.stubGlobal('crypto', { randomUUID: () => '0b0b0b0b-0000-4000-8000-000000000000' })
    expect(newMessageKey()).toBe('0b0b0b0b-0000-4000-8000-000000000000')
  })

  it('falls back to a timestamp and a counter, distinct on every call, without randomUUID', () => {
    vi.stubGlobal('crypto', {})
    const keys = Array.from({ length: 50 }, () => newMessageKey())
    expect(new Set(keys).size).toBe(50)
    for (const key of keys) expect(key).toMatch(/^m[0-9a-z]+-[0-9a-z]+$/)
  })
})
