// The models a turn may use: the config file's, then the enabled models of the connections an
// administrator stored (Admin → Model connections), then the built-in `local` model (always
// present). The config file wins an id clash. An unknown id is an `UnknownModel` failure — never
// a fallback to another model (SPEC §2).
//
// The stored part lives in PostgreSQL; the registry keeps a snapshot in memory and reloads it when
// a write NOTIFYs MODEL_CONNECTIONS_CHANNEL (from any process) and on every reset of the change
// feed (a notification may have been missed). A turn takes its `ChatModel` once, at admission:
// a running turn keeps the model it started with whatever changes meanwhile.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { ChangeFeed } from '../db/change-feed.ts'
import type { Db } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { CredentialCipher } from '../retrieval/credential-cipher.ts'
import { makeLocalChatModel, type LocalChatModelOptions } from './local/index.ts'
import { type ModelConfig, ModelConfigSchema, toModelInfo } from './model-config.ts'
import { MODEL_CONNECTIONS_CHANNEL, openConnectionSecrets, readConnections, readDefaultModelId } from './model-connections-store.ts'
import { UnknownModel } from './model-errors.ts'
import type { ChatModel, ModelInfo } from './model.ts'
import { makeOpenAiChatModel } from './openai-client.ts'
import { makeConnectionAgents } from './provider-address.ts'
import type { ProviderAgent } from './provider-transport.ts'
import * as Schema from 'effect/Schema'
import type { ServiceMetrics } from '../observability/metrics.ts'

export interface ModelRegistry {
  readonly get: (id: string) => Effect.Effect<ChatModel, UnknownModel>
  /** Safe projections: config-file models first (config order), then stored connections' enabled models, `local` last. */
  readonly list: () => ReadonlyArray<ModelInfo>
  /** The server's default: the administrator's choice while it is offered, else the first model listed. */
  readonly defaultModelId: () => string
}

export interface ModelRegistryOptions {
  /** Decoded with ModelsConfigSchema (ids unique, `local` reserved). */
  readonly models: ReadonlyArray<ModelConfig>
  /** Looked up at call time for each model's `apiKeyEnv` (usually `process.env`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The connection pool for remote models; default: one shared keep-alive agent per protocol. */
  readonly agent?: ProviderAgent | undefined
  readonly local?: LocalChatModelOptions | undefined
  /** Retry timing, for tests. */
  readonly retryBaseDelayMs?: number | undefined
  readonly maxRetryDelayMs?: number | undefined
  /** Provider requests, retries and idle timeouts are counted here (/metrics). */
  readonly metrics?: ServiceMetrics | undefined
}

interface Snapshot {
  readonly models: ReadonlyMap<string, ChatModel>
  readonly infos: ReadonlyArray<ModelInfo>
  readonly defaultId: string
}

function configModels(options: ModelRegistryOptions): Map<string, ChatModel> {
  const models = new Map<string, ChatModel>()
  for (const config of options.models) {
    if (models.has(config.id)) throw new Error(`duplicate model id "${config.id}"`) // the schema refuses it first
    models.set(config.id, makeOpenAiChatModel(config, { env: options.env, agent: options.agent, retryBaseDelayMs: options.retryBaseDelayMs, maxRetryDelayMs: options.maxRetryDelayMs, metrics: options.metrics }))
  }
  return models
}

/** Config models, then stored ones whose id is free, then `local`. */
function snapshotOf({ fromConfig, stored, local, defaultId }: { fromConfig: ReadonlyMap<string, ChatModel>; stored: ReadonlyArray<ChatModel>; local: ChatModel; defaultId: string | undefined }): Snapshot {
  const models = new Map(fromConfig)
  for (const model of stored) if (!models.has(model.info.id) && model.info.id !== local.info.id) models.set(model.info.id, model)
  if (models.has(local.info.id)) throw new Error(`model id "${local.info.id}" is reserved for the built-in local model`)
  models.set(local.info.id, local)
  const infos = [...models.values()].map((model) => toModelInfo(model.info))
  return { models, infos, defaultId: defaultId !== undefined && models.has(defaultId) ? defaultId : infos[0]!.id }
}

function registryOver(current: () => Snapshot): ModelRegistry {
  return {
    get: (id) => {
      const model = current().models.get(id)
      return model === undefined ? Effect.fail(new UnknownModel({ modelId: id })) : Effect.succeed(model)
    },
    list: () => current().infos,
    defaultModelId: () => current().defaultId,
  }
}

/** The config file's models and `local` only (CLI tools and tests that need no database). */
export function makeModelRegistry(options: ModelRegistryOptions): ModelRegistry {
  const snapshot = snapshotOf({ fromConfig: configModels(options), stored: [], local: makeLocalChatModel(options.local), defaultId: undefined })
  return registryOver(() => snapshot)
}

export interface LiveModelRegistry extends ModelRegistry {
  /** Reads the stored connections again (after a write of this process; others learn it from the NOTIFY). */
  readonly reload: () => Promise<void>
  /** The config file's model ids (the page shows them read-only; they win a clash). */
  readonly configModelIds: ReadonlySet<string>
  readonly close: () => void
}

export interface LiveModelRegistryOptions extends ModelRegistryOptions {
  readonly db: Db
  readonly cipher: CredentialCipher
  /** The process's change feed (listening on MODEL_CONNECTIONS_CHANNEL); without one the snapshot is read once and at each `reload`. */
  readonly feed: ChangeFeed | undefined
  readonly logger: Logger
  /** The config file's `modelConnections.allowMetadataAddresses`. */
  readonly allowMetadataAddresses: boolean
}

/** The registry with the stored connections, loaded before it resolves. */
export async function startLiveModelRegistry(options: LiveModelRegistryOptions): Promise<LiveModelRegistry> {
  const fromConfig = configModels(options)
  const local = makeLocalChatModel(options.local)
  const agents = makeConnectionAgents({ allowMetadataAddresses: options.allowMetadataAddresses })
  let snapshot = snapshotOf({ fromConfig, stored: [], local, defaultId: undefined })

  const load = async (): Promise<void> => {
    const [connections, defaultId] = await Promise.all([readConnections(options.db), readDefaultModelId(options.db)])
    const stored: ChatModel[] = []
    for (const connection of connections) {
      const secrets = openConnectionSecrets(options.cipher, connection)
      if (secrets.unreadable) {
        options.logger.warn('a model connection\'s stored key cannot be read (the server secret changed?); its models are not offered', { connection: connection.name })
        continue
      }
      for (const model of connection.models) {
        if (!model.enabled) continue
        const config = Schema.decodeUnknownOption(ModelConfigSchema)({
          id: model.modelId,
          name: model.displayName,
          profile: connection.name,
          baseUrl: connection.baseUrl,
          ...(connection.apiKeyEnv !== undefined && secrets.apiKey === undefined ? { apiKeyEnv: connection.apiKeyEnv } : {}),
          model: model.providerModel,
          contextWindow: model.contextWindow,
          maxOutputTokens: model.maxOutputTokens,
          supportsNativeToolCalling: model.supportsNativeToolCalling,
          ...(secrets.headers !== undefined ? { headers: secrets.headers } : {}),
        })
        if (config._tag === 'None') {
          options.logger.warn('a stored model is not valid; it is not offered', { connection: connection.name, model: model.modelId })
          continue
        }
        stored.push(
          makeOpenAiChatModel(config.value, {
            env: options.env,
            apiKey: secrets.apiKey,
            agent: agents.agentFor(connection.baseUrl),
            retryBaseDelayMs: options.retryBaseDelayMs,
            maxRetryDelayMs: options.maxRetryDelayMs,
            metrics: options.metrics,
          }),
        )
      }
    }
    snapshot = snapshotOf({ fromConfig, stored, local, defaultId })
  }

  // Loads run one after another, so the last one started is the one that stays.
  let chain: Promise<void> = Promise.resolve()
  const reload = (): Promise<void> => {
    const next = chain.then(load)
    chain = next.catch((error: unknown) => {
      options.logger.warn('could not read the stored model connections; the last ones read stay in force', { error: error instanceof Error ? error.message : String(error) })
    })
    return next
  }
  const stops = [
    options.feed?.on(MODEL_CONNECTIONS_CHANNEL, () => void reload().catch(() => undefined)),
    options.feed?.onReset(() => void reload().catch(() => undefined)),
  ]
  await reload()
  return {
    ...registryOver(() => snapshot),
    reload,
    configModelIds: new Set(fromConfig.keys()),
    close: () => {
      for (const stop of stops) stop?.()
      agents.destroy()
    },
  }
}

/** The registry as an Effect service. */
export class ModelRegistryService extends Context.Service<ModelRegistryService, ModelRegistry>()(
  'knowagent/llm/ModelRegistry',
) {
  static readonly layer = (options: ModelRegistryOptions): Layer.Layer<ModelRegistryService> =>
    Layer.succeed(ModelRegistryService, makeModelRegistry(options))
}
