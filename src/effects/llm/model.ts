// The model contract: every chat model (remote OpenAI-compatible or the built-in local one)
// implements `ChatModel`. The turn runtime cannot tell them apart.
import type { Effect } from 'effect'

export interface ToolCallMessagePart {
  readonly id: string
  readonly type: 'function'
  readonly function: { readonly name: string; readonly arguments: string }
}

export type ChatMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string }
  | {
      readonly role: 'assistant'
      readonly content: string | null
      readonly tool_calls?: ReadonlyArray<ToolCallMessagePart>
    }
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string }

export interface ToolSchema {
  readonly type: 'function'
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: Record<string, unknown>
  }
}

/** A tool call as assembled from the stream, validated only once complete. */
export interface AssembledToolCall {
  readonly index: number
  readonly id: string
  readonly name: string
  /** Raw argument text as received (or JSON of an object the provider sent). */
  readonly rawArguments: string
  /** Canonical JSON of the parsed arguments when they are a valid JSON object, else undefined. */
  readonly argumentsJson: string | undefined
  /** Why the arguments are unusable (invalid JSON, not an object), when they are. */
  readonly argumentsError: string | undefined
}

export interface Usage {
  readonly promptTokens?: number | undefined
  readonly completionTokens?: number | undefined
  readonly totalTokens?: number | undefined
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other'

export interface ModelResult {
  readonly text: string
  readonly thinking: string
  readonly toolCalls: ReadonlyArray<AssembledToolCall>
  readonly finishReason: FinishReason
  /** The provider's own finish_reason string, as received. */
  readonly rawFinishReason: string
  readonly usage: Usage | undefined
}

/** Streamed while the call runs; the final `ModelResult` carries the same content assembled. */
export type ModelStreamEvent =
  | { readonly type: 'delta'; readonly text: string }
  | { readonly type: 'thinking'; readonly text: string }

export interface ModelRequest {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Omitted or empty for text-only models and compaction calls. */
  readonly tools?: ReadonlyArray<ToolSchema> | undefined
  readonly onEvent?: ((event: ModelStreamEvent) => void) | undefined
}

/** Safe projection: all that ever leaves the server about a model. */
export interface ModelInfo {
  readonly id: string
  readonly name: string
  readonly profile: string
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly supportsNativeToolCalling: boolean
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
