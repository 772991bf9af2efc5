import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { ProviderHttpError, ProviderStreamError } from './model-errors.ts'
import { createProviderRedactors, createRedactor, createStreamRedactor, redactModelError, redactModelResult } from './redact-secrets.ts'

describe('createRedactor', () => {
  test('replaces every occurrence, longest secret first', () => {
    const redact = createRedactor(['abcd1234', 'abcd1234-long-suffix'])
    expect(redact('x abcd1234-long-suffix y abcd1234 z')).toBe('x [redacted] y [redacted] z')
  })

  test('ignores empty and very short secrets (they would mangle ordinary text)', () => {
    expect(createRedactor([undefined, '', 'ab'])('ab cd')).toBe('ab cd')
  })
})

describe('provider redactors', () => {
  const { redactMessage, redactOutput } = createProviderRedactors({ apiKey: 'sk-abc-123456', baseUrl: 'https://llm.internal:8443/v1/' })

  test('messages lose the key, the base URL and the host', () => {
    expect(redactMessage('key sk-abc-123456 at https://llm.internal:8443/v1/chat and llm.internal:8443')).toBe(
      'key [redacted] at [redacted]chat and [redacted]',
    )
  })

  test('model output loses only the key', () => {
    expect(redactOutput('sk-abc-123456 on llm.internal:8443')).toBe('[redacted] on llm.internal:8443')
  })

  test('a credential header with a scheme ("Bearer …") is redacted whole and as its token alone, which a provider may echo', () => {
    const { redactMessage: message, redactOutput: output } = createProviderRedactors({ apiKey: undefined, baseUrl: 'https://gw.example/v1', headers: { Authorization: 'Bearer tok-secret-9876' } })
    expect(message('invalid token tok-secret-9876 (Authorization: Bearer tok-secret-9876)')).toBe('invalid token [redacted] (Authorization: [redacted])')
    expect(output('I saw tok-secret-9876 somewhere')).toBe('I saw [redacted] somewhere')
  })

  test("a connection's extra headers: messages lose every value, output only a credential header's", () => {
    const withHeaders = createProviderRedactors({
      apiKey: undefined,
      baseUrl: 'https://gw.internal/v1',
      headers: { 'api-key': 'azure-secret-0042', 'X-Gateway-Token': ' gw-token-9 ', 'X-Title': 'knowagent' },
    })
    expect(withHeaders.redactMessage('401: api-key azure-secret-0042 / gw-token-9 rejected for knowagent')).toBe('401: api-key [redacted] / [redacted] rejected for [redacted]')
    expect(withHeaders.redactOutput('azure-secret-0042, gw-token-9 and knowagent')).toBe('[redacted], [redacted] and knowagent')
    expect(withHeaders.outputSecrets).toEqual([undefined, 'azure-secret-0042', 'gw-token-9'])
  })

  test('redactModelError keeps the tag and the other fields', () => {
    const error = redactModelError({
      error: new ProviderHttpError({ status: 401, code: 'sk-abc-123456', message: 'bad sk-abc-123456', retryAfterMs: 5 }),
      redactMessage,
      redactOutput,
    })
    expect(error).toBeInstanceOf(ProviderHttpError)
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      _tag: 'ProviderHttpError',
      status: 401,
      code: '[redacted]',
      message: 'bad [redacted]',
      retryAfterMs: 5,
    })
    const streamError = redactModelError({
      error: new ProviderStreamError({ code: undefined, message: 'm', partialText: 'said sk-abc-123456' }),
      redactMessage,
      redactOutput,
    })
    expect(streamError).toMatchObject({ _tag: 'ProviderStreamError', partialText: 'said [redacted]' })
  })

  test('redactModelResult covers text, thinking and tool arguments', () => {
    const result = redactModelResult({
      result: {
        text: 'sk-abc-123456',
        thinking: 'sk-abc-123456',
        toolCalls: [{ index: 0, id: 'c', name: 'n', rawArguments: '{"k":"sk-abc-123456"}', argumentsJson: '{"k":"sk-abc-123456"}', argumentsError: undefined }],
        finishReason: 'stop',
        rawFinishReason: 'stop',
        usage: undefined,
      },
      redactOutput,
    })
    expect(JSON.stringify(result)).not.toContain('sk-abc-123456')
    expect(JSON.parse(result.toolCalls[0]!.argumentsJson!)).toEqual({ k: '[redacted]' })
  })
})

describe('createStreamRedactor (issue 34: a key in streamed deltas reached the client verbatim)', () => {
  const KEY = 'sk-live-4f9c2a7e1b3d5f60'
  const OTHER = 'ghp_0123456789'

  test('a key split across three deltas is replaced; ordinary text before it is not held back', () => {
    const stream = createStreamRedactor([KEY])
    expect(stream.push('My key is sk-live-4f9')).toBe('My key is ')
    expect(stream.push('c2a7e1b3')).toBe('')
    expect(stream.push('d5f60 and that is all.')).toBe('[redacted] and that is all.')
    expect(stream.flush()).toBe('')
  })

  test('what was held back because it might have begun a key is sent when the stream ends', () => {
    const stream = createStreamRedactor([KEY])
    expect(stream.push('the prefix sk-li')).toBe('the prefix ')
    expect(stream.push('ke this')).toBe('sk-like thi') // a final "s" might begin the key
    expect(stream.push(' ends sk-')).toBe('s ends ')
    expect(stream.flush()).toBe('sk-')
  })

  propertyTest.prop([
    fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(KEY, OTHER, 'sk-', 'ghp_0', KEY.slice(0, 20))), { maxLength: 8 }),
    fc.array(fc.nat({ max: 200 }), { maxLength: 12 }),
  ])('at any cut: the output is the whole text redacted, no key is ever sent, at most the longest key − 1 characters wait', (pieces, cuts) => {
    const text = pieces.join('')
    const offsets = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b)
    const deltas = [0, ...offsets, text.length].slice(1).map((end, i, ends) => text.slice(i === 0 ? 0 : ends[i - 1], end))
    const stream = createStreamRedactor([KEY, OTHER])
    let sent = ''
    let received = 0
    for (const delta of deltas) {
      sent += stream.push(delta)
      received += delta.length
      expect(sent).not.toContain(KEY)
      expect(sent).not.toContain(OTHER)
      expect(createRedactor([KEY, OTHER])(text.slice(0, received)).length - sent.length).toBeLessThan(KEY.length)
    }
    sent += stream.flush()
    expect(sent).toBe(createRedactor([KEY, OTHER])(text))
  })
})
