import * as Data from 'effect/Data'

/** Non-2xx HTTP answer from the provider. `message` is truncated to 500 characters and never holds a key. */
export class ProviderHttpError extends Data.TaggedError('ProviderHttpError')<{
  readonly status: number
  readonly code: string | undefined
  readonly message: string
  readonly retryAfterMs: number | undefined
}> {}

/** Could not connect / connection reset before any byte of the body. */
export class ProviderConnectionError extends Data.TaggedError('ProviderConnectionError')<{
  readonly message: string
}> {}

/** The provider sent an error payload inside the stream. Text received so far is kept. */
export class ProviderStreamError extends Data.TaggedError('ProviderStreamError')<{
  readonly code: string | undefined
  readonly message: string
  readonly partialText: string
}> {}

/** EOF (or connection loss) without `[DONE]` and without a finish reason. */
export class StreamIncomplete extends Data.TaggedError('StreamIncomplete')<{
  readonly message: string
  readonly partialText: string
}> {}

/** No bytes for longer than the configured idle timeout. */
export class StreamIdleTimeout extends Data.TaggedError('StreamIdleTimeout')<{
  readonly idleMs: number
  readonly partialText: string
}> {}

/** A chunk that is not valid JSON / not a chat-completions chunk. */
export class ProviderProtocolError extends Data.TaggedError('ProviderProtocolError')<{
  readonly message: string
  readonly partialText: string
}> {}

/** Requested model id is not configured. Never falls back to another model. */
export class UnknownModel extends Data.TaggedError('UnknownModel')<{
  readonly modelId: string
}> {
  readonly code = 'unknown_model'
  readonly status = 400
  override get message() {
    return this.reason
  }
  get reason() {
    return `unknown model id "${this.modelId}"`
  }
}

/**
 * The model's `apiKeyEnv` names an environment variable that is unset or empty at call time.
 * Carries the variable's NAME only (never a value), so the operator knows what to set.
 */
export class MissingApiKey extends Data.TaggedError('MissingApiKey')<{
  readonly modelId: string
  readonly envName: string
  readonly message: string
}> {}
