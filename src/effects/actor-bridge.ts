// The one place where an Effect becomes an XState actor. The actor's AbortSignal is handed to
// the Effect runtime, so stopping the actor (or its parent leaving the invoking state)
// interrupts the Effect: finalizers run, fetches abort, child processes are killed.
//
// Expected failures are data: the caller maps them into the actor's output (the Effect's error
// channel should be `never`). What reaches `onError` is a crash: a defect, an unmapped failure,
// or an interruption not caused by stopping the actor.
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { type AnyActorRef, fromPromise, type PromiseActorLogic } from 'xstate'
import { traced } from './observability/tracing.ts'

export interface EffectActorArgs<TInput> {
  readonly input: TInput
  /** The actor running the Effect. */
  readonly self: AnyActorRef
  /** Aborted when the actor stops; the Effect is interrupted at the same moment. */
  readonly signal: AbortSignal
}

/** The Effect failed with an error its caller did not map to data. */
export class EffectActorFailure extends Error {
  override readonly name = 'EffectActorFailure'
  override readonly cause: Cause.Cause<unknown>
  constructor(cause: Cause.Cause<unknown>) {
    super(`effect failed: ${Cause.pretty(cause)}`)
    this.cause = cause
  }
}

/** The Effect was interrupted although the actor was not stopped. */
export class EffectActorInterrupted extends Error {
  override readonly name = 'EffectActorInterrupted'
  constructor() {
    super('effect interrupted')
  }
}

/**
 * `span` names the trace span each run of the actor gets when tracing is on (tracing.ts), under the
 * span current when the machine invoked it (the turn's, the compile job's); default: the actor's
 * `src` (its key in the machine's `actors`).
 */
export function fromEffect<TOutput, TInput, E = never>(
  makeEffect: (args: EffectActorArgs<TInput>) => Effect.Effect<TOutput, E, never>,
  { span }: { readonly span?: string | undefined } = {},
): PromiseActorLogic<TOutput, TInput> {
  return fromPromise<TOutput, TInput>(async ({ input, self, signal }) => {
    if (signal.aborted) throw new EffectActorInterrupted()
    const effect = Effect.suspend(() => makeEffect({ input, self, signal }))
    const exit = await traced(span ?? (typeof self.src === 'string' ? self.src : 'actor'), {}, async () => {
      const exit = await Effect.runPromiseExit(effect, { signal })
      if (Exit.isSuccess(exit)) return exit
      throw rejectionFor(exit.cause)
    })
    return exit.value
  })
}

function rejectionFor(cause: Cause.Cause<unknown>): unknown {
  if (Cause.hasInterruptsOnly(cause)) return new EffectActorInterrupted()
  if (Cause.hasDies(cause)) return Cause.squash(cause)
  return new EffectActorFailure(cause)
}
