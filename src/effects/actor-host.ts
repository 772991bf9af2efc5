// Runs one machine to its end with the actors the host provided: forwards the runtime events it
// emits, turns an abort of the caller's signal into the machine's own stop event (so it ends in
// its cancelled state with output, rather than being torn down without one), resolves with its
// output, and always stops the actor — which stops any child still running and, through the
// bridge, interrupts its Effect. The turn, the compile job and the catalog refresh all run here.
import { type AnyStateMachine, createActor, type EmittedFrom, type EventFromLogic, type InputFrom, type OutputFrom, toPromise } from 'xstate'

export interface RunActorOptions<TLogic extends AnyStateMachine> {
  readonly logic: TLogic
  readonly input: InputFrom<TLogic>
  /** Aborting it sends `stopEvent(signal.reason)`; the machine decides how to end. */
  readonly signal: AbortSignal
  readonly stopEvent: (reason: unknown) => EventFromLogic<TLogic>
  /** Every emitted event, in order. A throwing listener is reported to `onListenerError`, never to the machine. */
  readonly onEmitted?: ((event: EmittedFrom<TLogic>) => void) | undefined
  readonly onListenerError?: ((error: unknown) => void) | undefined
}

export async function runActor<TLogic extends AnyStateMachine>(options: RunActorOptions<TLogic>): Promise<OutputFrom<TLogic>> {
  const { logic, input, signal, stopEvent, onEmitted, onListenerError } = options
  const actor = createActor(logic, { input })
  const subscription = onEmitted
    ? actor.on('*', (event) => {
        try {
          onEmitted(event as EmittedFrom<TLogic>)
        } catch (error) {
          onListenerError?.(error)
        }
      })
    : undefined
  const onAbort = () => actor.send(stopEvent(signal.reason))
  try {
    const finished = toPromise(actor)
    actor.start()
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    return (await finished) as OutputFrom<TLogic>
  } finally {
    signal.removeEventListener('abort', onAbort)
    subscription?.unsubscribe()
    actor.stop()
  }
}
