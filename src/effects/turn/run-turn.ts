// The host side of a turn: provides the turn machine's actors (prepare, preStep, callModel,
// compact, runTool) from effects, runs it through the actor host, forwards its runtime events,
// and records the outcome. Stopping (user, disconnect, shutdown) is one mechanism: the abort
// signal sends `user.stop`, the machine leaves its state, the running actor stops, and the bridge
// interrupts its Effect.
//
// Deltas and tool progress go straight from the model stream / the running tool to the listener
// (no machine step per delta, see docs/performance.md); the text of the step in flight is kept
// here and handed to the machine with `user.stop`, so a cancelled turn keeps it.
import {
  turnMachine,
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
import type { ToolRegistry } from '../tools/tool-registry.ts'
import type { Db, Owner } from '../workspace/store.ts'
import { parseKbUri } from '../workspace/uri.ts'
import { chatModelTurnActors } from './model-actors.ts'
import { noPreStep, type PreStepHook } from './pre-step-hooks.ts'
import { prepareTurn } from './prepare-turn.ts'
import { recordTurnFinished, recordTurnStarted } from './turn-records.ts'

export interface RunTurnOptions {
  readonly db: Db
  readonly caller: Owner
  readonly model: ChatModel
  readonly tools: ToolRegistry
  readonly turnId: string
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  /** The client's own instructions, appended to the system prompt under a heading (never replacing it). */
  readonly preferences?: string | undefined
  readonly onEvent: (event: TurnEmitted) => void
  /** Aborting stops the turn; `reason` on the signal (a TurnStopReason string) is recorded. */
  readonly signal: AbortSignal
  readonly preStep?: PreStepHook | undefined
  readonly logger?: Logger | undefined
  readonly limits?: TurnInput['limits']
  /** The server instance running the turn (instance-registry.ts), recorded so a dead one's turns can be closed. */
  readonly instanceId?: string | undefined
}

export function stopReasonOf(reason: unknown): TurnStopReason {
  return reason === 'disconnect' || reason === 'shutdown' || reason === 'user' ? reason : 'user'
}

export async function runTurn(options: RunTurnOptions): Promise<TurnOutput> {
  const { db, caller, model, tools, turnId } = options
  const preStep = options.preStep ?? noPreStep
  let stepText = ''
  const emit = (event: TurnEmitted) => {
    try {
      options.onEvent(event)
    } catch (error) {
      options.logger?.warn('turn event listener failed', { turnId, error })
    }
  }
  const logic = turnMachine.provide({
    actors: {
      prepare: fromEffect<PrepareOutput, PrepareInput>(({ input }) => prepareTurn({ db, caller, input, toolSchemas: tools.schemas, preferences: options.preferences })),
      preStep: fromEffect<PreStepOutput, PreStepInput>(({ input }) => preStep({ caller, turnId, input })),
      runTool: fromEffect<RunToolOutput, RunToolInput>(({ input }) => {
        const { id, name, arguments: args } = input.call
        const scope = parseKbUri({ uri: input.scopeUri, callerLogin: caller.login })
        const progress = (text: string) => emit({ type: 'tool', phase: 'progress', call_id: id, name, text })
        return tools.run({ name, args, context: { db, caller, scope, progress } })
      }),
      ...chatModelTurnActors(model, {
        streamSink: (event) => {
          if (event.type === 'delta') stepText += event.text
          emit(event)
        },
      }),
    },
  })
  await recordTurnStarted(db, { id: turnId, userId: caller.id, uri: options.uri, modelId: model.info.id, instanceId: options.instanceId })
  const finish = (outcome: Parameters<typeof recordTurnFinished>[1]) =>
    recordTurnFinished(db, outcome).catch((error) => options.logger?.error('could not record the turn outcome', { turnId, error }))
  let output: TurnOutput
  try {
    output = await runActor({
      logic,
      input: { turnId, uri: options.uri, question: options.question, history: options.history, model: model.info, limits: options.limits },
      signal: options.signal,
      stopEvent: (reason) => ({ type: 'user.stop' as const, reason: stopReasonOf(reason), partial: stepText }),
      onEmitted: (event) => {
        if (event.type === 'context' || event.type === 'tool') stepText = '' // a new step or a tool: nothing in flight
        emit(event)
      },
    })
  } catch (error) {
    // A crashed turn is still finished in the record: never left `running`.
    await finish({ id: turnId, status: 'failed', error: { code: 'internal_error', message: 'the turn failed unexpectedly' } })
    throw error
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
