// The model contract: every chat model (remote OpenAI-compatible or the built-in local one)
// implements `ChatModel`. The turn runtime cannot tell them apart.
import type * as Effect from 'effect/Effect'

// The message, tool and result shapes are defined once, with the pure machine that plans turns
// over them (`knowagent/machines` must embed without effect code); the gateway uses the same types.
import type { ChatMessage, ToolSchema, ModelResult } from '../../machines/turn-types.ts'
export type {
  AssembledToolCall,
  ChatMessage,
  FinishReason,
  ModelResult,
  ToolCallMessagePart,
  ToolSchema,
  Usage,
} from '../../machines/turn-types.ts'

/** Streamed while the call runs; the final `ModelResult` carries the same content assembled. */
export type ModelStreamEvent =
  | { readonly type: 'delta'; readonly text: string }
  | { readonly type: 'thinking'; readonly text: string }

export interface ModelRequest {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Omitted or empty for text-only models and compaction calls. */
  readonly tools?: ReadonlyArray<ToolSchema> | undefined
  readonly onEvent?: ((event: ModelStreamEvent) => void) | undefined
  /** Sent as `reasoning_effort` in place of the model's configured one; only a model with `supportsReasoningEffort` gets it. */
  readonly reasoningEffort?: string | undefined
}

/** Safe projection: all that ever leaves the server about a model. */
export interface ModelInfo {
  readonly id: string
  readonly name: string
  readonly profile: string
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly supportsNativeToolCalling: boolean
  /** The model takes `reasoning_effort` (its config entry sets `reasoningEffort`); absent: it does not. */
  readonly supportsReasoningEffort?: boolean | undefined
}

export interface ChatModel {
  readonly info: ModelInfo
  readonly stream: (request: ModelRequest) => Effect.Effect<ModelResult, ModelError>
}

export type ModelError =
  | import('./model-errors.ts').ProviderHttpError
  | import('./model-errors.ts').ProviderConnectionError
  | import('./model-errors.ts').ProviderStreamError
  | import('./model-errors.ts').StreamIncomplete
  | import('./model-errors.ts').StreamIdleTimeout
  | import('./model-errors.ts').ProviderProtocolError
  | import('./model-errors.ts').MissingApiKey
