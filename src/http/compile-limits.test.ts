import { describe, expect, it } from 'vitest'
import { HttpError } from './http-errors.ts'
import { createStreamCap } from './compile-limits.ts'

describe('createStreamCap', () => {
  it('admits up to the cap per person, refuses one more with 429 too_many_streams, and counts people apart', () => {
    const cap = createStreamCap(2)
    cap.hold('ana')
    cap.hold('ana')
    expect(() => cap.hold('ana')).toThrow(expect.objectContaining({ status: 429, code: 'too_many_streams' }) as HttpError)
    expect(cap.hold('ben')).toBeTypeOf('function')
    expect([cap.open('ana'), cap.open('ben')]).toEqual([2, 1])
  })

  it('gives a place back once, however often its release is called', () => {
    const cap = createStreamCap(2)
    const release = cap.hold('ana')
    cap.hold('ana')
    release()
    release()
    expect(cap.open('ana')).toBe(1)
    cap.hold('ana')
    expect(() => cap.hold('ana')).toThrow(HttpError)
  })

  it('forgets a person with no stream open', () => {
    const cap = createStreamCap(1)
    cap.hold('ana')()
    expect(cap.open('ana')).toBe(0)
    expect(cap.hold('ana')).toBeTypeOf('function')
  })
})
