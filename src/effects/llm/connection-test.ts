// The Test button of Admin → Model connections: `GET {baseUrl}/models`, then a one-token chat
// completion, each reported in words (unreachable, the key refused, no models, OK with N models,
// chat OK or its error). Never the key; never more than 500 characters of what the provider sent,
// with the key redacted from it. Redirects are not followed (a 3xx is reported as such), and the
// connection's agents refuse metadata addresses (provider-address.ts).
import * as Effect from 'effect/Effect'
import { readReportedModel, type ReportedModel } from './known-models.ts'
import type { ModelConfig } from './model-config.ts'
import type { ModelError } from './model.ts'
import { makeOpenAiChatModel } from './openai-client.ts'
import { METADATA_ADDRESS_CODE } from './provider-address.ts'
import { parseProviderErrorBody, PROVIDER_MESSAGE_MAX_CHARS } from './provider-error-payload.ts'
import { describeConnectionFailure, postToProvider, readLimitedText, type ProviderAgent } from './provider-transport.ts'
import { createRedactor } from './redact-secrets.ts'

export interface ConnectionTestLine {
  readonly step: 'models' | 'chat'
  readonly ok: boolean
  readonly text: string
}

export interface ConnectionTestReport {
  readonly lines: ReadonlyArray<ConnectionTestLine>
  /** The models GET /models listed (undefined when it failed). */
  readonly reported: ReadonlyArray<ReportedModel> | undefined
}

export interface ConnectionUnderTest {
  readonly baseUrl: string
  readonly apiKey: string | undefined
  readonly headers: Readonly<Record<string, string>> | undefined
}

const MODELS_BODY_MAX_BYTES = 4 * 1024 * 1024
const MODELS_TIMEOUT_MS = 15_000
const CHAT_IDLE_TIMEOUT_MS = 30_000

export async function testConnection({
  connection,
  agent,
  chatModel,
}: {
  readonly connection: ConnectionUnderTest
  readonly agent: ProviderAgent
  /** The provider's model name to try the chat with; default the first one listed. */
  readonly chatModel?: string | undefined
}): Promise<ConnectionTestReport> {
  const redact = createRedactor([connection.apiKey, ...Object.values(connection.headers ?? {})])
  const listing = await listModels({ connection, agent, redact })
  const tryModel = chatModel ?? listing.reported?.[0]?.id
  if (tryModel === undefined) {
    return { lines: [listing.line, { step: 'chat', ok: false, text: 'Chat not tried: no model to try it with (add a model by name below, then Test again).' }], reported: listing.reported }
  }
  const chat = await tryChat({ connection, agent, model: tryModel, redact })
  return { lines: [listing.line, chat], reported: listing.reported }
}

function authHeaders(connection: ConnectionUnderTest): Record<string, string> {
  return { accept: 'application/json', ...(connection.apiKey ? { authorization: `Bearer ${connection.apiKey}` } : {}), ...connection.headers }
}

async function listModels({
  connection,
  agent,
  redact,
}: {
  readonly connection: ConnectionUnderTest
  readonly agent: ProviderAgent
  readonly redact: (text: string) => string
}): Promise<{ readonly line: ConnectionTestLine; readonly reported: ReadonlyArray<ReportedModel> | undefined }> {
  const failed = (text: string) => ({ line: { step: 'models' as const, ok: false, text }, reported: undefined })
  const call = postToProvider({ url: new URL(`${connection.baseUrl}/models`), headers: authHeaders(connection), body: '', agent, method: 'GET' })
  const timer = setTimeout(call.abort, MODELS_TIMEOUT_MS)
  try {
    const response = await call.response.catch((cause: unknown) => cause as Error)
    if (response instanceof Error) {
      if ((response as NodeJS.ErrnoException).code === METADATA_ADDRESS_CODE) {
        return failed('Refused: the host name resolves to a link-local cloud-metadata address (allowed only by modelConnections.allowMetadataAddresses in the config file).')
      }
      return failed(`Unreachable: ${describeConnectionFailure(response)}.`)
    }
    const status = response.statusCode ?? 0
    const body = await readLimitedText({ response, maxBytes: MODELS_BODY_MAX_BYTES, onProgress: () => undefined, abort: call.abort })
    const shown = (text: string) => redact(text).slice(0, PROVIDER_MESSAGE_MAX_CHARS)
    if (status >= 300 && status < 400) {
      return failed(
        `The provider answered GET /models with a redirect (HTTP ${status}); redirects are not followed, so the key never goes to another address. Use the address it redirects to as the base URL.`,
      )
    }
    if (status === 401 || status === 403) {
      const { message } = parseProviderErrorBody({ bodyText: body ?? '', statusText: `HTTP ${status}` })
      return failed(`The provider refused the key (HTTP ${status}): ${shown(message)}`)
    }
    if (status < 200 || status > 299) {
      const { message } = parseProviderErrorBody({ bodyText: body ?? '', statusText: `HTTP ${status}` })
      return failed(`GET /models failed (HTTP ${status}): ${shown(message)}`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(body ?? '')
    } catch {
      return failed(`GET /models answered something that is not JSON: ${shown(body ?? '')}`)
    }
    const data = (parsed as { data?: unknown } | null)?.data ?? (parsed as { models?: unknown } | null)?.models
    const reported = Array.isArray(data) ? data.flatMap((entry) => readReportedModel(entry) ?? []) : []
    if (reported.length === 0) return { line: { step: 'models', ok: false, text: 'Reachable, but the provider lists no models (add a model by name below).' }, reported: [] }
    return { line: { step: 'models', ok: true, text: `OK: the provider lists ${reported.length} model${reported.length === 1 ? '' : 's'}.` }, reported }
  } finally {
    clearTimeout(timer)
  }
}

async function tryChat({
  connection,
  agent,
  model,
  redact,
}: {
  readonly connection: ConnectionUnderTest
  readonly agent: ProviderAgent
  readonly model: string
  readonly redact: (text: string) => string
}): Promise<ConnectionTestLine> {
  const config: ModelConfig = {
    id: 'connection-test',
    name: 'connection test',
    profile: 'test',
    baseUrl: connection.baseUrl,
    model,
    contextWindow: 8192,
    maxOutputTokens: 1,
    supportsNativeToolCalling: false,
    idleTimeoutMs: CHAT_IDLE_TIMEOUT_MS,
    maxRetries: 0,
    ...(connection.headers ? { headers: { ...connection.headers } } : {}),
  }
  const chat = makeOpenAiChatModel(config, { env: {}, apiKey: connection.apiKey, agent })
  const outcome = await Effect.runPromise(Effect.result(chat.stream({ messages: [{ role: 'user', content: 'Reply with OK.' }] })))
  const label = `Chat with ${model}`
  if (outcome._tag === 'Success') return { step: 'chat', ok: true, text: `${label}: OK (a one-token answer came back).` }
  return { step: 'chat', ok: false, text: `${label} failed: ${redact(describeChatFailure(outcome.failure)).slice(0, PROVIDER_MESSAGE_MAX_CHARS)}` }
}

function describeChatFailure(error: ModelError): string {
  switch (error._tag) {
    case 'ProviderHttpError':
      if (error.status >= 300 && error.status < 400) return `a redirect (HTTP ${error.status}), not followed: the key never goes to another address.`
      if (error.status === 401 || error.status === 403) return `the provider refused the key (HTTP ${error.status}): ${error.message}`
      return `HTTP ${error.status}: ${error.message}`
    case 'ProviderConnectionError':
      return error.message.includes(METADATA_ADDRESS_CODE) ? 'refused: the host name resolves to a cloud-metadata address.' : `unreachable: ${error.message}`
    case 'StreamIdleTimeout':
      return `no answer within ${Math.round(error.idleMs / 1000)} s.`
    case 'MissingApiKey':
      return error.message
    default:
      return error.message
  }
}
