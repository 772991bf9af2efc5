// Runs a machine to its output with its provided actors: forwards emitted events, sends
// `stopEvent` when `signal` aborts, always stops the actor. The same shape as the house's actor
// host (src/effects/actor-host.ts `runActor`, issue 9); this file goes once that lands.
import { type AnyStateMachine, createActor, type EmittedFrom, type EventFrom, type InputFrom, type OutputFrom, toPromise } from 'xstate'

export async function runActor<TLogic extends AnyStateMachine>(args: {
  readonly logic: TLogic
  readonly input: InputFrom<TLogic>
  readonly signal: AbortSignal
  readonly stopEvent: (reason: unknown) => EventFrom<TLogic>
  readonly onEmitted?: (event: EmittedFrom<TLogic>) => void
}): Promise<OutputFrom<TLogic>> {
  const actor = createActor(args.logic, { input: args.input })
  if (args.onEmitted) actor.on('*', (event) => args.onEmitted!(event as EmittedFrom<TLogic>))
  const onAbort = () => actor.send(args.stopEvent(args.signal.reason))
  try {
    actor.start()
    if (args.signal.aborted) onAbort()
    else args.signal.addEventListener('abort', onAbort, { once: true })
    return (await toPromise(actor)) as OutputFrom<TLogic>
  } finally {
    args.signal.removeEventListener('abort', onAbort)
    actor.stop()
  }
}
