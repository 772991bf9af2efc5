// A `ChatModel` over any OpenAI-compatible `POST {baseUrl}/chat/completions` streaming API.
//
// - one attempt = one `node:http(s)` POST (provider-transport.ts) whose socket is destroyed when
//   the Effect is interrupted: the provider sees the connection close at once, and the socket
//   never returns to the keep-alive pool
// - retries (429 / 408 / 5xx / connection failures) only before the first body byte, with
//   exponential backoff or the provider's Retry-After, at most `maxRetries` times
// - an idle watchdog ends the call when no byte arrives for `idleTimeoutMs`
// - the API key is read from the environment at call time and redacted from every error and
//   result; endpoints are redacted from error messages too
import * as Effect from 'effect/Effect'
import type { IncomingMessage } from 'node:http'
import { createChatCompletionStreamParser, type ChatStreamState } from './chat-completion-stream.ts'
import { toModelInfo, type ModelConfig } from './model-config.ts'
import {
  MissingApiKey,
  ProviderConnectionError,
  ProviderHttpError,
  ProviderProtocolError,
  ProviderStreamError,
  StreamIdleTimeout,
} from './model-errors.ts'
import type { ChatModel, ModelError, ModelRequest, ModelResult, ModelStreamEvent } from './model.ts'
import { parseProviderErrorBody, readProviderErrorPayload, truncateForDisplay } from './provider-error-payload.ts'
import {
  describeConnectionFailure,
  postToProvider,
  readLimitedText,
  toHeaders,
  type ProviderAgent,
  type ProviderRequest,
} from './provider-transport.ts'
import { createProviderRedactors, createStreamRedactor, redactModelError, redactModelResult } from './redact-secrets.ts'
import { describeModelError } from './model-failure.ts'
import { traced } from '../observability/tracing.ts'
import { createIdleWatchdog, type IdleWatchdog } from './idle-watchdog.ts'
import type { ServiceMetrics } from '../observability/metrics.ts'
import {
  DEFAULT_MAX_RETRIES,
  computeRetryDelayMs,
  isRetryableStatus,
  parseRetryAfterMs,
} from './retry-policy.ts'

export const DEFAULT_IDLE_TIMEOUT_MS = 60_000
/** Error bodies are read up to this many bytes (the message shown is cut to 500 characters). */
const ERROR_BODY_MAX_BYTES = 64 * 1024

export interface OpenAiChatModelOptions {
  /** Where `apiKeyEnv` is looked up, at call time (usually `process.env`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The key itself (a stored model connection's, decrypted): used instead of `apiKeyEnv`. */
  readonly apiKey?: string | undefined
  /** The connection pool (an `http.Agent` or `https.Agent` matching `baseUrl`); default: one shared keep-alive agent per protocol. */
  readonly agent?: ProviderAgent | undefined
  /** First backoff delay; doubled per retry. Default 500 ms. */
  readonly retryBaseDelayMs?: number | undefined
  /** Longest wait between attempts; a longer Retry-After is not retried. Default 20 s. */
  readonly maxRetryDelayMs?: number | undefined
  /** Counts each attempt by result, the retries and the idle timeouts (/metrics). */
  readonly metrics?: ServiceMetrics | undefined
}

/** An attempt's result as a metric label: `ok`, `http_<status>` or the failure's code. */
function attemptResult(outcome: AttemptOutcome): string {
  if (outcome.ok) return 'ok'
  return outcome.error._tag === 'ProviderHttpError' ? `http_${outcome.error.status}` : describeModelError(outcome.error).code
}

export function makeOpenAiChatModel(config: ModelConfig, options: OpenAiChatModelOptions): ChatModel {
  const url = new URL(`${config.baseUrl.replace(/\/+$/, '')}/chat/completions`)
  const maxRetries = config.maxRetries ?? DEFAULT_MAX_RETRIES
  const idleTimeoutMs = config.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS

  const stream = (request: ModelRequest): Effect.Effect<ModelResult, ModelError> =>
    Effect.suspend(() => {
      const apiKey = options.apiKey !== undefined ? { missing: false as const, value: options.apiKey } : readApiKey({ config, env: options.env })
      if (apiKey.missing) return Effect.fail(apiKey.error)
      const { outputSecrets, ...redactors } = createProviderRedactors({ apiKey: apiKey.value, baseUrl: config.baseUrl, headers: config.headers })
      const attemptInput: AttemptInput = {
        url,
        agent: options.agent,
        headers: buildRequestHeaders({ config, apiKey: apiKey.value }),
        body: JSON.stringify(buildChatCompletionsBody({ config, request })),
        idleTimeoutMs,
        onEvent: request.onEvent,
      }
      const attemptFrom = (retryNumber: number): Effect.Effect<ModelResult, ModelError> => {
        const redacting = redactStreamEvents({ onEvent: request.onEvent, secrets: outputSecrets })
        return Effect.flatMap(
          Effect.promise((signal) => traced('provider.request', { 'knowagent.model_id': config.id, 'knowagent.retry': retryNumber }, () => runAttempt({ ...attemptInput, onEvent: redacting.onEvent, signal }))),
          (outcome) => {
            redacting.flush()
            const metrics = options.metrics
            if (metrics?.enabled) {
              metrics.providerRequest(config.id, attemptResult(outcome))
              if (!outcome.ok && outcome.error._tag === 'StreamIdleTimeout') metrics.streamIdleTimeout(config.id)
            }
            if (outcome.ok) return Effect.succeed(redactModelResult({ result: outcome.result, ...redactors }))
            const delayMs = outcome.retryable
              ? computeRetryDelayMs({
                  retryNumber,
                  retryAfterMs: outcome.error._tag === 'ProviderHttpError' ? outcome.error.retryAfterMs : undefined,
                  baseDelayMs: options.retryBaseDelayMs,
                  maxDelayMs: options.maxRetryDelayMs,
                })
              : undefined
            if (delayMs === undefined || retryNumber >= maxRetries) {
              return Effect.fail(redactModelError({ error: outcome.error, ...redactors }))
            }
            options.metrics?.providerRetry(config.id)
            return Effect.andThen(Effect.sleep(delayMs), Effect.suspend(() => attemptFrom(retryNumber + 1)))
          },
        )
      }
      return attemptFrom(0)
    })

  return { info: toModelInfo(config), stream }
}

/**
 * The attempt's streamed text and thinking with the provider's key redacted as they go (the final
 * result is redacted as a whole): a key the model writes, even split across deltas, never reaches
 * a client — the JSON stream, the page and /v1 all project these events. `flush` sends what was
 * held back (a possible start of the key) when the attempt ends.
 */
export function redactStreamEvents({
  onEvent,
  secrets,
}: {
  readonly onEvent: ((event: ModelStreamEvent) => void) | undefined
  readonly secrets: ReadonlyArray<string | undefined>
}): { readonly onEvent: ((event: ModelStreamEvent) => void) | undefined; readonly flush: () => void } {
  if (onEvent === undefined) return { onEvent, flush: () => {} }
  const streams = { delta: createStreamRedactor(secrets), thinking: createStreamRedactor(secrets) }
  return {
    onEvent: (event) => {
      const text = streams[event.type].push(event.text)
      if (text !== '') onEvent({ type: event.type, text })
    },
    flush: () => {
      for (const type of ['delta', 'thinking'] as const) {
        const text = streams[type].flush()
        if (text !== '') onEvent({ type, text })
      }
    },
  }
}

/** The JSON body of a streaming chat-completions request. */
export function buildChatCompletionsBody({
  config,
  request,
}: {
  readonly config: ModelConfig
  readonly request: ModelRequest
}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: config.model,
    messages: request.messages,
    stream: true,
    [config.maxTokensField ?? 'max_tokens']: config.maxOutputTokens,
  }
  // A text-only model never gets tool schemas, whatever the caller passed.
  if (config.supportsNativeToolCalling && request.tools !== undefined && request.tools.length > 0) {
    body['tools'] = request.tools
  }
  if (config.streamUsage === true) body['stream_options'] = { include_usage: true }
  // Only a model configured with a reasoning effort takes one: a request's own never reaches another.
  if (config.reasoningEffort !== undefined) body['reasoning_effort'] = request.reasoningEffort ?? config.reasoningEffort
  return body
}

export function buildRequestHeaders({
  config,
  apiKey,
}: {
  readonly config: ModelConfig
  readonly apiKey: string | undefined
}): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }),
    ...config.headers,
  }
}

function readApiKey({
  config,
  env,
}: {
  readonly config: ModelConfig
  readonly env: Readonly<Record<string, string | undefined>>
}): { readonly missing: false; readonly value: string | undefined } | { readonly missing: true; readonly error: MissingApiKey } {
  if (config.apiKeyEnv === undefined) return { missing: false, value: undefined }
  const value = env[config.apiKeyEnv]?.trim()
  if (value !== undefined && value !== '') return { missing: false, value }
  return {
    missing: true,
    error: new MissingApiKey({
      modelId: config.id,
      envName: config.apiKeyEnv,
      message: `model "${config.id}" needs an API key: set the environment variable ${config.apiKeyEnv}`,
    }),
  }
}

// ---------------------------------------------------------------------------------------------
// One attempt: POST + read the body. Never rejects (except when `onEvent` throws, a defect).

interface AttemptInput {
  readonly url: URL
  readonly agent: ProviderAgent | undefined
  readonly headers: Record<string, string>
  readonly body: string
  readonly idleTimeoutMs: number
  readonly onEvent: ((event: ModelStreamEvent) => void) | undefined
}

type AttemptOutcome =
  | { readonly ok: true; readonly result: ModelResult }
  | { readonly ok: false; readonly error: ModelError; readonly retryable: boolean }

async function runAttempt(input: AttemptInput & { readonly signal: AbortSignal }): Promise<AttemptOutcome> {
  if (input.signal.aborted) return interruptedOutcome()
  const call = postToProvider({ url: input.url, headers: input.headers, body: input.body, agent: input.agent })
  // Interruption and the idle watchdog both end the call by destroying its socket.
  input.signal.addEventListener('abort', call.abort, { once: true })
  const watchdog = createIdleWatchdog({ idleMs: input.idleTimeoutMs, onIdle: call.abort })
  try {
    let response: IncomingMessage
    try {
      response = await call.response
    } catch (cause) {
      if (watchdog.fired()) return failed(new StreamIdleTimeout({ idleMs: input.idleTimeoutMs, partialText: '' }), false)
      if (input.signal.aborted) return interruptedOutcome()
      return failed(new ProviderConnectionError({ message: describeConnectionFailure(cause) }), true)
    }
    watchdog.touch()
    const status = response.statusCode ?? 0
    if (status < 200 || status > 299) return await readHttpError({ response, status, call, watchdog, idleMs: input.idleTimeoutMs })
    if (isJsonContentType(response)) return await readJsonInsteadOfStream({ response, call, watchdog, idleMs: input.idleTimeoutMs })
    return await readEventStream({ response, call, watchdog, input })
  } finally {
    watchdog.stop()
    input.signal.removeEventListener('abort', call.abort)
  }
}

/**
 * The body, chunk by chunk, straight into the stream parser from a 'data' listener. Ends at the
 * first decided state: `[DONE]` or a finish reason then EOF (success), an error payload, EOF or
 * a lost connection, the idle watchdog, or the caller's interruption.
 */
function readEventStream({
  response,
  call,
  watchdog,
  input,
}: {
  readonly response: IncomingMessage
  readonly call: ProviderRequest
  readonly watchdog: IdleWatchdog
  readonly input: AttemptInput & { readonly signal: AbortSignal }
}): Promise<AttemptOutcome> {
  const parser = createChatCompletionStreamParser({ onEvent: input.onEvent })
  return new Promise<AttemptOutcome>((resolve, reject) => {
    let receivedBytes = 0
    let settled = false
    let lastError: unknown
    const stopListening = (): void => {
      settled = true
      response.off('data', onData)
      response.off('end', onEnd)
      response.off('close', onLost)
    }
    const onData = (chunk: Buffer): void => {
      receivedBytes += chunk.byteLength
      watchdog.touch()
      let state: ChatStreamState
      try {
        state = parser.pushBytes(chunk)
      } catch (error) {
        // `onEvent` threw: a defect. Release the connection rather than leave it half-read.
        stopListening()
        call.abort()
        reject(error)
        return
      }
      if (state.status === 'streaming') return
      stopListening()
      if (state.status === 'succeeded') releaseAfterDone(response, call, input.signal)
      else call.abort() // an error payload: nothing more from this response is wanted
      resolve(fromStreamState(state))
    }
    const onEnd = (): void => {
      stopListening()
      resolve(fromStreamState(parser.end('eof')))
    }
    const onLost = (): void => {
      if (settled) return
      stopListening()
      if (watchdog.fired()) resolve(fromStreamState(parser.idle(input.idleTimeoutMs)))
      else if (input.signal.aborted) resolve(interruptedOutcome())
      else if (receivedBytes === 0) resolve(failed(new ProviderConnectionError({ message: describeConnectionFailure(lastError) }), true))
      else resolve(fromStreamState(parser.end('connection-lost')))
    }
    response.on('data', onData)
    response.once('end', onEnd)
    // A response cut short emits 'error' (ECONNRESET, "aborted") and then 'close' without 'end'.
    response.on('error', (error) => {
      lastError = error
    })
    response.once('close', onLost)
  })
}

/** Grace for the rest of a response after `[DONE]` (normally only the chunked terminator). */
const DRAIN_AFTER_DONE_MS = 1000

/**
 * After `[DONE]` the answer is known; the response normally ends a moment later. Let it end, so
 * the keep-alive socket goes back to the pool, but never wait on a provider that keeps talking,
 * nor past the caller's interruption (a stopped turn leaves no socket behind).
 */
function releaseAfterDone(response: IncomingMessage, call: ProviderRequest, signal: AbortSignal): void {
  if (response.complete) return
  if (signal.aborted) return call.abort()
  let bytes = 0
  const onData = (chunk: Buffer): void => {
    bytes += chunk.byteLength
    if (bytes > ERROR_BODY_MAX_BYTES) call.abort()
  }
  const timer = setTimeout(call.abort, DRAIN_AFTER_DONE_MS)
  timer.unref()
  signal.addEventListener('abort', call.abort, { once: true })
  response.on('data', onData)
  response.once('close', () => {
    clearTimeout(timer)
    signal.removeEventListener('abort', call.abort)
    response.off('data', onData)
  })
}

async function readHttpError({
  response,
  status,
  call,
  watchdog,
  idleMs,
}: {
  readonly response: IncomingMessage
  readonly status: number
  readonly call: ProviderRequest
  readonly watchdog: IdleWatchdog
  readonly idleMs: number
}): Promise<AttemptOutcome> {
  const retryAfterMs = parseRetryAfterMs({ headers: toHeaders(response.headers), nowMs: Date.now() })
  const bodyText = await readLimitedText({ response, maxBytes: ERROR_BODY_MAX_BYTES, onProgress: watchdog.touch, abort: call.abort })
  if (bodyText === undefined && watchdog.fired()) return failed(new StreamIdleTimeout({ idleMs, partialText: '' }), false)
  const statusText = response.statusMessage ?? ''
  const { code, message } = parseProviderErrorBody({
    bodyText: bodyText ?? '',
    statusText: statusText === '' ? `HTTP ${status}` : statusText,
  })
  return failed(new ProviderHttpError({ status, code, message, retryAfterMs }), isRetryableStatus(status))
}

/** A 2xx answer with a JSON body: an error object, or a provider that ignored `stream: true`. */
async function readJsonInsteadOfStream({
  response,
  call,
  watchdog,
  idleMs,
}: {
  readonly response: IncomingMessage
  readonly call: ProviderRequest
  readonly watchdog: IdleWatchdog
  readonly idleMs: number
}): Promise<AttemptOutcome> {
  const bodyText = await readLimitedText({ response, maxBytes: ERROR_BODY_MAX_BYTES, onProgress: watchdog.touch, abort: call.abort })
  if (bodyText === undefined && watchdog.fired()) return failed(new StreamIdleTimeout({ idleMs, partialText: '' }), false)
  let parsed: unknown
  try {
    parsed = JSON.parse(bodyText ?? '')
  } catch {
    parsed = undefined
  }
  const payload = readProviderErrorPayload(parsed)
  if (payload !== undefined) {
    return failed(
      new ProviderStreamError({ code: payload.code, message: truncateForDisplay(payload.message), partialText: '' }),
      false,
    )
  }
  return failed(
    new ProviderProtocolError({
      message: `expected a text/event-stream answer, got ${response.headers['content-type'] ?? 'no content type'}: ${truncateForDisplay(bodyText ?? '', 200)}`,
      partialText: '',
    }),
    false,
  )
}

function fromStreamState(state: Exclude<ChatStreamState, { status: 'streaming' }>): AttemptOutcome {
  return state.status === 'succeeded' ? { ok: true, result: state.result } : failed(state.error, false)
}

function failed(error: ModelError, retryable: boolean): AttemptOutcome {
  return { ok: false, error, retryable }
}

/** The caller interrupted the Effect; nobody reads this outcome. */
function interruptedOutcome(): AttemptOutcome {
  return failed(new ProviderConnectionError({ message: 'the request was cancelled' }), false)
}

function isJsonContentType(response: IncomingMessage): boolean {
  return /^application\/(.+\+)?json\b/i.test(response.headers['content-type'] ?? '')
}
