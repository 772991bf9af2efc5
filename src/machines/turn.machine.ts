// The turn machine (SPEC §3, §5): prepare → check limits → pre-step hook → check context →
// compact while over the limit → call the model → run the requested tools one by one → … →
// done | failed | cancelled. It decides; the host's actors (supplied with
// `turnMachine.provide({ actors })`) do the I/O. Pure: it never imports src/effects/.
//
// Decisions worth knowing:
// - Limits: a step runs only while `modelSteps < maxModelSteps` and `modelCalls < maxModelCalls`
//   (the 12th step runs; needing a 13th fails `limit.model_steps`); a tool runs only while
//   `toolCalls < maxToolCalls` (the 24th runs; a 25th fails `limit.tool_calls`, and it and the
//   rest of its step are answered "not run"); a compaction call is only made when a model call
//   is left for the step after it (else `limit.model_calls`). Rejected calls are not counted.
// - Context: before every model call (step or compaction) a `context` event reports the
//   estimate. Over the limit: compact a batch (see compaction-plan.ts), re-check, repeat.
//   `context.over_limit`: over and nothing compactable at all (the fixed part alone is too big);
//   `compaction.not_converging`: a summary not smaller than its batch, or nothing left to
//   compact after compacting. `lastCompaction` = {before: estimate when the run of compactions
//   started, after: estimate after its last batch}.
// - `length` and `content_filter` finish reasons end the turn `done` with that finish reason
//   (surfaced in the `done` event), without running any tool call of that response.
// - An incomplete provider response (`callModel` → `ok: false`) fails the turn with the
//   provider's code and the partial text; the partial text is not added to the history.
// - Crashes (an actor's `onError`) fail the turn with `internal_error`, except in the pre-step
//   hook, which only warns.
// - Cancellation: `user.stop` from any non-final state → `cancelled`. Leaving the state stops the
//   running child actor, which interrupts its Effect. A host that must stop a turn (client
//   disconnect, shutdown) should send `user.stop` before `actor.stop()`, since a stopped actor
//   has no output.
// - The output history never leaves a tool call unanswered: calls cut short get a
//   `{"error":"cancelled"}` (or "not run") result.
import { assign, emit, enqueueActions, fromPromise, setup } from 'xstate'
import {
  applyCompactionSummary,
  buildSummaryMessage,
  COMPACTION_INSTRUCTION,
  type CompactionPlan,
  ensureUrisKept,
  findQuestionIndex,
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
import {
  type CallModelInput,
  type CallModelOutput,
  type CompactInput,
  type CompactOutput,
  type ContextReport,
  DEFAULT_MAX_TOOL_OUTPUT_CHARS,
  DEFAULT_TURN_LIMITS,
  type PrepareInput,
  type PrepareOutput,
  type PreStepInput,
  type PreStepOutput,
  type RunToolInput,
  type RunToolOutput,
  TURN_ERROR_CODES,
  type TurnCounters,
  type TurnEmitted,
  type TurnError,
  type TurnEvent,
  type TurnInput,
  type TurnLimits,
  type TurnOutput,
  type TurnStatus,
} from './turn-contract.ts'
import { closeUnansweredToolCalls, historyForNextTurn } from './turn-history.ts'
import {
  collectToolCallIds,
  type PlannedToolCall,
  planToolCalls,
  toAssistantToolCalls,
  toolErrorContent,
} from './tool-call-validation.ts'
import type { ChatMessage, FinishReason, ModelResult, ToolSchema, TurnModelInfo, Usage } from './turn-types.ts'

export interface TurnContext {
  readonly turnId: string
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  readonly model: TurnModelInfo
  readonly limits: TurnLimits
  readonly maxToolOutputChars: number
  readonly protocolReserve: number
  readonly scopeUri: string | undefined
  readonly scopeKind: 'directory' | 'file' | undefined
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
  readonly usage: Usage
  readonly status: TurnStatus | undefined
  readonly finishReason: FinishReason | undefined
  readonly error: TurnError | undefined
}

const ZERO_COUNTERS: TurnCounters = { modelSteps: 0, modelCalls: 0, toolCalls: 0, compactions: 0 }

function missingActor<TOutput, TInput>(name: string) {
  return fromPromise<TOutput, TInput>(async () => {
    throw new Error(`turn actor "${name}" was not provided: use turnMachine.provide({ actors: { ${name} } })`)
  })
}

// ── pure context helpers ─────────────────────────────────────────────────────────────────

export function initialTurnContext(input: TurnInput): TurnContext {
  return {
    turnId: input.turnId,
    uri: input.uri,
    question: input.question,
    history: input.history,
    model: input.model,
    limits: { ...DEFAULT_TURN_LIMITS, ...input.limits },
    maxToolOutputChars: input.maxToolOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS,
    protocolReserve: input.protocolReserve ?? DEFAULT_PROTOCOL_RESERVE,
    scopeUri: undefined,
    scopeKind: undefined,
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
    usage: {},
    status: undefined,
    finishReason: undefined,
    error: undefined,
  }
}

function lastUserMessage(messages: ReadonlyArray<ChatMessage>): ChatMessage | undefined {
  return messages.findLast((message) => message.role === 'user')
}

export function turnInputLimit(context: TurnContext): number {
  return inputLimit({
    contextWindow: context.model.contextWindow,
    maxOutputTokens: context.model.maxOutputTokens,
    protocolReserve: context.protocolReserve,
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
    window: context.model.contextWindow,
    output_reserve: context.model.maxOutputTokens,
    protocol_reserve: context.protocolReserve,
    compactions: context.counters.compactions,
    before: context.lastCompaction?.before,
    after: context.lastCompaction?.after,
    ratio: compactionRatio(context.lastCompaction),
  }
}

function addUsage(total: Usage, more: Usage | undefined): Usage {
  if (more === undefined) return total
  const sum = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0))
  return {
    promptTokens: sum(total.promptTokens, more.promptTokens),
    completionTokens: sum(total.completionTokens, more.completionTokens),
    totalTokens: sum(total.totalTokens, more.totalTokens),
  }
}

function withCounters(context: TurnContext, change: Partial<TurnCounters>): TurnCounters {
  return { ...context.counters, ...change }
}

function acceptPreStep(context: TurnContext, output: PreStepOutput): { messages: ReadonlyArray<ChatMessage>; warning?: string } {
  const messages = output?.messages
  const keepsQuestion =
    Array.isArray(messages) &&
    (context.questionMessage === undefined || findQuestionIndex({ messages, question: context.questionMessage }) >= 0)
  if (!keepsQuestion) {
    return { messages: context.messages, warning: 'the pre-step hook dropped the current question; its changes were ignored' }
  }
  return { messages }
}

function answerRejectedCall(context: TurnContext): Partial<TurnContext> {
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

function acceptModelResult(context: TurnContext, result: ModelResult, withToolCalls: boolean): Partial<TurnContext> {
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

function applyCompaction(context: TurnContext, summary: string): Partial<TurnContext> {
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
function summaryNotSmaller(context: TurnContext, summary: string): boolean {
  const plan = context.compactionPlan
  if (plan?.kind !== 'batch') return true
  const batch = pickMessages({ messages: context.messages, indices: plan.indices })
  const summaryMessage = buildSummaryMessage(ensureUrisKept({ batch, summary }))
  return estimateMessagesBytes([summaryMessage]) >= plan.bytes
}

type MachineErrorCode = Exclude<(typeof TURN_ERROR_CODES)[keyof typeof TURN_ERROR_CODES], 'cancelled' | 'internal_error'>

function machineErrorMessage(code: MachineErrorCode, context: TurnContext): string {
  const { limits, counters } = context
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

function crashError(actor: string, error: unknown): TurnError {
  const detail = error instanceof Error ? error.message : String(error)
  return { code: TURN_ERROR_CODES.internal, message: `${actor} crashed: ${detail}` }
}

export function buildTurnOutput(context: TurnContext): TurnOutput {
  const messages = context.messages.length > 0 ? context.messages : [...context.history, { role: 'user' as const, content: context.question }]
  return {
    status: context.status ?? 'failed',
    messages: historyForNextTurn(messages),
    finishReason: context.finishReason,
    error: context.error,
    counters: context.counters,
    usage: context.usage,
    lastCompaction: context.lastCompaction,
    scopeUri: context.scopeUri,
    scopeKind: context.scopeKind,
  }
}

// ── the machine ──────────────────────────────────────────────────────────────────────────

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as TurnInput,
    output: {} as TurnOutput,
    emitted: {} as TurnEmitted,
    children: {} as {
      prepare: 'prepare'
      preStep: 'preStep'
      callModel: 'callModel'
      compact: 'compact'
      runTool: 'runTool'
    },
  },
  actors: {
    prepare: missingActor<PrepareOutput, PrepareInput>('prepare'),
    preStep: missingActor<PreStepOutput, PreStepInput>('preStep'),
    callModel: missingActor<CallModelOutput, CallModelInput>('callModel'),
    compact: missingActor<CompactOutput, CompactInput>('compact'),
    runTool: missingActor<RunToolOutput, RunToolInput>('runTool'),
  },
  guards: {
    modelStepLimitReached: ({ context }) => context.counters.modelSteps >= context.limits.maxModelSteps,
    modelCallLimitReached: ({ context }) => context.counters.modelCalls >= context.limits.maxModelCalls,
    withinInputLimit: ({ context }) => context.contextUsed <= turnInputLimit(context),
    noModelCallForCompaction: ({ context }) => context.counters.modelCalls + 2 > context.limits.maxModelCalls,
    nothingCompactable: ({ context }) => context.compactionPlan?.kind !== 'batch' && context.compactionCycleBefore === undefined,
    nothingLeftToCompact: ({ context }) => context.compactionPlan?.kind !== 'batch',
    allCallsAnswered: ({ context }) => context.answeredCalls >= context.plannedCalls.length,
    nextCallRejected: ({ context }) => context.plannedCalls[context.answeredCalls]?.kind === 'reject',
    toolCallLimitReached: ({ context }) => context.counters.toolCalls >= context.limits.maxToolCalls,
  },
  actions: {
    failWith: assign(({ context }, params: { code: MachineErrorCode }) => ({
      error: { code: params.code, message: machineErrorMessage(params.code, context) },
    })),
    measureContext: assign(({ context }) => measureContext(context)),
    emitContext: emit(({ context }) => ({ type: 'context' as const, ...contextReport(context) })),
    startCompactionCycle: assign(({ context }) => ({
      compactionCycleBefore: context.compactionCycleBefore ?? context.contextUsed,
    })),
    endCompactionCycle: assign({ compactionCycleBefore: undefined }),
    countCompactionCall: assign(({ context }) => ({
      counters: withCounters(context, { modelCalls: context.counters.modelCalls + 1 }),
    })),
    startModelStep: assign(({ context }) => ({
      streamedText: '',
      counters: withCounters(context, {
        modelSteps: context.counters.modelSteps + 1,
        modelCalls: context.counters.modelCalls + 1,
      }),
    })),
    answerRejectedCall: assign(({ context }) => answerRejectedCall(context)),
    emitRejectedCall: enqueueActions(({ context, enqueue }) => {
      const call = context.plannedCalls[context.answeredCalls]
      if (call?.kind !== 'reject') return
      const shown = { call_id: call.id, name: call.name, arguments: call.shownArguments }
      enqueue.emit({ type: 'tool', phase: 'start', ...shown })
      enqueue.emit({ type: 'tool', phase: 'end', ...shown, ok: false, summary: call.message })
    }),
    countToolCall: assign(({ context }) => ({
      counters: withCounters(context, { toolCalls: context.counters.toolCalls + 1 }),
    })),
    emitToolStart: emit(({ context }) => {
      const call = context.plannedCalls[context.answeredCalls]
      return {
        type: 'tool' as const,
        phase: 'start' as const,
        call_id: call?.id ?? '',
        name: call?.name ?? '',
        arguments: call?.kind === 'run' ? call.arguments : null,
      }
    }),
    setDone: assign({ status: 'done' }),
    emitDone: emit(({ context }) => ({
      type: 'done' as const,
      finish_reason: context.finishReason ?? 'stop',
      usage: Object.keys(context.usage).length > 0 ? context.usage : undefined,
    })),
    setFailed: assign(({ context }) => ({
      status: 'failed' as const,
      error: context.error ?? { code: TURN_ERROR_CODES.internal, message: 'the turn failed' },
      messages: closeUnansweredToolCalls({
        messages: context.messages,
        content: toolErrorContent(`not run: the turn ended with ${context.error?.code ?? 'an error'}`),
      }),
    })),
    setCancelled: assign(({ context, event }) => ({
      status: 'cancelled' as const,
      error: {
        code: TURN_ERROR_CODES.cancelled,
        message: `the turn was stopped (${event.type === 'user.stop' ? (event.reason ?? 'user') : 'user'})`,
        partial: context.streamedText === '' ? undefined : context.streamedText,
      },
      messages: closeUnansweredToolCalls({ messages: context.messages, content: toolErrorContent('cancelled') }),
    })),
    emitError: emit(({ context }) => ({
      type: 'error' as const,
      code: context.error?.code ?? TURN_ERROR_CODES.internal,
      message: context.error?.message ?? 'the turn failed',
      partial: context.error?.partial,
    })),
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => initialTurnContext(input),
  initial: 'preparing',
  output: ({ context }) => buildTurnOutput(context),
  on: {
    'user.stop': { target: '.cancelled' },
  },
  states: {
    preparing: {
      invoke: {
        id: 'prepare',
        src: 'prepare',
        input: ({ context }) => ({
          uri: context.uri,
          question: context.question,
          history: context.history,
          model: context.model,
        }),
        onDone: [
          {
            guard: ({ event }) => !event.output.ok,
            target: 'failed',
            actions: assign(({ event }) =>
              event.output.ok ? {} : { error: { code: event.output.code, message: event.output.message } },
            ),
          },
          {
            target: 'checkingLimits',
            actions: assign(({ event }) => {
              if (!event.output.ok) return {}
              const { scopeUri, scopeKind, messages, tools } = event.output
              return { scopeUri, scopeKind, messages, tools, questionMessage: lastUserMessage(messages) }
            }),
          },
        ],
        onError: { target: 'failed', actions: assign(({ event }) => ({ error: crashError('prepare', event.error) })) },
      },
    },
    checkingLimits: {
      always: [
        { guard: 'modelStepLimitReached', target: 'failed', actions: { type: 'failWith', params: { code: 'limit.model_steps' } } },
        { guard: 'modelCallLimitReached', target: 'failed', actions: { type: 'failWith', params: { code: 'limit.model_calls' } } },
        { target: 'preStep' },
      ],
    },
    preStep: {
      invoke: {
        id: 'preStep',
        src: 'preStep',
        input: ({ context }) => ({ messages: context.messages }),
        onDone: {
          target: 'checkingContext',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const accepted = acceptPreStep(context, event.output)
            enqueue.assign({ messages: accepted.messages })
            for (const message of [accepted.warning, ...(event.output?.warnings ?? [])]) {
              if (message) enqueue.emit({ type: 'warning', message })
            }
          }),
        },
        onError: {
          target: 'checkingContext',
          actions: emit(({ event }) => ({
            type: 'warning' as const,
            message: `the pre-step hook failed (${crashError('preStep', event.error).message}); continuing without it`,
          })),
        },
      },
    },
    checkingContext: {
      entry: ['measureContext', 'emitContext'],
      always: [
        { guard: 'withinInputLimit', target: 'callingModel', actions: 'endCompactionCycle' },
        { guard: 'nothingCompactable', target: 'failed', actions: { type: 'failWith', params: { code: 'context.over_limit' } } },
        {
          guard: 'nothingLeftToCompact',
          target: 'failed',
          actions: { type: 'failWith', params: { code: 'compaction.not_converging' } },
        },
        { guard: 'noModelCallForCompaction', target: 'failed', actions: { type: 'failWith', params: { code: 'limit.model_calls' } } },
        { target: 'compacting', actions: 'startCompactionCycle' },
      ],
    },
    compacting: {
      entry: 'countCompactionCall',
      invoke: {
        id: 'compact',
        src: 'compact',
        input: ({ context }) => ({
          messages: context.compactionPlan?.kind === 'batch' ? pickMessages({ messages: context.messages, indices: context.compactionPlan.indices }) : [],
          instruction: COMPACTION_INSTRUCTION,
        }),
        onDone: [
          {
            guard: ({ event }) => !event.output.ok,
            target: 'failed',
            actions: assign(({ event }) =>
              event.output.ok ? {} : { error: { code: event.output.code, message: `compaction call failed: ${event.output.message}` } },
            ),
          },
          {
            guard: ({ context, event }) => event.output.ok && summaryNotSmaller(context, event.output.summary),
            target: 'failed',
            actions: assign(({ context }) => ({
              error: {
                code: TURN_ERROR_CODES.compactionNotConverging,
                message: `compaction is not converging: the summary is not smaller than the ${context.compactionPlan?.kind === 'batch' ? context.compactionPlan.bytes : 0} bytes it replaces`,
              },
            })),
          },
          {
            target: 'checkingContext',
            actions: assign(({ context, event }) =>
              event.output.ok
                ? { ...applyCompaction(context, event.output.summary), usage: addUsage(context.usage, event.output.usage) }
                : {},
            ),
          },
        ],
        onError: { target: 'failed', actions: assign(({ event }) => ({ error: crashError('compact', event.error) })) },
      },
    },
    callingModel: {
      entry: 'startModelStep',
      invoke: {
        id: 'callModel',
        src: 'callModel',
        input: ({ context, self }) => ({ messages: context.messages, tools: context.tools, purpose: 'step' as const, parent: self }),
        onDone: [
          {
            guard: ({ event }) => !event.output.ok,
            target: 'failed',
            actions: assign(({ event }) =>
              event.output.ok
                ? {}
                : {
                    error: {
                      code: event.output.code,
                      message: event.output.message,
                      partial: event.output.partialText === '' ? undefined : event.output.partialText,
                    },
                  },
            ),
          },
          {
            guard: ({ event }) =>
              event.output.ok && (event.output.result.finishReason === 'length' || event.output.result.finishReason === 'content_filter'),
            target: 'done',
            actions: assign(({ context, event }) => (event.output.ok ? acceptModelResult(context, event.output.result, false) : {})),
          },
          {
            guard: ({ event }) => event.output.ok && event.output.result.toolCalls.length > 0,
            target: 'runningTools',
            actions: assign(({ context, event }) => (event.output.ok ? acceptModelResult(context, event.output.result, true) : {})),
          },
          {
            guard: ({ event }) => event.output.ok && event.output.result.finishReason === 'tool_calls',
            target: 'failed',
            actions: { type: 'failWith', params: { code: 'model.tool_calls_missing' } },
          },
          {
            target: 'done',
            actions: assign(({ context, event }) => (event.output.ok ? acceptModelResult(context, event.output.result, false) : {})),
          },
        ],
        onError: { target: 'failed', actions: assign(({ event }) => ({ error: crashError('callModel', event.error) })) },
      },
      on: {
        'model.delta': {
          actions: [
            assign(({ context, event }) => ({ streamedText: context.streamedText + event.text })),
            emit(({ event }) => ({ type: 'delta' as const, text: event.text })),
          ],
        },
        'model.thinking': { actions: emit(({ event }) => ({ type: 'thinking' as const, text: event.text })) },
      },
    },
    runningTools: {
      // the step's text is in the history now; only an in-flight step has partial text
      entry: assign({ streamedText: '' }),
      initial: 'nextCall',
      onDone: 'checkingLimits',
      states: {
        nextCall: {
          always: [
            { guard: 'allCallsAnswered', target: 'finished' },
            { guard: 'nextCallRejected', actions: ['emitRejectedCall', 'answerRejectedCall'] },
            {
              guard: 'toolCallLimitReached',
              target: '#turn.failed',
              actions: { type: 'failWith', params: { code: 'limit.tool_calls' } },
            },
            { target: 'executing' },
          ],
        },
        executing: {
          entry: ['countToolCall', 'emitToolStart'],
          invoke: {
            id: 'runTool',
            src: 'runTool',
            input: ({ context }) => {
              const call = context.plannedCalls[context.answeredCalls]
              return {
                call: call?.kind === 'run' ? { id: call.id, name: call.name, arguments: call.arguments } : { id: '', name: '', arguments: {} },
                scopeUri: context.scopeUri ?? context.uri,
              }
            },
            onDone: {
              target: 'nextCall',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const call = context.plannedCalls[context.answeredCalls]
                if (call?.kind !== 'run') return
                const result = boundToolOutput({ output: event.output, maxChars: context.maxToolOutputChars })
                enqueue.emit({
                  type: 'tool',
                  phase: 'end',
                  call_id: call.id,
                  name: call.name,
                  arguments: call.arguments,
                  ok: result.ok,
                  summary: result.summary,
                })
                enqueue.assign({
                  messages: [...context.messages, { role: 'tool', tool_call_id: call.id, content: result.content }],
                  answeredCalls: context.answeredCalls + 1,
                })
              }),
            },
            onError: { target: '#turn.failed', actions: assign(({ event }) => ({ error: crashError('runTool', event.error) })) },
          },
        },
        finished: { type: 'final' },
      },
    },
    done: { type: 'final', entry: ['setDone', 'emitDone'] },
    failed: { type: 'final', entry: ['setFailed', 'emitError'] },
    cancelled: { type: 'final', entry: ['setCancelled', 'emitError'] },
  },
})

export type TurnMachine = typeof turnMachine
