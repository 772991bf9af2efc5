// The configured models plus the built-in `local` model (always present). An unknown id is an
// `UnknownModel` failure — never a fallback to another model (SPEC §2).
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import { makeLocalChatModel, type LocalChatModelOptions } from './local/index.ts'
import { toModelInfo, type ModelConfig } from './model-config.ts'
import { UnknownModel } from './model-errors.ts'
import type { ChatModel, ModelInfo } from './model.ts'
import { makeOpenAiChatModel } from './openai-client.ts'
import type { ProviderAgent } from './provider-transport.ts'

export interface ModelRegistry {
  readonly get: (id: string) => Effect.Effect<ChatModel, UnknownModel>
  /** Safe projections, configured models first (config order), `local` last. */
  readonly list: () => ReadonlyArray<ModelInfo>
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
}

export function makeModelRegistry(options: ModelRegistryOptions): ModelRegistry {
  const models = new Map<string, ChatModel>()
  for (const config of options.models) {
    if (models.has(config.id)) throw new Error(`duplicate model id "${config.id}"`) // the schema refuses it first
    models.set(
      config.id,
      makeOpenAiChatModel(config, {
        env: options.env,
        agent: options.agent,
        retryBaseDelayMs: options.retryBaseDelayMs,
        maxRetryDelayMs: options.maxRetryDelayMs,
      }),
    )
  }
  const local = makeLocalChatModel(options.local)
  if (models.has(local.info.id)) throw new Error(`model id "${local.info.id}" is reserved for the built-in local model`)
  models.set(local.info.id, local)
  const infos = [...models.values()].map((model) => toModelInfo(model.info))
  return {
    get: (id) => {
      const model = models.get(id)
      return model === undefined ? Effect.fail(new UnknownModel({ modelId: id })) : Effect.succeed(model)
    },
    list: () => infos,
  }
}

/** The registry as an Effect service. */
export class ModelRegistryService extends Context.Service<ModelRegistryService, ModelRegistry>()(
  'knowagent/llm/ModelRegistry',
) {
  static readonly layer = (options: ModelRegistryOptions): Layer.Layer<ModelRegistryService> =>
    Layer.succeed(ModelRegistryService, makeModelRegistry(options))
}
