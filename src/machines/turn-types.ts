// Data shapes the turn machine works on, defined here once: the model gateway
// (`src/effects/llm/model.ts`) re-exports them, and `knowagent/machines` stays free of effect code.

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

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>

export interface ToolSchema {
  readonly type: 'function'
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: Record<string, unknown>
  }
}

/** A tool call as assembled from the provider stream, validated only once complete. */
export interface AssembledToolCall {
  readonly index: number
  readonly id: string
  readonly name: string
  readonly rawArguments: string
  /** Canonical JSON of the parsed arguments when they are a JSON object, else undefined. */
  readonly argumentsJson: string | undefined
  /** Why the arguments are unusable, when they are. */
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
  readonly rawFinishReason: string
  readonly usage: Usage | undefined
}

/** What the turn needs to know about the model (a subset of the safe `ModelInfo`). */
export interface TurnModelInfo {
  readonly id?: string | undefined
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly supportsNativeToolCalling: boolean
}
