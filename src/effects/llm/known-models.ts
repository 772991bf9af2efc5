// What the Admin → Model connections page prefills for a model the administrator may offer: the
// provider's own figures where GET /models reports them (OpenRouter and Together `context_length`,
// Groq `context_window`, vLLM `max_model_len`, OpenRouter `top_provider.max_completion_tokens`),
// else a small table of well-known models, else a conservative guess. The admin corrects them.
import { PROTOCOL_RESERVE_TOKENS } from './model-config.ts'

export interface ModelLimits {
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly supportsNativeToolCalling: boolean
}

export interface SuggestedModel extends ModelLimits {
  readonly displayName: string
  /** Where the figures come from, in words for the page. */
  readonly source: 'provider' | 'built-in table' | 'default guess'
}

/** Longest prefix wins (`gpt-4o-mini` before `gpt-4o`); names are compared without a vendor path or an Ollama tag. */
const KNOWN_MODELS: ReadonlyArray<readonly [prefix: string, name: string, limits: ModelLimits]> = [
  ['gpt-4o-mini', 'GPT-4o mini', { contextWindow: 128_000, maxOutputTokens: 16_384, supportsNativeToolCalling: true }],
  ['gpt-4o', 'GPT-4o', { contextWindow: 128_000, maxOutputTokens: 16_384, supportsNativeToolCalling: true }],
  ['gpt-4.1-nano', 'GPT-4.1 nano', { contextWindow: 1_047_576, maxOutputTokens: 32_768, supportsNativeToolCalling: true }],
  ['gpt-4.1-mini', 'GPT-4.1 mini', { contextWindow: 1_047_576, maxOutputTokens: 32_768, supportsNativeToolCalling: true }],
  ['gpt-4.1', 'GPT-4.1', { contextWindow: 1_047_576, maxOutputTokens: 32_768, supportsNativeToolCalling: true }],
  ['o4-mini', 'o4-mini', { contextWindow: 200_000, maxOutputTokens: 100_000, supportsNativeToolCalling: true }],
  ['o3-mini', 'o3-mini', { contextWindow: 200_000, maxOutputTokens: 100_000, supportsNativeToolCalling: true }],
  ['o3', 'o3', { contextWindow: 200_000, maxOutputTokens: 100_000, supportsNativeToolCalling: true }],
  ['qwen-max', 'Qwen Max', { contextWindow: 32_768, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['qwen-plus', 'Qwen Plus', { contextWindow: 131_072, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['qwen-turbo', 'Qwen Turbo', { contextWindow: 1_000_000, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['qwen2.5', 'Qwen2.5', { contextWindow: 32_768, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['qwen3', 'Qwen3', { contextWindow: 40_960, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['deepseek-chat', 'DeepSeek Chat', { contextWindow: 65_536, maxOutputTokens: 8_192, supportsNativeToolCalling: true }],
  ['deepseek-reasoner', 'DeepSeek Reasoner', { contextWindow: 65_536, maxOutputTokens: 32_768, supportsNativeToolCalling: false }],
  ['llama3.3', 'Llama 3.3', { contextWindow: 131_072, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
  ['llama3.2', 'Llama 3.2', { contextWindow: 131_072, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
  ['llama3.1', 'Llama 3.1', { contextWindow: 131_072, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
  ['llama-3.3', 'Llama 3.3', { contextWindow: 131_072, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
  ['llama-3.1', 'Llama 3.1', { contextWindow: 131_072, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
  ['llama3', 'Llama 3', { contextWindow: 8_192, maxOutputTokens: 2_048, supportsNativeToolCalling: false }],
  ['mistral', 'Mistral', { contextWindow: 32_768, maxOutputTokens: 4_096, supportsNativeToolCalling: true }],
]

const DEFAULT_GUESS: ModelLimits = { contextWindow: 8_192, maxOutputTokens: 2_048, supportsNativeToolCalling: false }

/** `meta-llama/Llama-3.1-8B` → `llama-3.1-8b`; `llama3.1:8b` → `llama3.1`. */
function normalise(providerModel: string): string {
  return (providerModel.split('/').at(-1) ?? providerModel).split(':')[0]!.toLowerCase()
}

/** The table's entry for a provider's model name, if any. */
export function knownModel(providerModel: string): { readonly name: string; readonly limits: ModelLimits } | undefined {
  const name = normalise(providerModel)
  let best: (typeof KNOWN_MODELS)[number] | undefined
  for (const entry of KNOWN_MODELS) if (name.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry
  return best && { name: best[1], limits: best[2] }
}

/** One entry of GET /models as the provider sent it (only the fields read here). */
export interface ReportedModel {
  readonly id: string
  readonly contextWindow?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

/** Reads the figures a provider's GET /models entry may carry. */
export function readReportedModel(entry: unknown): ReportedModel | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined
  const record = entry as Record<string, unknown>
  if (typeof record['id'] !== 'string' || record['id'].trim() === '') return undefined
  const positive = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined)
  const top = record['top_provider'] as Record<string, unknown> | undefined
  return {
    id: record['id'].trim(),
    contextWindow: positive(record['context_length']) ?? positive(record['context_window']) ?? positive(record['max_model_len']) ?? positive(top?.['context_length']),
    maxOutputTokens: positive(top?.['max_completion_tokens']) ?? positive(record['max_output_tokens']),
  }
}

/** The prefill for a model: provider figures, then the table, then the guess; always a valid window/reserve pair. */
export function suggestModel(reported: ReportedModel): SuggestedModel {
  const known = knownModel(reported.id)
  const base = known?.limits ?? DEFAULT_GUESS
  const contextWindow = reported.contextWindow ?? base.contextWindow
  const wanted = reported.maxOutputTokens ?? base.maxOutputTokens
  // Input room must stay: window − reserve − protocol reserve > 0 (model-config.ts).
  const maxOutputTokens = Math.max(1, Math.min(wanted, Math.floor(contextWindow / 4), contextWindow - PROTOCOL_RESERVE_TOKENS - 1))
  return {
    displayName: known ? displayNameOf(reported.id, known.name) : reported.id,
    contextWindow,
    maxOutputTokens,
    supportsNativeToolCalling: base.supportsNativeToolCalling,
    source: reported.contextWindow !== undefined ? 'provider' : known ? 'built-in table' : 'default guess',
  }
}

/** The table's name, with what the provider's name adds after the matched prefix (a size, a date). */
function displayNameOf(providerModel: string, known: string): string {
  const rest = (providerModel.split('/').at(-1) ?? providerModel).replace(/^[^:]*?(?=:|$)/, '')
  return rest.startsWith(':') ? `${known} ${rest.slice(1)}` : providerModel
}
