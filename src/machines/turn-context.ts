// The turn's context and the pure reducers the machine applies to it (SPEC §3, §5): counters and
// limits, context accounting and compaction, model results, tool results, the output. No I/O, no
// xstate: each function takes the context and returns the part that changes, and is tested beside
// this file.
import {
  applyCompactionSummary,
  buildSummaryMessage,
  type CompactionPlan,
  ensureUrisKept,
  findQuestionIndex,
  incompressibleMessages,
  pickMessages,
  planCompactionBatch,
} from './compaction-plan.ts'
import {
  type CompactionMeasurement,
  compactionRatio,
  DEFAULT_PROTOCOL_RESERVE,
  estimateInputBytes,
  estimateMessagesBytes,
  inputLimit,
} from './context-accounting.ts'
import { placeContextBlocks, visibleContextBlocks } from './context-blocks.ts'
import { classifyOnce, type ModelOutputClass } from './model-output.ts'
import {
  type CallModelOutput,
  type ContextReport,
  DEFAULT_MAX_TOOL_OUTPUT_CHARS,
  DEFAULT_TURN_LIMITS,
  type PreStepInput,
  type PreStepOutput,
  type RunToolOutput,
  TURN_ERROR_CODES,
  type TurnCounters,
  type TurnError,
  type TurnInput,
  type TurnLimits,
  type TurnOutput,
  type TurnStatus,
} from './turn-contract.ts'
import { historyForNextTurn, markCutAnswer } from './turn-history.ts'
import { collectToolCallIds, type PlannedToolCall, planToolCalls, toAssistantToolCalls, toolErrorContent } from './tool-call-validation.ts'
import type { ChatMessage, FinishReason, ModelResult, ToolSchema, TurnModelInfo, Usage } from './turn-types.ts'

/** The turn's input with its defaults applied: set once, never changed by the machine. */
export interface ResolvedTurnInput {
  readonly turnId: string
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  readonly model: TurnModelInfo
  readonly limits: TurnLimits
  readonly maxToolOutputChars: number
  readonly protocolReserve: number
}

/**
 * At most {@link MAX_CONTEXT_KEYS} top-level keys: xstate copies the context with
 * `Object.assign({}, context, update)` at every `assign`, and V8 gives a copy of 20 keys or more
 * dictionary (slow) properties, which made every transition and context read of a turn slower
 * (docs/performance.md, sixth pass). Grouping keeps it under; a test holds it there.
 */
export interface TurnContext {
  readonly input: ResolvedTurnInput
  /** Where `prepare` resolved the selected URI; undefined until it has. */
  readonly scope: { readonly uri: string; readonly kind: 'directory' | 'file' } | undefined
  /** The full conversation sent to the model, system prompt included. */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSchema>
  /** The current question as prepared (never compacted). */
  readonly questionMessage: ChatMessage | undefined
  readonly counters: TurnCounters
  /** Input estimate at the last context check. */
  readonly contextUsed: number
  /** What to compact next, planned at the last context check when over the limit. */
  readonly compactionPlan: CompactionPlan | undefined
  /** Estimate when the current run of compactions started (undefined outside one). */
  readonly compactionCycleBefore: number | undefined
  readonly lastCompaction: CompactionMeasurement | undefined
  /** The tool calls of the current step, in order, and how many have been answered. */
  readonly plannedCalls: ReadonlyArray<PlannedToolCall>
  readonly answeredCalls: number
  /** Text streamed during the current model step. */
  readonly streamedText: string
  /** The last model step's outcome, classified (routes the step's next state). */
  readonly modelOutput: ModelOutputClass | undefined
  readonly usage: Usage
  readonly status: TurnStatus | undefined
  readonly finishReason: FinishReason | undefined
  readonly error: TurnError | undefined
}

/** The most top-level keys a context copy can have and keep V8's fast properties (Node 24). */
export const MAX_CONTEXT_KEYS = 19

export const ZERO_COUNTERS: TurnCounters = { modelSteps: 0, modelCalls: 0, toolCalls: 0, compactions: 0 }

export function initialTurnContext(input: TurnInput): TurnContext {
  return {
    input: {
      turnId: input.turnId,
      uri: input.uri,
      question: input.question,
      history: input.history,
      model: input.model,
      limits: { ...DEFAULT_TURN_LIMITS, ...input.limits },
      maxToolOutputChars: input.maxToolOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS,
      protocolReserve: input.protocolReserve ?? DEFAULT_PROTOCOL_RESERVE,
    },
    scope: undefined,
    messages: [],
    tools: [],
    questionMessage: undefined,
    counters: ZERO_COUNTERS,
    contextUsed: 0,
    compactionPlan: undefined,
    compactionCycleBefore: undefined,
    lastCompaction: undefined,
    plannedCalls: [],
    answeredCalls: 0,
    streamedText: '',
    modelOutput: undefined,
    usage: {},
    status: undefined,
    finishReason: undefined,
    error: undefined,
  }
}

export function lastUserMessage(messages: ReadonlyArray<ChatMessage>): ChatMessage | undefined {
  return messages.findLast((message) => message.role === 'user')
}

export function turnInputLimit(context: TurnContext): number {
  return inputLimit({
    contextWindow: context.input.model.contextWindow,
    maxOutputTokens: context.input.model.maxOutputTokens,
    protocolReserve: context.input.protocolReserve,
  })
}

function questionIndexOf(context: TurnContext): number {
  return context.questionMessage ? findQuestionIndex({ messages: context.messages, question: context.questionMessage }) : -1
}

export function measureContext(context: TurnContext): Pick<TurnContext, 'contextUsed' | 'compactionPlan'> {
  const used = estimateInputBytes({ messages: context.messages, tools: context.tools })
  const limit = turnInputLimit(context)
  if (used <= limit) return { contextUsed: used, compactionPlan: undefined }
  const compactionPlan = planCompactionBatch({ messages: context.messages, questionIndex: questionIndexOf(context), limit, used })
  return { contextUsed: used, compactionPlan }
}

export function contextReport(context: TurnContext): ContextReport {
  return {
    used: context.contextUsed,
    limit: turnInputLimit(context),
    window: context.input.model.contextWindow,
    output_reserve: context.input.model.maxOutputTokens,
    protocol_reserve: context.input.protocolReserve,
    compactions: context.counters.compactions,
    before: context.lastCompaction?.before,
    after: context.lastCompaction?.after,
    ratio: compactionRatio(context.lastCompaction),
  }
}

export function addUsage(total: Usage, more: Usage | undefined): Usage {
  if (more === undefined) return total
  const sum = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0))
  return {
    promptTokens: sum(total.promptTokens, more.promptTokens),
    completionTokens: sum(total.completionTokens, more.completionTokens),
    totalTokens: sum(total.totalTokens, more.totalTokens),
  }
}

export function withCounters(context: TurnContext, change: Partial<TurnCounters>): TurnCounters {
  return { ...context.counters, ...change }
}

/** What the pre-step hook sees: the step about to run, the context, the blocks placed now and the tools offered. */
export function preStepInput(context: TurnContext): PreStepInput {
  return {
    step: context.counters.modelSteps + 1,
    messages: context.messages,
    visibleBlocks: visibleContextBlocks(context.messages),
    toolNames: context.tools.map((tool) => tool.function.name),
  }
}

/** Places the hook's blocks; refused sources and the hook's own warnings come back as warnings. */
export function acceptPreStep(context: TurnContext, output: PreStepOutput | undefined): { messages: ReadonlyArray<ChatMessage>; warnings: string[] } {
  const placed = placeContextBlocks({ messages: context.messages, changes: output?.blocks ?? [] })
  return {
    messages: placed.messages,
    warnings: [
      ...placed.refused.map((source) => `the pre-step hook used an invalid block source ${JSON.stringify(source.slice(0, 80))}; that block was ignored`),
      ...(output?.warnings ?? []),
    ],
  }
}

export function answerRejectedCall(context: TurnContext): Partial<TurnContext> {
  const call = context.plannedCalls[context.answeredCalls]
  if (call?.kind !== 'reject') return {}
  return {
    messages: [...context.messages, { role: 'tool', tool_call_id: call.id, content: toolErrorContent(call.message) }],
    answeredCalls: context.answeredCalls + 1,
  }
}

function codePointLength(text: string): number {
  let length = 0
  for (const _ of text) length++
  return length
}

/** The tool result as it goes back to the model: oversized output becomes an explicit tool error. */
export function boundToolOutput({ output, maxChars }: { readonly output: RunToolOutput; readonly maxChars: number }): RunToolOutput {
  const size = codePointLength(output.content)
  if (size <= maxChars) return output
  return {
    ok: false,
    content: toolErrorContent(
      `tool output too large (${size} characters, the limit is ${maxChars}); ` +
        'request a smaller page with the offset/limit arguments (or a narrower query).',
    ),
    summary: `output too large (${size} characters)`,
  }
}

/**
 * A tool result as it may join the turn's messages: within `maxToolOutputChars` (boundToolOutput),
 * and small enough that the input can still fit once everything compactable is compacted — the
 * latest tool exchange never is, so a result that does not fit beside the system prompt, the
 * question and this step's other results would end the turn in `context.over_limit`. Such a result
 * becomes a tool error saying how much room there is, which the model can act on (a smaller page).
 */
export function fitToolOutput(context: TurnContext, callId: string, output: RunToolOutput): RunToolOutput {
  const bounded = boundToolOutput({ output, maxChars: context.input.maxToolOutputChars })
  const withResult: ChatMessage[] = [...context.messages, { role: 'tool', tool_call_id: callId, content: bounded.content }]
  const floor = estimateInputBytes({ messages: incompressibleMessages({ messages: withResult, questionIndex: questionIndexOf(context) }), tools: context.tools })
  const limit = turnInputLimit(context)
  if (floor <= limit) return bounded
  const size = estimateMessagesBytes([{ role: 'tool', tool_call_id: callId, content: bounded.content }])
  const room = Math.max(0, limit - (floor - size))
  return {
    ok: false,
    content: toolErrorContent(
      `tool output too large for the context left (${size} bytes as the model counts input; ${room} bytes of room beside the system prompt, ` +
        "the question and this step's other results); request a smaller page with the offset/limit arguments (or a narrower query).",
    ),
    summary: `output too large for the context left (${size} bytes, room ${room})`,
  }
}

/** What a model step's output changes: the output classified and kept, and its result accepted unless it failed. */
export function acceptModelOutput(context: TurnContext, output: CallModelOutput): Partial<TurnContext> {
  const modelOutput = classifyOnce(output)
  if (modelOutput.kind === 'incomplete') return { modelOutput, error: modelOutput.error }
  if (modelOutput.kind === 'toolCallsMissing') return { modelOutput }
  return { modelOutput, ...acceptModelResult(context, modelOutput.result, modelOutput.kind === 'tools') }
}

export function acceptModelResult(context: TurnContext, result: ModelResult, withToolCalls: boolean): Partial<TurnContext> {
  const usage = addUsage(context.usage, result.usage)
  if (!withToolCalls) {
    return {
      usage,
      finishReason: result.finishReason,
      messages: [...context.messages, { role: 'assistant', content: result.text }],
    }
  }
  const plannedCalls = planToolCalls({
    calls: result.toolCalls,
    toolNames: context.tools.map((tool) => tool.function.name),
    usedIds: collectToolCallIds(context.messages),
    step: context.counters.modelSteps,
  })
  const assistant: ChatMessage = {
    role: 'assistant',
    content: result.text === '' ? null : result.text,
    tool_calls: toAssistantToolCalls(plannedCalls),
  }
  return { usage, plannedCalls, answeredCalls: 0, messages: [...context.messages, assistant] }
}

export function applyCompaction(context: TurnContext, summary: string): Partial<TurnContext> {
  const plan = context.compactionPlan
  if (plan?.kind !== 'batch') return {}
  const batch = pickMessages({ messages: context.messages, indices: plan.indices })
  const summaryMessage = buildSummaryMessage(ensureUrisKept({ batch, summary }))
  const messages = applyCompactionSummary({ messages: context.messages, indices: plan.indices, summaryMessage })
  const before = context.compactionCycleBefore ?? context.contextUsed
  const after = estimateInputBytes({ messages, tools: context.tools })
  return {
    messages,
    compactionPlan: undefined,
    lastCompaction: { before, after },
    counters: withCounters(context, { compactions: context.counters.compactions + 1 }),
  }
}

/** The summary message would not be smaller than the batch it replaces. */
export function summaryNotSmaller(context: TurnContext, summary: string): boolean {
  const plan = context.compactionPlan
  if (plan?.kind !== 'batch') return true
  const batch = pickMessages({ messages: context.messages, indices: plan.indices })
  const summaryMessage = buildSummaryMessage(ensureUrisKept({ batch, summary }))
  return estimateMessagesBytes([summaryMessage]) >= plan.bytes
}

export type MachineErrorCode = Exclude<(typeof TURN_ERROR_CODES)[keyof typeof TURN_ERROR_CODES], 'cancelled' | 'auth.revoked' | 'internal_error' | 'limit.turn_time'>

export function machineErrorMessage(code: MachineErrorCode, context: TurnContext): string {
  const { counters } = context
  const { limits } = context.input
  switch (code) {
    case 'limit.model_steps':
      return `model step limit reached: ${counters.modelSteps} of ${limits.maxModelSteps} steps used and the model needs another step`
    case 'limit.model_calls':
      return `model call limit reached: ${counters.modelCalls} of ${limits.maxModelCalls} model calls used (steps and compactions together)`
    case 'limit.tool_calls':
      return `tool call limit reached: ${counters.toolCalls} of ${limits.maxToolCalls} tool calls used and the model asked for another`
    case 'context.over_limit':
      return (
        `the input is over the limit (${context.contextUsed} of ${turnInputLimit(context)} bytes) and nothing can be compacted: ` +
        'the system prompt, tool schemas, current question and latest observations alone exceed it'
      )
    case 'compaction.not_converging':
      return (
        `compaction is not converging (${context.contextUsed} of ${turnInputLimit(context)} bytes after ` +
        `${counters.compactions} compaction(s)): nothing smaller is left to compact`
      )
    case 'model.tool_calls_missing':
      return 'the model ended its response with finish_reason "tool_calls" but no tool call was received'
  }
}

export function crashError(actor: string, error: unknown): TurnError {
  const detail = error instanceof Error ? error.message : String(error)
  return { code: TURN_ERROR_CODES.internal, message: `${actor} crashed: ${detail}` }
}

export function buildTurnOutput(context: TurnContext): TurnOutput {
  const messages = context.messages.length > 0 ? context.messages : [...context.input.history, { role: 'user' as const, content: context.input.question }]
  return {
    status: context.status ?? 'failed',
    messages: historyForNextTurn(context.status === 'done' ? markCutAnswer({ messages, finishReason: context.finishReason }) : messages),
    finishReason: context.finishReason,
    error: context.error,
    counters: context.counters,
    usage: context.usage,
    lastCompaction: context.lastCompaction,
    scopeUri: context.scope?.uri,
    scopeKind: context.scope?.kind,
  }
}

