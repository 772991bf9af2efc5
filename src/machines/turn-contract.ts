// The turn machine's public contract: input, the actors a host provides (with their input and
// output), the events it accepts, the runtime events it emits, and its output.
import type { CompactionMeasurement } from './context-accounting.ts'
import type { ContextBlock, ContextBlockChange } from './context-blocks.ts'
import type { ChatMessage, FinishReason, ModelResult, ToolSchema, TurnModelInfo, Usage } from './turn-types.ts'

export interface TurnLimits {
  /** Model steps (calls that may answer or ask for tools). The 12th runs; needing a 13th fails. */
  readonly maxModelSteps: number
  /** Tool executions. The 24th runs; a 25th fails the turn. */
  readonly maxToolCalls: number
  /** Model calls, steps and compaction calls together. */
  readonly maxModelCalls: number
}

export const DEFAULT_TURN_LIMITS: TurnLimits = { maxModelSteps: 12, maxToolCalls: 24, maxModelCalls: 16 }
/** How long a turn may run unless its host says otherwise (`limits.turnSeconds`): the host's clock sends `limit.turn_time`. */
export const DEFAULT_TURN_SECONDS = 600
export const DEFAULT_MAX_TOOL_OUTPUT_CHARS = 24_000

export interface TurnInput {
  readonly turnId: string
  /** The selected URI the turn is scoped to. */
  readonly uri: string
  readonly question: string
  /** The conversation so far (what a previous turn's output `messages` held). */
  readonly history: ReadonlyArray<ChatMessage>
  readonly model: TurnModelInfo
  readonly limits?: Partial<TurnLimits> | undefined
  /** Tool results longer than this (in code points) are replaced by a "too large" tool error. */
  readonly maxToolOutputChars?: number | undefined
  /** Bytes kept free for the provider's framing; defaults to 1024. */
  readonly protocolReserve?: number | undefined
}

// ── actors ────────────────────────────────────────────────────────────────────────────────

/** `prepare`: resolve the selected URI, check access, build the first message sequence. */
export interface PrepareInput {
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  readonly model: TurnModelInfo
}
export type PrepareOutput =
  | {
      readonly ok: true
      readonly scopeUri: string
      readonly scopeKind: 'directory' | 'file'
      /** System prompt + history + host-provided material + the user question (last user message). */
      readonly messages: ReadonlyArray<ChatMessage>
      /** Empty for models without native tool calling. */
      readonly tools: ReadonlyArray<ToolSchema>
    }
  | { readonly ok: false; readonly code: string; readonly message: string }

/**
 * `preStep`: runs before every model step. It returns source-tagged context blocks (e.g. the
 * retrieval-service catalog) that the machine places after the system prompt, before the history,
 * replacing a block of the same source; compaction never summarises them. `visibleBlocks` tells
 * the hook what is placed now, so it re-sends a block only when its content changed or it is no
 * longer visible (a new turn starts without blocks). It never fails the turn: a crash becomes a
 * `warning` and the context stays as it was.
 */
export interface PreStepInput {
  /** The model step about to run (1-based). */
  readonly step: number
  readonly messages: ReadonlyArray<ChatMessage>
  readonly visibleBlocks: ReadonlyArray<ContextBlock>
  /** The tools the model is offered at this step: none for a model without native tool calling. */
  readonly toolNames: ReadonlyArray<string>
}
export interface PreStepOutput {
  /** Set (insert or replace) or remove (`content: null`) blocks; sources not named stay as they are. */
  readonly blocks?: ReadonlyArray<ContextBlockChange> | undefined
  /** Shown to the user as `warning` events (e.g. "catalog refresh failed"). */
  readonly warnings?: ReadonlyArray<string> | undefined
}

/** Sent by a running `callModel` actor to its turn, which re-emits them as `delta` / `thinking`. */
export type ModelStreamForwardEvent =
  | { readonly type: 'model.delta'; readonly text: string }
  | { readonly type: 'model.thinking'; readonly text: string }

export interface ModelStreamSink {
  readonly send: (event: ModelStreamForwardEvent) => void
}

/** `callModel`: one streamed model step. Expected provider failures are data (`ok: false`). */
export interface CallModelInput {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSchema>
  readonly purpose: 'step'
  /** The turn actor: send it `model.delta` / `model.thinking` while streaming. */
  readonly parent: ModelStreamSink
}
export type CallModelOutput =
  | { readonly ok: true; readonly result: ModelResult }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly partialText: string }

/** `compact`: summarise a batch of messages (counts as a model call). */
export interface CompactInput {
  readonly messages: ReadonlyArray<ChatMessage>
  /** `COMPACTION_INSTRUCTION`, which carries the `[knowagent:compaction]` marker. */
  readonly instruction: string
}
export type CompactOutput =
  | { readonly ok: true; readonly summary: string; readonly usage?: Usage | undefined }
  | { readonly ok: false; readonly code: string; readonly message: string }

export interface ToolCallRequest {
  readonly id: string
  readonly name: string
  readonly arguments: Record<string, unknown>
}

/** `runTool`: one tool execution within the turn's scope. Tool errors are `ok: false` results. */
export interface RunToolInput {
  readonly call: ToolCallRequest
  readonly scopeUri: string
}
export interface RunToolOutput {
  readonly ok: boolean
  /** Goes back to the model as the `role:"tool"` message. */
  readonly content: string
  /** Short, for the UI's tool card. */
  readonly summary: string
}

// ── events in ─────────────────────────────────────────────────────────────────────────────

/** Who stopped a turn: its user, its client leaving, the server shutting down, or the end of the credential it ran under (`auth.revoked`). */
export type TurnStopReason = 'user' | 'disconnect' | 'shutdown' | 'revoked'

export type TurnEvent =
  | {
      readonly type: 'user.stop'
      readonly reason?: TurnStopReason | undefined
      /**
       * The text of the step in flight, from a host whose deltas bypass the machine (a direct
       * stream sink); otherwise the machine uses what it received as `model.delta`.
       */
      readonly partial?: string | undefined
    }
  | {
      /**
       * The host's clock: the turn ran past its time limit (`limits.turnSeconds`). It fails the
       * turn `limit.turn_time` from any state, keeping the text of the step in flight as `partial`.
       */
      readonly type: 'limit.turn_time'
      readonly seconds: number
      readonly partial?: string | undefined
    }
  | ModelStreamForwardEvent

// ── runtime events out (xstate `emit`) ────────────────────────────────────────────────────

export interface ContextReport {
  readonly used: number
  readonly limit: number
  readonly window: number
  readonly output_reserve: number
  readonly protocol_reserve: number
  readonly compactions: number
  readonly before?: number | undefined
  readonly after?: number | undefined
  /** after / before of the last compaction, from the measured estimates. */
  readonly ratio?: number | undefined
}

export type TurnEmitted =
  | { readonly type: 'delta'; readonly text: string }
  | { readonly type: 'thinking'; readonly text: string }
  | {
      readonly type: 'tool'
      readonly phase: 'start'
      readonly call_id: string
      readonly name: string
      readonly arguments: unknown
    }
  | {
      /** Progress of a long tool (e.g. a retrieval service answering), between its start and end. */
      readonly type: 'tool'
      readonly phase: 'progress'
      readonly call_id: string
      readonly name: string
      readonly text: string
    }
  | {
      readonly type: 'tool'
      readonly phase: 'end'
      readonly call_id: string
      readonly name: string
      readonly arguments: unknown
      readonly ok: boolean
      readonly summary: string
    }
  | ({ readonly type: 'context' } & ContextReport)
  | { readonly type: 'warning'; readonly message: string }
  | { readonly type: 'done'; readonly finish_reason: FinishReason; readonly usage?: Usage | undefined }
  | { readonly type: 'error'; readonly code: string; readonly message: string; readonly partial?: string | undefined }

export type TurnEmittedType = TurnEmitted['type']

// ── output ────────────────────────────────────────────────────────────────────────────────

export interface TurnCounters {
  readonly modelSteps: number
  /** Steps plus compaction calls. */
  readonly modelCalls: number
  /** Tool executions (rejected calls are answered without running and are not counted). */
  readonly toolCalls: number
  /** Compaction batches applied. */
  readonly compactions: number
}

export interface TurnError {
  readonly code: string
  readonly message: string
  /** Text the model had streamed before the failure or stop. */
  readonly partial?: string | undefined
}

export type TurnStatus = 'done' | 'failed' | 'cancelled'

export interface TurnOutput {
  readonly status: TurnStatus
  /** The whole conversation to carry into the next turn, without system messages; every tool call answered. */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly finishReason?: FinishReason | undefined
  readonly error?: TurnError | undefined
  readonly counters: TurnCounters
  readonly usage: Usage
  readonly lastCompaction?: CompactionMeasurement | undefined
  readonly scopeUri?: string | undefined
  readonly scopeKind?: 'directory' | 'file' | undefined
}

/** Error codes the machine itself produces (actors report their own, e.g. a workspace code such as `not_found`). */
export const TURN_ERROR_CODES = {
  modelStepLimit: 'limit.model_steps',
  toolCallLimit: 'limit.tool_calls',
  modelCallLimit: 'limit.model_calls',
  turnTimeLimit: 'limit.turn_time',
  contextOverLimit: 'context.over_limit',
  compactionNotConverging: 'compaction.not_converging',
  toolCallsMissing: 'model.tool_calls_missing',
  internal: 'internal_error',
  cancelled: 'cancelled',
  /** Cancelled because the session or token the turn ran under ended (signed out, password changed, token revoked). */
  authRevoked: 'auth.revoked',
} as const
