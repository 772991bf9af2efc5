// The host side of a turn: provides the turn machine's actors (prepare, preStep, callModel,
// compact, runTool) from effects, runs it through the actor host, forwards its runtime events,
// and records the outcome. Stopping (user, disconnect, shutdown) is one mechanism: the abort
// signal sends `user.stop`, the machine leaves its state, the running actor stops, and the bridge
// interrupts its Effect.
//
// Deltas and tool progress go straight from the model stream / the running tool to the listener
// (no machine step per delta, see docs/performance.md); the text of the step in flight is kept
// here and handed to the machine with `user.stop`, so a cancelled turn keeps it.
import type { AnyActorRef } from 'xstate'
import * as Effect from 'effect/Effect'
import {
  turnMachine,
  DEFAULT_TURN_SECONDS,
  type CallModelInput,
  type CallModelOutput,
  type CompactInput,
  type CompactOutput,
  type PreStepInput,
  type PreStepOutput,
  type PrepareInput,
  type PrepareOutput,
  type RunToolInput,
  type RunToolOutput,
  type TurnEmitted,
  type TurnInput,
  type TurnOutput,
  type TurnStopReason,
  type ChatMessage,
} from '../../machines/index.ts'
import { fromEffect } from '../actor-bridge.ts'
import { runActor } from '../actor-host.ts'
import type { ChatModel } from '../llm/model.ts'
import type { Logger } from '../logging/logger.ts'
import { NO_METRICS, type ServiceMetrics } from '../observability/metrics.ts'
import { annotateSpan, endSpan, startSpan, withSpan } from '../observability/tracing.ts'
import type { ToolRegistry } from '../tools/tool-registry.ts'
import type { WorkspaceNode } from '../workspace/store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { parseKbUri } from '../workspace/uri.ts'
import { TextBuffer } from '../llm/text-buffer.ts'
import { callModelEffect, compactEffect, type ModelStreamSink } from './model-actors.ts'
import { noPreStep, type PreStepHook } from './pre-step-hooks.ts'
import { prepareTurn } from './prepare-turn.ts'
import type { TurnFinishRecord } from './turn-event-store.ts'
import { recordTurnFinished, recordTurnStarted } from './turn-records.ts'

export interface RunTurnOptions {
  readonly db: Db
  readonly caller: Owner
  readonly model: ChatModel
  readonly tools: ToolRegistry
  readonly turnId: string
  /** The host wrote the turn's `running` row already (the stream endpoints do, at admission); otherwise `runTurn` writes it. */
  readonly recorded?: boolean | undefined
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  /** The client's own instructions, appended to the system prompt under a heading (never replacing it). */
  readonly preferences?: string | undefined
  readonly onEvent: (event: TurnEmitted) => void
  /** Aborting stops the turn; `reason` on the signal (a TurnStopReason string) is recorded. */
  readonly signal: AbortSignal
  /** The turn's wall-clock limit: past it the turn fails `limit.turn_time` (default 600 s). */
  readonly turnSeconds?: number | undefined
  readonly preStep?: PreStepHook | undefined
  readonly logger?: Logger | undefined
  readonly limits?: TurnInput['limits']
  /** The node `uri` resolved to, when the host has just resolved it (prepare then skips that query). */
  readonly scope?: WorkspaceNode | undefined
  /** The server instance running the turn (instance-registry.ts), recorded so a dead one's turns can be closed. */
  readonly instanceId?: string | undefined
  /** Counts the turn, its first delta, its tool calls and its outcome (/metrics); none by default. */
  readonly metrics?: ServiceMetrics | undefined
  /**
   * Records the outcome instead of `recordTurnFinished` (a host that writes it together with the
   * turn's terminal event: live-turns.ts). Called exactly once, before `runTurn` settles.
   */
  readonly recordOutcome?: ((outcome: TurnFinishRecord) => Promise<void>) | undefined
}

/** The abort reason of a turn's own clock (never a TurnStopReason: it fails the turn, not cancels it). */
const TURN_TIME = Symbol('turn time limit')

export function stopReasonOf(reason: unknown): TurnStopReason {
  return reason === 'disconnect' || reason === 'shutdown' || reason === 'user' || reason === 'revoked' ? reason : 'user'
}

/** What one turn's actors need from its host; found through the turn's actor system. */
interface TurnHost {
  readonly options: RunTurnOptions
  readonly preStep: PreStepHook
  readonly streamSink: ModelStreamSink
  readonly emit: (event: TurnEmitted) => void
}

const turnHosts = new WeakMap<object, TurnHost>()

function hostOf(self: AnyActorRef): TurnHost {
  const host = turnHosts.get(self.system)
  if (host === undefined) throw new Error('a turn actor ran without its host')
  return host
}

/**
 * The turn machine with the host's actors, provided once: `provide` rebuilds every state node of
 * the machine (about 0.5 ms), which 100 turns starting together would otherwise pay on the event
 * loop that carries every running stream (docs/performance.md).
 */
const hostedTurnMachine = turnMachine.provide({
  actors: {
    prepare: fromEffect<PrepareOutput, PrepareInput>(({ input, self }) => {
      const { db, caller, tools, preferences, scope } = hostOf(self).options
      return prepareTurn({ db, caller, input, toolSchemas: tools.schemas, preferences, scope })
    }, { span: 'turn.prepare' }),
    preStep: fromEffect<PreStepOutput, PreStepInput>(({ input, self }) => {
      const { preStep, options } = hostOf(self)
      return preStep({ caller: options.caller, turnId: options.turnId, input })
    }, { span: 'turn.pre_step' }),
    runTool: fromEffect<RunToolOutput, RunToolInput>(({ input, self }) => {
      const { options, emit } = hostOf(self)
      const { db, caller, tools } = options
      const { id, name, arguments: args } = input.call
      // a name the model made up is `unknown`: never a value of its choosing, in a span or a metric
      const tool = tools.get(name) === undefined ? 'unknown' : name
      annotateSpan({ 'knowagent.tool': tool, 'knowagent.turn_id': options.turnId })
      const scope = parseKbUri({ uri: input.scopeUri, callerLogin: caller.login })
      const progress = (text: string) => emit({ type: 'tool', phase: 'progress', call_id: id, name, text })
      const run = tools.run({ name, args, context: { db, caller, scope, progress } })
      const metrics = options.metrics
      if (metrics === undefined || !metrics.enabled) return run
      return Effect.tap(run, (outcome) => Effect.sync(() => metrics.toolCall(tool, outcome.ok ? 'ok' : (outcome.error?.code ?? 'error'))))
    }, { span: 'tool.call' }),
    callModel: fromEffect<CallModelOutput, CallModelInput>(({ input, self }) => {
      const { options, streamSink } = hostOf(self)
      annotateSpan({ 'knowagent.model_id': options.model.info.id, 'knowagent.turn_id': options.turnId })
      return callModelEffect({ model: options.model, input, streamSink })
    }, { span: 'model.call' }),
    compact: fromEffect<CompactOutput, CompactInput>(({ input, self }) => compactEffect({ model: hostOf(self).options.model, input }), { span: 'model.compact' }),
  },
})

export async function runTurn(options: RunTurnOptions): Promise<TurnOutput> {
  const { db, caller, model, turnId } = options
  const metrics = options.metrics ?? NO_METRICS
  const startedAt = performance.now()
  let awaitingFirstDelta = metrics.enabled
  metrics.turnStarted(model.info.id)
  const stepText = new TextBuffer()
  const emit = (event: TurnEmitted) => {
    if (awaitingFirstDelta && event.type === 'delta') {
      awaitingFirstDelta = false
      metrics.firstDelta(model.info.id, (performance.now() - startedAt) / 1000)
    }
    try {
      options.onEvent(event)
    } catch (error) {
      options.logger?.warn('turn event listener failed', { turnId, error })
    }
  }
  const host: TurnHost = {
    options,
    preStep: options.preStep ?? noPreStep,
    emit,
    streamSink: (event) => {
      if (event.type === 'delta') stepText.append(event.text)
      emit(event)
    },
  }
  // The turn's row is written while the turn prepares and calls the model (its commit waits for
  // the WAL flush: not on the path to the first delta); awaited before the outcome is recorded.
  const recorded = options.recorded
    ? Promise.resolve()
    : recordTurnStarted(db, { id: turnId, userId: caller.id, uri: options.uri, modelId: model.info.id, instanceId: options.instanceId })
  const notRecorded = new AbortController()
  // A provider's keep-alive chunks reset the stream's idle timeout for ever: only this ends such a turn.
  const turnSeconds = options.turnSeconds ?? DEFAULT_TURN_SECONDS
  const overTime = new AbortController()
  const clock = setTimeout(() => overTime.abort(TURN_TIME), turnSeconds * 1000)
  const record = options.recordOutcome ?? ((outcome: TurnFinishRecord) => recordTurnFinished(db, outcome).then(() => undefined))
  const finish = (outcome: TurnFinishRecord) => record(outcome).catch((error) => options.logger?.error('could not record the turn outcome', { turnId, error }))
  const span = startSpan('turn', { 'knowagent.turn_id': turnId, 'knowagent.model_id': model.info.id })
  const running = withSpan(span, () => runActor({
    logic: hostedTurnMachine,
    input: { turnId, uri: options.uri, question: options.question, history: options.history, model: model.info, limits: options.limits },
    signal: AbortSignal.any([options.signal, notRecorded.signal, overTime.signal]),
    beforeStart: (actor) => void turnHosts.set(actor.system, host),
    stopEvent: (reason) =>
      reason === TURN_TIME
        ? { type: 'limit.turn_time' as const, seconds: turnSeconds, partial: stepText.toString() }
        : { type: 'user.stop' as const, reason: stopReasonOf(reason), partial: stepText.toString() },
    onEmitted: (event) => {
      if (event.type === 'context' || event.type === 'tool') stepText.clear() // a new step or a tool: nothing in flight
      emit(event)
    },
  }))
  void running.then(
    (output) => {
      span?.setAttribute('knowagent.turn_status', output.status)
      endSpan(span, output.status === 'failed' ? output.error?.code : undefined)
    },
    () => endSpan(span, 'internal_error'),
  )
  running.catch(() => undefined) // observed below, once the row is written
  void running.finally(() => clearTimeout(clock)).catch(() => undefined)
  try {
    await recorded
  } catch (error) {
    // Not recorded, not run: stop the turn and fail as a crash would (there is no row to finish).
    notRecorded.abort('shutdown')
    await running.catch(() => undefined)
    throw error
  }
  let output: TurnOutput
  try {
    output = await running
  } catch (error) {
    // A crashed turn is still finished in the record: never left `running`.
    await finish({ id: turnId, status: 'failed', error: { code: 'internal_error', message: 'the turn failed unexpectedly' } })
    metrics.turnEnded({ model: model.info.id, outcome: 'failed', code: 'internal_error', seconds: (performance.now() - startedAt) / 1000, modelSteps: 0, toolCalls: 0 })
    throw error
  }
  if (metrics.enabled) {
    const { counters } = output
    const code = output.status === 'cancelled' ? stopReasonOf(options.signal.reason) : output.error?.code
    for (let i = 0; i < counters.compactions; i++) metrics.compaction(model.info.id)
    metrics.turnEnded({ model: model.info.id, outcome: output.status, code, seconds: (performance.now() - startedAt) / 1000, modelSteps: counters.modelSteps, toolCalls: counters.toolCalls })
  }
  await finish({
    id: turnId,
    status: output.status,
    finishReason: output.finishReason,
    error: output.error,
    counters: output.counters,
    usage: output.usage,
  })
  options.logger?.info('turn finished', { turnId, status: output.status, code: output.error?.code, counters: output.counters })
  return output
}
