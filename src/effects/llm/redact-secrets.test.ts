import { describe, expect, test } from 'vitest'
import { ProviderHttpError, ProviderStreamError } from './model-errors.ts'
import { createProviderRedactors, createRedactor, redactModelError, redactModelResult } from './redact-secrets.ts'

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
