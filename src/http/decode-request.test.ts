import { describe, expect, it } from 'vitest'
import * as Schema from 'effect/Schema'
import type { Request } from 'express'
import { decodeBody, decodeQuery, QueryInt, SafeInt } from './decode-request.ts'

const query = (q: Record<string, unknown>) => ({ query: q }) as unknown as Request
const Page = Schema.Struct({ offset: Schema.optional(QueryInt({ minimum: 0 })), limit: Schema.optional(QueryInt({ minimum: 1, maximum: 500 })) })

describe('decodeQuery', () => {
  it('decodes whole numbers within range', () => {
    expect(decodeQuery(Page, query({ offset: '40', limit: '500', other: 'x' }))).toEqual({ offset: 40, limit: 500 })
    expect(decodeQuery(Page, query({}))).toEqual({})
  })

  it.each([
    ['offset', '1e400'],
    ['offset', '99999999999999999999'],
    ['offset', '9007199254740992'],
    ['offset', '-1'],
    ['offset', '1.5'],
    ['offset', ' 1'],
    ['offset', ''],
    ['limit', '-1'],
    ['limit', '0'],
    ['limit', 'abc'],
    ['limit', '501'],
    ['limit', ['1', '2']],
  ])('refuses %s=%j with 400 invalid_request', (name, value) => {
    expect(() => decodeQuery(Page, query({ [name]: value }))).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request' }))
  })
})

describe('decodeBody', () => {
  const Body = Schema.Struct({ offset: Schema.optional(SafeInt({ minimum: 0 })) })

  it('accepts the _csrf form field and refuses other unknown fields', () => {
    expect(decodeBody(Body, { _csrf: 'token', offset: 3 })).toEqual({ offset: 3 })
    expect(() => decodeBody(Body, { extra: 1 })).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request' }))
  })

  it.each([1e20, Infinity, -1, 2.5, Number.MAX_SAFE_INTEGER + 1])('refuses the number %d', (offset) => {
    expect(() => decodeBody(Body, { offset })).toThrow(expect.objectContaining({ code: 'invalid_request' }))
  })

  it('refuses what is not an object', () => {
    expect(() => decodeBody(Body, [])).toThrow(expect.objectContaining({ code: 'invalid_body' }))
  })
})

describe('what a refusal says', () => {
  const Query = Schema.Struct({ notice: Schema.optional(Schema.Literals(['uploaded', 'token_revoked'])), limit: Schema.optional(QueryInt({ minimum: 1, maximum: 500 })) })
  const Body = Schema.Struct({ name: Schema.String, items: Schema.Array(Schema.Struct({ n: Schema.Number })) })
  const messageOf = (run: () => unknown) => {
    try {
      run()
    } catch (error) {
      return (error as Error).message
    }
    throw new Error('it decoded')
  }

  it('names each field and what it must be, in words, not the schema', () => {
    expect(messageOf(() => decodeQuery(Query, query({ notice: 'x' })))).toBe('invalid request: "notice" must be one of "uploaded", "token_revoked"')
    expect(messageOf(() => decodeQuery(Query, query({ limit: '-1' })))).toBe('invalid request: "limit": expected a whole number from 1 to 500')
    expect(messageOf(() => decodeBody(Body, { extra: 1, items: [{ n: 'x' }] }))).toBe(
      'invalid request: "extra" is not a field this request takes; "name" is required; "items[0].n": expected number',
    )
  })
})
