// Searching and asking a Bailian knowledge service for one user, with SPEC §9's error semantics:
// - a 4xx (or `success: false`) refreshes the catalog at once and appends the services of that
//   scene as they are now — or, when there are none, says not to retry with another id and how to
//   create one; if that refresh fails, the original error passes through unchanged;
// - 5xx, throttling, time-outs and connection failures pass through (the chat's time-out explains
//   the service's multi-round retrieval and suggests a retry or kb_search);
// - missing credentials say where and how to configure them.
// Without an `agent_id` (programmatic calls only: the tools require it) the configured default
// service is used, else the only deployed service of that scene, else it is an error.
import * as Effect from 'effect/Effect'
import type { Owner } from '../db/schema.ts'
import { ToolError } from '../tools/tool-definition.ts'
import type { BailianChatEvent } from './bailian-chat-stream.ts'
import { type BailianClient, type BailianClientError, type Scene, type SearchChunk } from './bailian-client.ts'
import { BailianMissingCredentials } from './bailian-errors.ts'
import { type BailianSettings, type BailianSettingsSnapshot, connectionOf } from './bailian-settings.ts'
import type { CatalogCache } from './catalog-cache.ts'
import { buildRefreshedSceneList } from './catalog-message.ts'
import type { CatalogRefresher } from './catalog-refresher.ts'
import { withSoleServiceFallback } from './retrieval-settings.ts'

export const DEFAULT_TOP_K = 5
export const MAX_TOP_K = 50
/** One passage is cut to this many code points, so a few of them fit a tool result. */
const CHUNK_TEXT_LIMIT = 3_000
const PARTIAL_TEXT_LIMIT = 2_000

export interface KnowledgeSearchResult {
  readonly agent_id: string
  readonly chunks: ReadonlyArray<SearchChunk & { readonly truncated?: true }>
  /** Passages the service returned before the top_k cut. */
  readonly returned: number
  readonly total: number
  readonly request_id?: string | undefined
}

export interface KnowledgeAnswer {
  readonly agent_id: string
  readonly answer: string
  readonly finish_reason: string
  readonly request_id?: string | undefined
}

export interface KnowledgeCalls {
  readonly search: (input: {
    readonly caller: Owner
    readonly query: string
    readonly agentId?: string | undefined
    readonly topK?: number | undefined
  }) => Effect.Effect<KnowledgeSearchResult, ToolError>
  readonly ask: (input: {
    readonly caller: Owner
    readonly question: string
    readonly agentId?: string | undefined
    readonly onEvent?: ((event: BailianChatEvent) => void) | undefined
  }) => Effect.Effect<KnowledgeAnswer, ToolError>
}

export function makeKnowledgeCalls({
  client,
  settings,
  cache,
  refresher,
}: {
  readonly client: BailianClient
  readonly settings: BailianSettings
  readonly cache: CatalogCache
  readonly refresher: CatalogRefresher
}): KnowledgeCalls {
  const connectionFor = (caller: Owner) =>
    Effect.promise(() => settings.resolve(caller.id)).pipe(
      Effect.flatMap((snapshot) => {
        const connection = connectionOf(snapshot)
        return connection instanceof BailianMissingCredentials
          ? Effect.fail(new ToolError({ code: connection.code, status: 400, message: connection.message }))
          : Effect.succeed({ snapshot, connection })
      }),
    )

  /** The services of one scene as the caller's key may see them, or undefined without a document. */
  const sceneServices = async (workspaceId: string, apiKey: string, scene: Scene) => {
    const status = await cache.read(workspaceId)
    if (status.document === undefined || !status.readers.has(cache.fingerprint(apiKey))) return undefined
    return { entries: status.document.entries.filter((entry) => entry.scene === scene), total: status.document.scenes[scene].total }
  }

  const chooseAgent = ({
    supplied,
    snapshot,
    apiKey,
    scene,
  }: {
    supplied: string | undefined
    snapshot: BailianSettingsSnapshot
    apiKey: string
    scene: Scene
  }): Effect.Effect<string, ToolError> => {
    if (supplied !== undefined && supplied.trim() !== '') return Effect.succeed(supplied.trim())
    const configured = scene === 'search' ? snapshot.settings.defaultRetrieveAgentId : snapshot.settings.defaultChatAgentId
    const workspaceId = snapshot.settings.workspaceId.value ?? ''
    return Effect.promise(() => (configured.value === undefined ? sceneServices(workspaceId, apiKey, scene) : Promise.resolve(undefined))).pipe(
      Effect.flatMap((services) => {
        const chosen = withSoleServiceFallback(configured, services?.entries.map((entry) => entry.agentId))
        if (chosen.value !== undefined) return Effect.succeed(chosen.value)
        const setting = scene === 'search' ? 'default retrieval service' : 'default chat service'
        return Effect.fail(
          new ToolError({
            code: 'retrieval.no_default_service',
            status: 400,
            message:
              `no agent_id was given and there is no ${setting}: pass agent_id, set the ${setting} on the settings page ` +
              `(Settings → Retrieval services), or deploy exactly one ${scene} service`,
          }),
        )
      }),
    )
  }

  /** The 4xx path: refresh now and append what is deployed; a failed refresh leaves the error as it was. */
  const rejected = ({ error, caller, workspaceId, apiKey, scene }: { error: BailianClientError; caller: Owner; workspaceId: string; apiKey: string; scene: Scene }) =>
    Effect.promise(async () => {
      const outcome = await refresher.refresh({ userId: caller.id, workspaceId, reason: 'tool-rejected' })
      if (!outcome.ok) return error.message
      const services = await sceneServices(workspaceId, apiKey, scene)
      if (services === undefined) return error.message
      return `${error.message}\n\n${buildRefreshedSceneList(scene, services.entries, services.total)}`
    })

  const toToolError = ({
    error,
    caller,
    workspaceId,
    apiKey,
    scene,
  }: {
    error: BailianClientError
    caller: Owner
    workspaceId: string
    apiKey: string
    scene: Scene
  }): Effect.Effect<never, ToolError> => {
    const partial = 'partialText' in error && error.partialText !== '' ? partialNote(error.partialText) : ''
    if (error._tag === 'BailianHttpError' && error.isRejection) {
      return rejected({ error, caller, workspaceId, apiKey, scene }).pipe(
        Effect.flatMap((message) => Effect.fail(new ToolError({ code: error.code, status: 400, message }))),
      )
    }
    return Effect.fail(new ToolError({ code: error.code, status: statusOf(error), message: `${error.message}${partial}` }))
  }

  return {
    search: ({ caller, query, agentId, topK }) =>
      Effect.gen(function* () {
        const { snapshot, connection } = yield* connectionFor(caller)
        const agent = yield* chooseAgent({ supplied: agentId, snapshot, apiKey: connection.apiKey, scene: 'search' })
        const k = Math.min(MAX_TOP_K, Math.max(1, Math.trunc(topK ?? DEFAULT_TOP_K)))
        const result = yield* client
          .search(connection, { agentId: agent, query, topK: k })
          .pipe(Effect.catch((error: BailianClientError) => toToolError({ error, caller, workspaceId: connection.workspaceId, apiKey: connection.apiKey, scene: 'search' })))
        return {
          agent_id: agent,
          chunks: result.chunks.map((chunk) => {
            const points = Array.from(chunk.text)
            return points.length <= CHUNK_TEXT_LIMIT ? chunk : { ...chunk, text: `${points.slice(0, CHUNK_TEXT_LIMIT).join('')}…`, truncated: true as const }
          }),
          returned: result.returned,
          total: result.total,
          ...(result.requestId ? { request_id: result.requestId } : {}),
        }
      }),
    ask: ({ caller, question, agentId, onEvent }) =>
      Effect.gen(function* () {
        const { snapshot, connection } = yield* connectionFor(caller)
        const agent = yield* chooseAgent({ supplied: agentId, snapshot, apiKey: connection.apiKey, scene: 'chat' })
        const result = yield* client
          .chat(connection, { agentId: agent, question, timeoutMs: snapshot.chatTimeoutMs, onEvent })
          .pipe(Effect.catch((error: BailianClientError) => toToolError({ error, caller, workspaceId: connection.workspaceId, apiKey: connection.apiKey, scene: 'chat' })))
        return {
          agent_id: agent,
          answer: result.answer,
          finish_reason: result.finishReason,
          ...(result.requestId ? { request_id: result.requestId } : {}),
        }
      }),
  }
}

function statusOf(error: BailianClientError): number {
  switch (error._tag) {
    case 'BailianTimeout':
      return 504
    case 'BailianHttpError':
      return error.status === 429 ? 429 : 502
    default:
      return 502
  }
}

function partialNote(text: string): string {
  const points = Array.from(text)
  const cut = points.length > PARTIAL_TEXT_LIMIT ? `${points.slice(0, PARTIAL_TEXT_LIMIT).join('')}…` : text
  return `\nText received before it stopped (incomplete, do not present it as the answer): ${cut}`
}
