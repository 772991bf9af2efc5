import { describe, expect, test } from 'vitest'
import { parseProviderErrorBody, readProviderErrorPayload, truncateForDisplay } from './provider-error-payload.ts'

describe('readProviderErrorPayload', () => {
  test.each([
    ['OpenAI', { error: { message: 'm', type: 't', code: 'c' } }, { code: 'c', message: 'm' }],
    ['OpenAI, code null → type', { error: { message: 'm', type: 't', code: null } }, { code: 't', message: 'm' }],
    ['numeric code', { error: { code: 429, message: 'm' } }, { code: '429', message: 'm' }],
    ['error as a string', { error: 'plain' }, { code: undefined, message: 'plain' }],
    ['error object without message', { error: { code: 'x' } }, { code: 'x', message: '{"code":"x"}' }],
    ['vLLM', { object: 'error', message: 'm', type: 'BadRequestError', code: 400 }, { code: '400', message: 'm' }],
    ['DashScope', { code: 'Throttling', message: 'Requests rate limit exceeded', request_id: 'r' }, { code: 'Throttling', message: 'Requests rate limit exceeded' }],
    ['FastAPI', { detail: 'Not Found' }, { code: undefined, message: 'Not Found' }],
  ])('%s', (_name, value, expected) => {
    expect(readProviderErrorPayload(value)).toEqual(expected)
  })

  test.each([
    ['a normal chunk', { choices: [{ delta: { content: 'hi' } }] }],
    ['a chunk with message and code but also choices', { choices: [], message: 'x', code: 'y' }],
    ['error: null', { error: null, choices: [] }],
    ['a string', 'error'],
    ['null', null],
  ])('not an error: %s', (_name, value) => {
    expect(readProviderErrorPayload(value)).toBeUndefined()
  })
})

describe('parseProviderErrorBody', () => {
  test('JSON shapes, plain text, and the status text for an empty body', () => {
    expect(parseProviderErrorBody({ bodyText: '{"error":{"code":"c","message":"m"}}', statusText: 'Bad Request' })).toEqual({ code: 'c', message: 'm' })
    expect(parseProviderErrorBody({ bodyText: '  <html>Bad gateway</html>\n', statusText: 'Bad Gateway' })).toEqual({
      code: undefined,
      message: '<html>Bad gateway</html>',
    })
    expect(parseProviderErrorBody({ bodyText: '', statusText: 'Service Unavailable' })).toEqual({ code: undefined, message: 'Service Unavailable' })
  })
})

describe('truncateForDisplay', () => {
  test('cuts at code points, never inside one, marking the cut', () => {
    expect(truncateForDisplay('🎉'.repeat(600))).toBe(`${'🎉'.repeat(499)}…`)
    expect(truncateForDisplay('short')).toBe('short')
    expect(truncateForDisplay('🎉'.repeat(300))).toBe('🎉'.repeat(300))
  })
})
