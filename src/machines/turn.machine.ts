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
// The pure reducers the transitions apply live in turn-context.ts.
// - The pre-step hook returns source-tagged context blocks (context-blocks.ts) that are placed
//   after the system prompt; it never fails the turn: a crash only warns.
// - A model step's outcome is classified (model-output.ts) and `callModel`'s done event goes
//   straight to the state for its kind: a state the turn only passes through would cost XState
//   a microstep per step (bench/delta-path.bench.ts measures the machine per turn).
// - Crashes (an actor's `onError`) fail the turn with `internal_error`, except in the pre-step
//   hook, which only warns.
// - Time: `limit.turn_time` (sent by the host's clock) from any non-final state → `failed` with
//   that code and the step's partial text; the running actor is stopped as on a cancel.
// - Cancellation: `user.stop` from any non-final state → `cancelled` (code `cancelled`, or
//   `auth.revoked` when its reason is `revoked`). Leaving the state stops the
//   running child actor, which interrupts its Effect. A host that must stop a turn (client
//   disconnect, shutdown) should send `user.stop` before `actor.stop()`, since a stopped actor
//   has no output.
// - The output history never leaves a tool call unanswered: calls cut short get a
//   `{"error":"cancelled"}` (or "not run") result.
import { assign, emit, enqueueActions, fromPromise, setup } from 'xstate'
import { COMPACTION_INSTRUCTION, pickMessages } from './compaction-plan.ts'
import { outputIs } from './model-output.ts'
import {
  type CallModelInput,
  type CallModelOutput,
  type CompactInput,
  type CompactOutput,
  type PrepareInput,
  type PrepareOutput,
  type PreStepInput,
  type PreStepOutput,
  type RunToolInput,
  type RunToolOutput,
  TURN_ERROR_CODES,
  type TurnEmitted,
  type TurnEvent,
  type TurnInput,
  type TurnOutput,
} from './turn-contract.ts'
import {
  acceptModelOutput,
  acceptPreStep,
  addUsage,
  answerRejectedCall,
  applyCompaction,
  boundToolOutput,
  fitToolOutput,
  buildTurnOutput,
  contextReport,
  crashError,
  initialTurnContext,
  lastUserMessage,
  machineErrorMessage,
  type MachineErrorCode,
  measureContext,
  preStepInput,
  summaryNotSmaller,
  type TurnContext,
  turnInputLimit,
  withCounters,
} from './turn-context.ts'
import { closeUnansweredToolCalls, keepStoppedAnswer } from './turn-history.ts'
import { toolErrorContent } from './tool-call-validation.ts'

export type { TurnContext } from './turn-context.ts'
export { boundToolOutput, buildTurnOutput, contextReport, initialTurnContext, measureContext, turnInputLimit } from './turn-context.ts'

/** The text of the step in flight: what the host streamed past the machine, else what the machine saw. */
function stoppedPartial(context: TurnContext, event: TurnEvent): string | undefined {
  const partial = (event.type === 'user.stop' || event.type === 'limit.turn_time') && event.partial !== undefined ? event.partial : context.streamedText
  return partial === '' ? undefined : partial
}

function missingActor<TOutput, TInput>(name: string) {
  return fromPromise<TOutput, TInput>(async () => {
    throw new Error(`turn actor "${name}" was not provided: use turnMachine.provide({ actors: { ${name} } })`)
  })
}

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
    modelStepLimitReached: ({ context }) => context.counters.modelSteps >= context.input.limits.maxModelSteps,
    modelCallLimitReached: ({ context }) => context.counters.modelCalls >= context.input.limits.maxModelCalls,
    withinInputLimit: ({ context }) => context.contextUsed <= turnInputLimit(context),
    noModelCallForCompaction: ({ context }) => context.counters.modelCalls + 2 > context.input.limits.maxModelCalls,
    nothingCompactable: ({ context }) => context.compactionPlan?.kind !== 'batch' && context.compactionCycleBefore === undefined,
    nothingLeftToCompact: ({ context }) => context.compactionPlan?.kind !== 'batch',
    allCallsAnswered: ({ context }) => context.answeredCalls >= context.plannedCalls.length,
    nextCallRejected: ({ context }) => context.plannedCalls[context.answeredCalls]?.kind === 'reject',
    toolCallLimitReached: ({ context }) => context.counters.toolCalls >= context.input.limits.maxToolCalls,
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
      error:
        event.type === 'user.stop' && event.reason === 'revoked'
          ? {
              code: TURN_ERROR_CODES.authRevoked,
              message: 'the turn was stopped: the session or token it ran under ended (signed out, password changed or token revoked)',
              partial: stoppedPartial(context, event),
            }
          : {
              code: TURN_ERROR_CODES.cancelled,
              message: `the turn was stopped (${event.type === 'user.stop' ? (event.reason ?? 'user') : 'user'})`,
              partial: stoppedPartial(context, event),
            },
      messages: keepStoppedAnswer({
        messages: closeUnansweredToolCalls({ messages: context.messages, content: toolErrorContent('cancelled') }),
        partial: stoppedPartial(context, event),
        reason: event.type === 'user.stop' ? (event.reason ?? 'user') : 'user',
      }),
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
    'limit.turn_time': {
      target: '.failed',
      actions: assign(({ context, event }) => ({
        error: {
          code: TURN_ERROR_CODES.turnTimeLimit,
          message: `the turn ran past its time limit of ${event.seconds} s and was ended`,
          partial: stoppedPartial(context, event),
        },
      })),
    },
  },
  states: {
    preparing: {
      invoke: {
        id: 'prepare',
        src: 'prepare',
        input: ({ context }) => ({
          uri: context.input.uri,
          question: context.input.question,
          history: context.input.history,
          model: context.input.model,
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
              return { scope: { uri: scopeUri, kind: scopeKind }, messages, tools, questionMessage: lastUserMessage(messages) }
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
        input: ({ context }) => preStepInput(context),
        onDone: {
          target: 'checkingContext',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const accepted = acceptPreStep(context, event.output)
            enqueue.assign({ messages: accepted.messages })
            for (const message of accepted.warnings) enqueue.emit({ type: 'warning', message })
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
        // routed here, not through an eventless state in between: each state a turn passes through
        // costs XState a microstep (a snapshot and its sets of state nodes, ~20 KB of garbage)
        onDone: [
          { guard: ({ event }) => outputIs(event.output, 'incomplete'), target: 'failed', actions: assign(({ context, event }) => acceptModelOutput(context, event.output)) },
          { guard: ({ event }) => outputIs(event.output, 'stopped'), target: 'done', actions: assign(({ context, event }) => acceptModelOutput(context, event.output)) },
          { guard: ({ event }) => outputIs(event.output, 'tools'), target: 'runningTools', actions: assign(({ context, event }) => acceptModelOutput(context, event.output)) },
          {
            guard: ({ event }) => outputIs(event.output, 'toolCallsMissing'),
            target: 'failed',
            actions: [assign(({ context, event }) => acceptModelOutput(context, event.output)), { type: 'failWith', params: { code: 'model.tool_calls_missing' } }],
          },
          { target: 'done', actions: assign(({ context, event }) => acceptModelOutput(context, event.output)) },
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
                scopeUri: context.scope?.uri ?? context.input.uri,
              }
            },
            onDone: {
              target: 'nextCall',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const call = context.plannedCalls[context.answeredCalls]
                if (call?.kind !== 'run') return
                const result = fitToolOutput(context, call.id, event.output)
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
