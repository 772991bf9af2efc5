// HTTP client of the Bailian knowledge API: list deployed services (per scene, paged), search, and
// the streaming chat. Every operation is an Effect whose interruption aborts the fetch. Expected
// failures are typed (bailian-errors.ts); the API key is sent only in the Authorization header and
// redacted from anything the service echoes back.
import * as Effect from 'effect/Effect'
import { truncateForDisplay } from '../llm/provider-error-payload.ts'
import { createRedactor, type Redact } from '../llm/redact-secrets.ts'
import { createBailianChatStreamParser, type BailianChatEvent, type BailianChatResult, type BailianChatState } from './bailian-chat-stream.ts'
import { BAILIAN_PATHS, bailianUrl } from './bailian-endpoint.ts'
import {
  type CatalogEntry,
  decodeListPage,
  decodeSearch,
  failure,
  httpErrorFrom,
  NOT_JSON,
  type Outcome,
  parseJson,
  refusalOf,
  type Scene,
  type SceneListing,
  SCENES,
  type SearchChunk,
  type SearchResult,
  success,
} from './bailian-wire.ts'
export { type CatalogEntry, type Scene, type SceneListing, SCENES, type SearchChunk, type SearchResult } from './bailian-wire.ts'
import {
  BailianConnectionError,
  BailianHttpError,
  type BailianOperation,
  BailianProtocolError,
  BailianStreamError,
  BailianStreamIncomplete,
  type BailianClientError,
  BailianTimeout,
} from './bailian-errors.ts'
export type { BailianClientError } from './bailian-errors.ts'

/** Everything one call needs, resolved per call from the settings chain. */
export interface BailianConnection {
  readonly apiKey: string
  readonly workspaceId: string
  readonly endpointHost: string
  /** Sent as `agent_version` on search and chat when set. */
  readonly agentVersion?: string | undefined
}

export interface BailianClient {
  /** Deployed services of one scene: at most LIST_MAX_PAGES pages of LIST_PAGE_SIZE. */
  readonly listScene: (connection: BailianConnection, scene: Scene) => Effect.Effect<SceneListing, BailianClientError>
  /** Both scenes; a failure of either fails the whole listing (no half catalogs). */
  readonly listCatalog: (connection: BailianConnection) => Effect.Effect<Record<Scene, SceneListing>, BailianClientError>
  readonly search: (
    connection: BailianConnection,
    request: { readonly agentId: string; readonly query: string; readonly topK: number },
  ) => Effect.Effect<SearchResult, BailianClientError>
  readonly chat: (
    connection: BailianConnection,
    request: {
      readonly agentId: string
      readonly question: string
      readonly timeoutMs: number
      readonly onEvent?: ((event: BailianChatEvent) => void) | undefined
    },
  ) => Effect.Effect<BailianChatResult, BailianClientError>
}

export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>

export const LIST_PAGE_SIZE = 100
export const LIST_MAX_PAGES = 2
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
const ERROR_BODY_MAX_BYTES = 64 * 1024
const JSON_BODY_MAX_BYTES = 8 * 1024 * 1024

export interface BailianClientOptions {
  readonly fetch?: FetchFunction | undefined
  /** Time limit of list and search requests (the chat has its own, per call). */
  readonly requestTimeoutMs?: number | undefined
}

export function makeBailianClient(options: BailianClientOptions = {}): BailianClient {
  const fetchFunction: FetchFunction = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS

  const postJson = <A>({
    connection,
    operation,
    body,
    decode,
  }: {
    readonly connection: BailianConnection
    readonly operation: Exclude<BailianOperation, 'chat'>
    readonly body: unknown
    readonly decode: (json: unknown, redact: Redact) => Outcome<A>
  }): Effect.Effect<A, BailianClientError> =>
    Effect.suspend(() => {
      const redact = createRedactor([connection.apiKey])
      return Effect.promise((signal) =>
        withTimeout({ signal, timeoutMs: requestTimeoutMs }, async (requestSignal, timedOut): Promise<Outcome<A>> => {
          const sent = await send({ fetchFunction, connection, operation, body, accept: 'application/json', signal: requestSignal })
          if (!sent.ok) return timedOut() ? failure(new BailianTimeout({ operation, timeoutMs: requestTimeoutMs, partialText: '' })) : sent
          const response = sent.value
          const text = await readLimitedText(response, response.ok ? JSON_BODY_MAX_BYTES : ERROR_BODY_MAX_BYTES)
          if (text === undefined) {
            return failure(
              timedOut()
                ? new BailianTimeout({ operation, timeoutMs: requestTimeoutMs, partialText: '' })
                : new BailianConnectionError({ operation, reason: 'the connection broke while reading the answer' }),
            )
          }
          if (!response.ok) return failure(httpErrorFrom({ operation, status: response.status, bodyText: text, redact }))
          const json = parseJson(text)
          if (json === NOT_JSON) {
            return failure(new BailianProtocolError({ operation, detail: `not JSON: ${redact(truncateForDisplay(text, 200))}`, partialText: '' }))
          }
          const refused = refusalOf({ operation, json, redact })
          if (refused !== undefined) return failure(refused)
          return decode(json, redact)
        }),
      ).pipe(Effect.flatMap(fromOutcome))
    })

  const listPage = (connection: BailianConnection, scene: Scene, pageNumber: number) =>
    postJson({
      connection,
      operation: 'list',
      body: { agent_scene: scene, agent_status: 'deployed', page_number: pageNumber, page_size: LIST_PAGE_SIZE },
      decode: (json, redact) => decodeListPage({ json, scene, redact }),
    })

  const listScene: BailianClient['listScene'] = (connection, scene) =>
    Effect.gen(function* () {
      const entries: CatalogEntry[] = []
      const seen = new Set<string>()
      let reportedTotal: number | undefined
      for (let page = 1; page <= LIST_MAX_PAGES; page++) {
        const result = yield* listPage(connection, scene, page)
        reportedTotal = result.total ?? reportedTotal
        for (const entry of result.entries) {
          if (seen.has(entry.agentId)) continue // a row that moved between pages
          seen.add(entry.agentId)
          entries.push(entry)
        }
        if (result.rows < LIST_PAGE_SIZE) return { scene, entries, total: Math.max(reportedTotal ?? 0, entries.length), truncated: false }
      }
      // Every page was full: without a total, more rows may exist.
      const truncated = reportedTotal === undefined || reportedTotal > entries.length
      return { scene, entries, total: Math.max(reportedTotal ?? 0, entries.length), truncated }
    })

  const listCatalog: BailianClient['listCatalog'] = (connection) =>
    Effect.gen(function* () {
      const search = yield* listScene(connection, 'search')
      const chat = yield* listScene(connection, 'chat')
      return { search, chat }
    })

  const search: BailianClient['search'] = (connection, request) =>
    postJson({
      connection,
      operation: 'search',
      body: {
        agent_id: request.agentId,
        query: request.query,
        ...(connection.agentVersion ? { agent_version: connection.agentVersion } : {}),
      },
      decode: (json, redact) => decodeSearch({ json, topK: request.topK, redact }),
    })

  const chat: BailianClient['chat'] = (connection, request) =>
    Effect.suspend(() => {
      const redact = createRedactor([connection.apiKey])
      const body = {
        input: { messages: [{ role: 'user', content: request.question }] },
        parameters: {
          agent_options: {
            agent_id: request.agentId,
            ...(connection.agentVersion ? { agent_version: connection.agentVersion } : {}),
          },
        },
        stream: true,
      }
      return Effect.promise((signal) =>
        withTimeout({ signal, timeoutMs: request.timeoutMs }, async (requestSignal, timedOut): Promise<Outcome<BailianChatResult>> => {
          const parser = createBailianChatStreamParser({ onEvent: request.onEvent })
          const timeout = () => failure(new BailianTimeout({ operation: 'chat', timeoutMs: request.timeoutMs, partialText: redact(parser.partialText()) }))
          const sent = await send({ fetchFunction, connection, operation: 'chat', body, accept: 'text/event-stream', signal: requestSignal })
          if (!sent.ok) return timedOut() ? timeout() : sent
          const response = sent.value
          if (!response.ok) {
            const text = await readLimitedText(response, ERROR_BODY_MAX_BYTES)
            if (text === undefined && timedOut()) return timeout()
            return failure(httpErrorFrom({ operation: 'chat', status: response.status, bodyText: text ?? '', redact }))
          }
          if (/^application\/(.+\+)?json\b/i.test(response.headers.get('content-type') ?? '')) {
            // A JSON answer where a stream was asked for: an error object, or `success: false`.
            const text = (await readLimitedText(response, ERROR_BODY_MAX_BYTES)) ?? ''
            const json = parseJson(text)
            const refused = json === NOT_JSON ? undefined : refusalOf({ operation: 'chat', json, redact })
            return failure(
              refused ??
                new BailianProtocolError({ operation: 'chat', detail: `expected an event stream, got: ${redact(truncateForDisplay(text, 200))}`, partialText: '' }),
            )
          }
          const state = await readChatStream({ response, parser, signal: requestSignal })
          if (state === 'timed-out' || timedOut()) return timeout()
          return state.status === 'succeeded'
            ? success({ ...state.result, answer: redact(state.result.answer) })
            : failure(redactChatFailure(state.error, redact))
        }),
      ).pipe(Effect.flatMap(fromOutcome))
    })

  return { listScene, listCatalog, search, chat }
}

// ── one request ─────────────────────────────────────────────────────────────────────────────

const fromOutcome = <A>(outcome: Outcome<A>): Effect.Effect<A, BailianClientError> =>
  outcome.ok ? Effect.succeed(outcome.value) : Effect.fail(outcome.error)

/** Runs `work` with a signal aborted by the caller's signal or by the time limit. */
async function withTimeout<A>(
  { signal, timeoutMs }: { readonly signal: AbortSignal; readonly timeoutMs: number },
  work: (signal: AbortSignal, timedOut: () => boolean) => Promise<A>,
): Promise<A> {
  const controller = new AbortController()
  let fired = false
  const timer = setTimeout(() => {
    fired = true
    controller.abort(new Error('timeout'))
  }, timeoutMs)
  const onAbort = (): void => controller.abort(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  if (signal.aborted) controller.abort(signal.reason)
  try {
    return await work(controller.signal, () => fired)
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}

async function send({
  fetchFunction,
  connection,
  operation,
  body,
  accept,
  signal,
}: {
  readonly fetchFunction: FetchFunction
  readonly connection: BailianConnection
  readonly operation: BailianOperation
  readonly body: unknown
  readonly accept: string
  readonly signal: AbortSignal
}): Promise<Outcome<Response>> {
  try {
    const response = await fetchFunction(bailianUrl({ endpointHost: connection.endpointHost, workspaceId: connection.workspaceId, path: BAILIAN_PATHS[operation] }), {
      method: 'POST',
      headers: { authorization: `Bearer ${connection.apiKey}`, 'content-type': 'application/json', accept },
      body: JSON.stringify(body),
      signal,
    })
    return success(response)
  } catch (cause) {
    return failure(new BailianConnectionError({ operation, reason: describeConnectionFailure(cause) }))
  }
}

async function readChatStream({
  response,
  parser,
  signal,
}: {
  readonly response: Response
  readonly parser: ReturnType<typeof createBailianChatStreamParser>
  readonly signal: AbortSignal
}): Promise<Exclude<BailianChatState, { status: 'streaming' }> | 'timed-out'> {
  if (response.body === null) return parser.end('eof')
  const reader = response.body.getReader()
  let reachedEnd = false
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>
      try {
        chunk = await reader.read()
      } catch {
        reachedEnd = true
        if (signal.aborted) return 'timed-out'
        return parser.end('connection-lost')
      }
      if (chunk.done) {
        reachedEnd = true
        return parser.end('eof')
      }
      const state = parser.pushBytes(chunk.value)
      if (state.status === 'failed') return state
    }
  } finally {
    if (!reachedEnd) reader.cancel().catch(() => undefined)
  }
}

/** Reads at most `maxBytes` of the body; undefined when the read failed before any text. */
async function readLimitedText(response: Response, maxBytes: number): Promise<string | undefined> {
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let bytes = 0
  let reachedEnd = false
  try {
    while (bytes < maxBytes) {
      const chunk = await reader.read()
      if (chunk.done) {
        reachedEnd = true
        break
      }
      bytes += chunk.value.byteLength
      text += decoder.decode(chunk.value, { stream: true })
    }
    return text + decoder.decode()
  } catch {
    reachedEnd = true
    return undefined
  } finally {
    if (!reachedEnd) reader.cancel().catch(() => undefined)
  }
}

function redactChatFailure(error: BailianClientError, redact: Redact): BailianClientError {
  switch (error._tag) {
    case 'BailianStreamError':
      return new BailianStreamError({ ...error, detail: redact(error.detail), partialText: redact(error.partialText) })
    case 'BailianStreamIncomplete':
      return new BailianStreamIncomplete({ reason: error.reason, partialText: redact(error.partialText) })
    case 'BailianProtocolError':
      return new BailianProtocolError({ operation: error.operation, detail: redact(error.detail), partialText: redact(error.partialText) })
    default:
      return error
  }
}

/** Names the failure by its error code only: Node's messages include the host and port. */
function describeConnectionFailure(cause: unknown): string {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return 'network error'
}
