import { describe, expect, it } from 'vitest'
import { holdsNul } from './json-body.ts'

describe('holdsNul', () => {
  it('finds a NUL in any string or key, however deep', () => {
    expect(holdsNul({ a: [{ b: 'x\u0000' }] })).toBe(true)
    expect(holdsNul({ ['k\u0000']: 1 })).toBe(true)
    expect(holdsNul({ a: ['x', 1, null, { b: 'y' }] })).toBe(false)
  })

  it('walks a very long array (an argument list of that size would overflow the stack)', () => {
    const items = Array.from({ length: 300_000 }, (_, i) => i)
    expect(holdsNul({ items })).toBe(false)
    expect(holdsNul({ items: [...items, 'z\u0000'] })).toBe(true)
  })
})
