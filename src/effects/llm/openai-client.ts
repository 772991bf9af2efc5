// A `ChatModel` over any OpenAI-compatible `POST {baseUrl}/chat/completions` streaming API.
//
// - one attempt = one fetch whose AbortController is tied to Effect interruption: interrupting
//   the Effect aborts the request at once (the provider sees the connection close)
// - retries (429 / 408 / 5xx / connection failures) only before the first body byte, with
//   exponential backoff or the provider's Retry-After, at most `maxRetries` times
// - an idle watchdog ends the call when no byte arrives for `idleTimeoutMs`
// - the API key is read from the environment at call time and redacted from every error and
//   result; endpoints are redacted from error messages too
import { Effect } from 'effect'
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
import { createProviderRedactors, redactModelError, redactModelResult } from './redact-secrets.ts'
import {
  DEFAULT_MAX_RETRIES,
  computeRetryDelayMs,
  isRetryableStatus,
  parseRetryAfterMs,
} from './retry-policy.ts'

export const DEFAULT_IDLE_TIMEOUT_MS = 60_000
/** Error bodies are read up to this many bytes (the message shown is cut to 500 characters). */
const ERROR_BODY_MAX_BYTES = 64 * 1024

export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>

export interface OpenAiChatModelOptions {
  /** Where `apiKeyEnv` is looked up, at call time (usually `process.env`). */
  readonly env: Readonly<Record<string, string | undefined>>
  readonly fetch?: FetchFunction | undefined
  /** First backoff delay; doubled per retry. Default 500 ms. */
  readonly retryBaseDelayMs?: number | undefined
  /** Longest wait between attempts; a longer Retry-After is not retried. Default 20 s. */
  readonly maxRetryDelayMs?: number | undefined
}

export function makeOpenAiChatModel(config: ModelConfig, options: OpenAiChatModelOptions): ChatModel {
  const fetchFunction: FetchFunction = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const url = `${config.baseUrl.replace(/\/+$/, '')}/chat/completions`
  const maxRetries = config.maxRetries ?? DEFAULT_MAX_RETRIES
  const idleTimeoutMs = config.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS

  const stream = (request: ModelRequest): Effect.Effect<ModelResult, ModelError> =>
    Effect.suspend(() => {
      const apiKey = readApiKey({ config, env: options.env })
      if (apiKey.missing) return Effect.fail(apiKey.error)
      const redactors = createProviderRedactors({ apiKey: apiKey.value, baseUrl: config.baseUrl })
      const attemptInput: AttemptInput = {
        fetchFunction,
        url,
        headers: buildRequestHeaders({ config, apiKey: apiKey.value }),
        body: JSON.stringify(buildChatCompletionsBody({ config, request })),
        idleTimeoutMs,
        onEvent: request.onEvent,
      }
      const attemptFrom = (retryNumber: number): Effect.Effect<ModelResult, ModelError> =>
        Effect.flatMap(
          Effect.promise((signal) => runAttempt({ ...attemptInput, signal })),
          (outcome) => {
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
            return Effect.andThen(Effect.sleep(delayMs), attemptFrom(retryNumber + 1))
          },
        )
      return attemptFrom(0)
    })

  return { info: toModelInfo(config), stream }
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
  if (config.reasoningEffort !== undefined) body['reasoning_effort'] = config.reasoningEffort
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
// One attempt: fetch + read the body. Never rejects (except when `onEvent` throws, a defect).

interface AttemptInput {
  readonly fetchFunction: FetchFunction
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly idleTimeoutMs: number
  readonly onEvent: ((event: ModelStreamEvent) => void) | undefined
}

type AttemptOutcome =
  | { readonly ok: true; readonly result: ModelResult }
  | { readonly ok: false; readonly error: ModelError; readonly retryable: boolean }

async function runAttempt(input: AttemptInput & { readonly signal: AbortSignal }): Promise<AttemptOutcome> {
  const controller = new AbortController()
  const abortFromCaller = (): void => controller.abort(input.signal.reason)
  input.signal.addEventListener('abort', abortFromCaller, { once: true })
  const watchdog = createIdleWatchdog({ idleMs: input.idleTimeoutMs, onIdle: () => controller.abort() })
  try {
    if (input.signal.aborted) return interruptedOutcome()
    let response: Response
    try {
      response = await input.fetchFunction(input.url, {
        method: 'POST',
        headers: input.headers,
        body: input.body,
        signal: controller.signal,
      })
    } catch (cause) {
      if (watchdog.fired()) return failed(new StreamIdleTimeout({ idleMs: input.idleTimeoutMs, partialText: '' }), false)
      if (input.signal.aborted) return interruptedOutcome()
      return failed(new ProviderConnectionError({ message: describeConnectionFailure(cause) }), true)
    }
    watchdog.touch()
    if (!response.ok) return await readHttpError({ response, watchdog, idleMs: input.idleTimeoutMs })
    if (isJsonContentType(response)) return await readJsonInsteadOfStream({ response, watchdog, idleMs: input.idleTimeoutMs })
    return await readEventStream({ response, watchdog, input })
  } finally {
    watchdog.stop()
    input.signal.removeEventListener('abort', abortFromCaller)
  }
}

async function readEventStream({
  response,
  watchdog,
  input,
}: {
  readonly response: Response
  readonly watchdog: IdleWatchdog
  readonly input: AttemptInput & { readonly signal: AbortSignal }
}): Promise<AttemptOutcome> {
  const parser = createChatCompletionStreamParser({ onEvent: input.onEvent })
  if (response.body === null) return fromStreamState(parser.end('eof'))
  const reader = response.body.getReader()
  let reachedEnd = false
  let receivedBytes = 0
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>
      try {
        chunk = await reader.read()
      } catch (cause) {
        reachedEnd = true
        if (watchdog.fired()) return fromStreamState(parser.idle(input.idleTimeoutMs))
        if (input.signal.aborted) return interruptedOutcome()
        if (receivedBytes === 0) return failed(new ProviderConnectionError({ message: describeConnectionFailure(cause) }), true)
        return fromStreamState(parser.end('connection-lost'))
      }
      if (chunk.done) {
        reachedEnd = true
        return fromStreamState(parser.end('eof'))
      }
      receivedBytes += chunk.value.byteLength
      watchdog.touch()
      const state = parser.pushBytes(chunk.value)
      if (state.status !== 'streaming') return fromStreamState(state)
    }
  } finally {
    // Stopped before the body ended ([DONE], an error payload, a throwing onEvent): release
    // the connection rather than leave it half-read.
    if (!reachedEnd) reader.cancel().catch(() => undefined)
  }
}

async function readHttpError({
  response,
  watchdog,
  idleMs,
}: {
  readonly response: Response
  readonly watchdog: IdleWatchdog
  readonly idleMs: number
}): Promise<AttemptOutcome> {
  const retryAfterMs = parseRetryAfterMs({ headers: response.headers, nowMs: Date.now() })
  const bodyText = await readLimitedText({ response, watchdog })
  if (bodyText === undefined && watchdog.fired()) return failed(new StreamIdleTimeout({ idleMs, partialText: '' }), false)
  const { code, message } = parseProviderErrorBody({
    bodyText: bodyText ?? '',
    statusText: response.statusText === '' ? `HTTP ${response.status}` : response.statusText,
  })
  return failed(
    new ProviderHttpError({ status: response.status, code, message, retryAfterMs }),
    isRetryableStatus(response.status),
  )
}

/** A 2xx answer with a JSON body: an error object, or a provider that ignored `stream: true`. */
async function readJsonInsteadOfStream({
  response,
  watchdog,
  idleMs,
}: {
  readonly response: Response
  readonly watchdog: IdleWatchdog
  readonly idleMs: number
}): Promise<AttemptOutcome> {
  const bodyText = await readLimitedText({ response, watchdog })
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
      message: `expected a text/event-stream answer, got ${response.headers.get('content-type') ?? 'no content type'}: ${truncateForDisplay(bodyText ?? '', 200)}`,
      partialText: '',
    }),
    false,
  )
}

/** Reads at most ERROR_BODY_MAX_BYTES of the body; undefined when reading failed. */
async function readLimitedText({
  response,
  watchdog,
}: {
  readonly response: Response
  readonly watchdog: IdleWatchdog
}): Promise<string | undefined> {
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let bytes = 0
  let reachedEnd = false
  try {
    while (bytes < ERROR_BODY_MAX_BYTES) {
      const chunk = await reader.read()
      if (chunk.done) {
        reachedEnd = true
        break
      }
      watchdog.touch()
      bytes += chunk.value.byteLength
      text += decoder.decode(chunk.value, { stream: true })
    }
    return text + decoder.decode()
  } catch {
    reachedEnd = true
    return text === '' ? undefined : text
  } finally {
    if (!reachedEnd) reader.cancel().catch(() => undefined)
  }
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

function isJsonContentType(response: Response): boolean {
  return /^application\/(.+\+)?json\b/i.test(response.headers.get('content-type') ?? '')
}

/** Names the failure by its error code only: Node's messages include host and port. */
function describeConnectionFailure(cause: unknown): string {
  const code = findErrorCode(cause)
  return code === undefined ? 'could not reach the provider' : `could not reach the provider (${code})`
}

function findErrorCode(cause: unknown): string | undefined {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------

interface IdleWatchdog {
  /** Some progress happened: restart the idle period. */
  readonly touch: () => void
  readonly fired: () => boolean
  /** Clears the timer; always called when the attempt ends. */
  readonly stop: () => void
}

/**
 * One timer per attempt rather than one per chunk: `touch` only records the time, and the timer,
 * when it fires early, re-arms itself for the remaining idle period.
 */
function createIdleWatchdog({ idleMs, onIdle }: { readonly idleMs: number; readonly onIdle: () => void }): IdleWatchdog {
  let lastActivity = performance.now()
  let hasFired = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const check = (): void => {
    const idleFor = performance.now() - lastActivity
    if (idleFor >= idleMs) {
      timer = undefined
      hasFired = true
      onIdle()
    } else {
      timer = setTimeout(check, Math.max(1, Math.ceil(idleMs - idleFor)))
    }
  }
  timer = setTimeout(check, idleMs)
  return {
    touch: () => {
      lastActivity = performance.now()
    },
    fired: () => hasFired,
    stop: () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    },
  }
}
