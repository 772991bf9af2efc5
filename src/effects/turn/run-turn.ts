// The host side of a turn: provides the turn machine's actors (prepare, preStep, callModel,
// compact, runTool) from effects, runs it, forwards its runtime events, and records the outcome.
// Stopping (user, disconnect, shutdown) is one mechanism: the abort signal sends `user.stop`,
// the machine leaves its state, the running actor stops, and the bridge interrupts its Effect.
import { Effect } from 'effect'
import { createActor } from 'xstate'
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
import { chatModelTurnActors, fromEffect } from '../actor-bridge.ts'
import type { ChatModel } from '../llm/model.ts'
import type { Logger } from '../logging/logger.ts'
import { runWorkspaceTool } from '../tools/workspace-tools.ts'
import type { Db, Owner } from '../workspace/store.ts'
import { parseKbUri } from '../workspace/uri.ts'
import { prepareTurn } from './prepare-turn.ts'
import { recordTurnFinished, recordTurnStarted } from './turn-records.ts'

/** The pre-step hook (the retrieval-service catalog plugs in here in a later issue). */
export type PreStepHook = (input: PreStepInput) => Effect.Effect<PreStepOutput>
export const noPreStep: PreStepHook = (input) => Effect.succeed({ messages: input.messages })

export interface RunTurnOptions {
  readonly db: Db
  readonly caller: Owner
  readonly model: ChatModel
  readonly turnId: string
  readonly uri: string
  readonly question: string
  readonly history: ReadonlyArray<ChatMessage>
  readonly onEvent: (event: TurnEmitted) => void
  /** Aborting stops the turn; `reason` on the signal (a TurnStopReason string) is recorded. */
  readonly signal: AbortSignal
  readonly preStep?: PreStepHook | undefined
  readonly logger?: Logger | undefined
  readonly limits?: TurnInput['limits']
  /** The server instance running the turn (instance-registry.ts), recorded so a dead one's turns can be closed. */
  readonly instanceId?: string | undefined
}

export function stopReasonOf(signal: AbortSignal): TurnStopReason {
  const reason = signal.reason
  return reason === 'disconnect' || reason === 'shutdown' || reason === 'user' ? reason : 'user'
}

export async function runTurn(options: RunTurnOptions): Promise<TurnOutput> {
  const { db, caller, model, turnId } = options
  const preStep = options.preStep ?? noPreStep
  // Deltas go straight from the model stream to the listener (no machine step per delta, see
  // docs/performance.md); the text of the step in flight is kept here for a cancelled turn.
  let stepText = ''
  const emit = (event: TurnEmitted) => {
    try {
      options.onEvent(event)
    } catch (error) {
      options.logger?.warn('turn event listener failed', { turnId, error })
    }
  }
  const machine = turnMachine.provide({
    actors: {
      prepare: fromEffect<PrepareOutput, PrepareInput>(({ input }) => prepareTurn({ db, caller, input })),
      preStep: fromEffect<PreStepOutput, PreStepInput>(({ input }) => preStep(input)),
      runTool: fromEffect<RunToolOutput, RunToolInput>(({ input }) => {
        const scope = parseKbUri({ uri: input.scopeUri, callerLogin: caller.login })
        return runWorkspaceTool({ scope: { db, caller, scope }, name: input.call.name, args: input.call.arguments }).pipe(
          Effect.map(({ ok, content, summary }) => ({ ok, content, summary })),
        )
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
  const actor = createActor(machine, {
    input: {
      turnId,
      uri: options.uri,
      question: options.question,
      history: options.history,
      model: model.info,
      limits: options.limits,
    },
  })
  /** A cancelled turn reports the text of the step that was in flight (the machine never saw it). */
  const withStepText = <E extends { readonly code: string; readonly partial?: string | undefined }>(error: E): E =>
    error.code === 'cancelled' && error.partial === undefined && stepText !== '' ? { ...error, partial: stepText } : error
  const subscription = actor.on('*', (emitted) => {
    const event = emitted as TurnEmitted
    if (event.type === 'context' || event.type === 'tool') stepText = '' // a new step or a tool: nothing in flight
    emit(event.type === 'error' ? withStepText(event) : event)
  })
  const finish = (outcome: Parameters<typeof recordTurnFinished>[1]) =>
    recordTurnFinished(db, outcome).catch((error) => options.logger?.error('could not record the turn outcome', { turnId, error }))
  const running = new Promise<TurnOutput>((resolve, reject) => {
    const onAbort = () => actor.send({ type: 'user.stop', reason: stopReasonOf(options.signal) })
    actor.subscribe({
      complete: () => {
        options.signal.removeEventListener('abort', onAbort)
        resolve(actor.getSnapshot().output as TurnOutput)
      },
      error: (error) => {
        options.signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    })
    actor.start()
    if (options.signal.aborted) onAbort()
    else options.signal.addEventListener('abort', onAbort, { once: true })
  }).finally(() => {
    subscription.unsubscribe()
    actor.stop()
  })
  let output: TurnOutput
  try {
    output = await running
  } catch (error) {
    // A crashed turn is still finished in the record: never left `running`.
    await finish({ id: turnId, status: 'failed', error: { code: 'internal_error', message: 'the turn failed unexpectedly' } })
    throw error
  }
  const result: TurnOutput = output.error ? { ...output, error: withStepText(output.error) } : output
  await finish({
    id: turnId,
    status: result.status,
    finishReason: result.finishReason,
    error: result.error,
    counters: result.counters,
    usage: result.usage,
  })
  options.logger?.info('turn finished', { turnId, status: result.status, code: result.error?.code, counters: result.counters })
  return result
}
