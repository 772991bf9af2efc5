import { describe, expect, it } from 'vitest'
import type { ModelError } from './model.ts'
import { describeModelError } from './model-failure.ts'
import {
  MissingApiKey,
  ProviderConnectionError,
  ProviderHttpError,
  ProviderProtocolError,
  ProviderStreamError,
  StreamIdleTimeout,
  StreamIncomplete,
} from './model-errors.ts'

describe('describeModelError: a model failure in public words, for the turn and the compile steps alike', () => {
  it.each<[string, ModelError, { code: string; message: string; retryable: boolean; partialText: string }]>([
    [
      'a rate limit',
      new ProviderHttpError({ status: 429, code: 'rate_limited', message: 'slow down', retryAfterMs: 1000 }),
      { code: 'provider.http', message: 'the model provider answered HTTP 429 (rate_limited): slow down', retryable: true, partialText: '' },
    ],
    ['a request timeout', new ProviderHttpError({ status: 408, code: undefined, message: 'late', retryAfterMs: undefined }), { code: 'provider.http', message: 'the model provider answered HTTP 408: late', retryable: true, partialText: '' }],
    ['a refused request', new ProviderHttpError({ status: 400, code: undefined, message: 'bad', retryAfterMs: undefined }), { code: 'provider.http', message: 'the model provider answered HTTP 400: bad', retryable: false, partialText: '' }],
    ['a refused connection', new ProviderConnectionError({ message: 'ECONNREFUSED' }), { code: 'provider.connection', message: 'could not reach the model provider: ECONNREFUSED', retryable: true, partialText: '' }],
    [
      "a stream error, with the provider's code",
      new ProviderStreamError({ code: 'overloaded', message: 'try later', partialText: 'par' }),
      { code: 'provider.stream_error', message: 'the model provider reported an error (overloaded): try later', retryable: true, partialText: 'par' },
    ],
    ['a stream cut off', new StreamIncomplete({ message: 'EOF without [DONE]', partialText: 'half' }), { code: 'provider.incomplete', message: 'incomplete model response: EOF without [DONE]', retryable: true, partialText: 'half' }],
    ['silence', new StreamIdleTimeout({ idleMs: 30_000, partialText: 'idle' }), { code: 'provider.idle_timeout', message: 'the model sent nothing for 30000 ms', retryable: true, partialText: 'idle' }],
    ['an unreadable chunk', new ProviderProtocolError({ message: 'not JSON', partialText: 'x' }), { code: 'provider.protocol', message: 'unreadable model response: not JSON', retryable: true, partialText: 'x' }],
    [
      'a missing key',
      new MissingApiKey({ modelId: 'm', envName: 'M_KEY', message: 'no key' }),
      { code: 'provider.missing_api_key', message: 'model "m" has no API key: set the environment variable M_KEY on the server and restart it', retryable: false, partialText: '' },
    ],
  ])('%s', (_, error, described) => {
    expect(describeModelError(error)).toEqual(described)
  })

  it('describes a failure outside the ModelError union (an embedder’s model) as provider.error', () => {
    const odd = { _tag: 'Weird', message: 'odd' } as unknown as ModelError
    expect(describeModelError(odd)).toEqual({ code: 'provider.error', message: 'odd', retryable: true, partialText: '' })
  })
})
