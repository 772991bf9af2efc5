// A model failure in public words, written once for every caller: a turn's failed step (its code,
// its message and the text streamed before it failed) and a compile step (the same code and
// message, and whether another attempt may pass). The codes are listed in docs/api.md.
import type { ModelError } from './model.ts'
import { isRetryableStatus } from './retry-policy.ts'

export interface ModelFailure {
  /** `provider.http`, `provider.connection`, … */
  readonly code: string
  /** For people: never holds a key or an endpoint (the errors are scrubbed where they are made). */
  readonly message: string
  /** The same request may pass later (a rate limit, a dropped connection); a refused request, a missing key will not. */
  readonly retryable: boolean
  /** What the model streamed before it failed ('' when nothing). */
  readonly partialText: string
}

export function describeModelError(error: ModelError): ModelFailure {
  switch (error._tag) {
    case 'ProviderHttpError':
      return {
        code: 'provider.http',
        message: `the model provider answered HTTP ${error.status}${error.code ? ` (${error.code})` : ''}: ${error.message}`,
        retryable: isRetryableStatus(error.status),
        partialText: '',
      }
    case 'ProviderConnectionError':
      return { code: 'provider.connection', message: `could not reach the model provider: ${error.message}`, retryable: true, partialText: '' }
    case 'ProviderStreamError':
      return {
        code: 'provider.stream_error',
        message: `the model provider reported an error${error.code ? ` (${error.code})` : ''}: ${error.message}`,
        retryable: true,
        partialText: error.partialText,
      }
    case 'StreamIncomplete':
      return { code: 'provider.incomplete', message: `incomplete model response: ${error.message}`, retryable: true, partialText: error.partialText }
    case 'StreamIdleTimeout':
      return { code: 'provider.idle_timeout', message: `the model sent nothing for ${error.idleMs} ms`, retryable: true, partialText: error.partialText }
    case 'ProviderProtocolError':
      return { code: 'provider.protocol', message: `unreadable model response: ${error.message}`, retryable: true, partialText: error.partialText }
    case 'MissingApiKey':
      return {
        code: 'provider.missing_api_key',
        message: `model "${error.modelId}" has no API key: set the environment variable ${error.envName} on the server and restart it`,
        retryable: false,
        partialText: '',
      }
  }
  // Every ModelError is above; a model of an embedder's may still fail with something else.
  const other: { readonly _tag?: string; readonly message?: string } = error satisfies never
  return { code: 'provider.error', message: other.message ?? other._tag ?? 'the model failed', retryable: true, partialText: '' }
}
