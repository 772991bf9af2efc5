// The `models` array of the operator's config file (SPEC §2). Loading the file is done
// elsewhere; this is the schema of its entries and the safe projection sent to clients.
import * as Result from 'effect/Result'
import * as Schema from 'effect/Schema'
import type { ModelInfo } from './model.ts'

/** Input limit = window − output reserve − this (SPEC §5). */
export const PROTOCOL_RESERVE_TOKENS = 1024
export const LOCAL_MODEL_ID = 'local'

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

const ModelId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$/, {
    message: 'a model id is 1–128 characters: letters, digits and . _ : @ / + - (starting with a letter or digit)',
  }),
)

const NonBlankString = Schema.String.check(
  Schema.makeFilter((value: string) => (value.trim() === '' ? 'must not be blank' : undefined)),
)

const HttpBaseUrl = Schema.String.check(
  Schema.makeFilter((value: string) => {
    try {
      const url = new URL(value)
      return url.protocol === 'http:' || url.protocol === 'https:'
        ? undefined
        : 'baseUrl must be an http(s) URL'
    } catch {
      return 'baseUrl must be an absolute URL such as https://api.openai.com/v1'
    }
  }),
)

const EnvVarName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'apiKeyEnv is the NAME of an environment variable' }),
)

const ModelConfigFields = Schema.Struct({
  id: ModelId,
  name: NonBlankString,
  /** The provider / config entry this model belongs to, shown to users. */
  profile: NonBlankString,
  /** e.g. https://api.openai.com/v1 — `/chat/completions` is appended. */
  baseUrl: HttpBaseUrl,
  /** Name of the environment variable that holds the API key, read at call time. */
  apiKeyEnv: Schema.optionalKey(EnvVarName),
  /** The provider's model name sent as `model`. */
  model: NonBlankString,
  contextWindow: PositiveInt,
  /** Output reserve, sent as `max_tokens`. */
  maxOutputTokens: PositiveInt,
  supportsNativeToolCalling: Schema.Boolean,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** Send `stream_options: {include_usage: true}` (not every provider accepts it). */
  streamUsage: Schema.optionalKey(Schema.Boolean),
  /**
   * Sent as `reasoning_effort` when set (e.g. "low", "medium", "high"); setting it also says the
   * model takes one, so a compile job's reasoning level is sent in its place.
   */
  reasoningEffort: Schema.optionalKey(NonBlankString),
  /** No byte for this long ends the call with StreamIdleTimeout. Default 60000. */
  idleTimeoutMs: Schema.optionalKey(PositiveInt),
  /** Retries before the first body byte on 429 / 5xx / connection errors. Default 2. */
  maxRetries: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 }))),
  /** Newer OpenAI reasoning models want `max_completion_tokens`. Default `max_tokens`. */
  maxTokensField: Schema.optionalKey(Schema.Literals(['max_tokens', 'max_completion_tokens'])),
})

export const ModelConfigSchema = ModelConfigFields.check(
  Schema.makeFilter((config) =>
    config.contextWindow - config.maxOutputTokens - PROTOCOL_RESERVE_TOKENS > 0
      ? undefined
      : {
          path: ['maxOutputTokens'],
          issue: `contextWindow (${config.contextWindow}) must exceed maxOutputTokens (${config.maxOutputTokens}) + ${PROTOCOL_RESERVE_TOKENS} protocol reserve`,
        },
  ),
  Schema.makeFilter((config) =>
    config.id === LOCAL_MODEL_ID
      ? { path: ['id'], issue: `model id "${LOCAL_MODEL_ID}" is reserved for the built-in local model` }
      : undefined,
  ),
)

export type ModelConfig = typeof ModelConfigSchema.Type

/** The `models` array: entries as above, ids unique (a duplicate is named in the error). */
export const ModelsConfigSchema = Schema.Array(ModelConfigSchema).check(
  Schema.makeFilter((configs) => {
    const seen = new Set<string>()
    for (const [position, config] of configs.entries()) {
      if (seen.has(config.id)) return { path: [position, 'id'], issue: `duplicate model id "${config.id}"` }
      seen.add(config.id)
    }
    return undefined
  }),
)

/**
 * Decodes a `models` array, refusing unknown keys (a typo such as `apikeyEnv` would otherwise
 * be dropped silently). Returns the configs or a readable message naming the bad entry.
 */
export function decodeModelsConfig(
  input: unknown,
): { readonly ok: true; readonly models: ReadonlyArray<ModelConfig> } | { readonly ok: false; readonly message: string } {
  const result = Schema.decodeUnknownResult(ModelsConfigSchema)(input, { onExcessProperty: 'error', errors: 'all' })
  return Result.isSuccess(result)
    ? { ok: true, models: result.success }
    : { ok: false, message: result.failure.message }
}

/** The safe projection: all that ever leaves the server about a model (SPEC §2). */
export function toModelInfo(config: ModelConfig | ModelInfo): ModelInfo {
  const reasoning = 'baseUrl' in config ? config.reasoningEffort !== undefined : config.supportsReasoningEffort === true
  return {
    id: config.id,
    name: config.name,
    profile: config.profile,
    contextWindow: config.contextWindow,
    maxOutputTokens: config.maxOutputTokens,
    supportsNativeToolCalling: config.supportsNativeToolCalling,
    ...(reasoning ? { supportsReasoningEffort: true } : {}),
  }
}
