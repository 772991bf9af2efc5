// What every generated path shares, whichever machine it belongs to.

/** What an invoked actor reports to its machine: its done or its error event. */
export type ActorOutcomeEvent =
  | { readonly type: `xstate.done.actor.${string}`; readonly output: unknown; readonly label: string }
  | { readonly type: `xstate.error.actor.${string}`; readonly error: Error; readonly label: string }

/** One path of a machine's graph: the events, in order, and the abstract state before and after each. */
export interface MachinePath<TMachine extends string, TProfile, TEvent extends { readonly type: string; readonly label: string }, TSnapshot> {
  readonly machine: TMachine
  readonly profile: TProfile
  /** e.g. `prepare(ok) → preStep(unchanged) → callModel(answer) ⇒ done` — names the path in every report. */
  readonly name: string
  /** The events, in order (the start is not one). */
  readonly events: ReadonlyArray<TEvent>
  /** The abstract (serialised) state after the start and after each event: one more than `events`. */
  readonly states: ReadonlyArray<string>
  /** The final snapshot the graph predicts (output included). */
  readonly finalState: TSnapshot
}

const OUTCOME = /^xstate\.(done|error)\.actor\.(.+)$/

/** The actor an outcome event comes from, or undefined for an event from outside. */
export function outcomeActor(event: { readonly type: string }): string | undefined {
  return OUTCOME.exec(event.type)?.[2]
}

export function isActorOutcome(event: { readonly type: string }): event is ActorOutcomeEvent {
  return OUTCOME.test(event.type)
}

export function done(actor: string, label: string, output: unknown): ActorOutcomeEvent {
  return { type: `xstate.done.actor.${actor}`, output, label }
}

export function crash(actor: string): ActorOutcomeEvent {
  return { type: `xstate.error.actor.${actor}`, error: new Error(`${actor} crashed`), label: 'crash' }
}

/** `actor(label) → … ⇒ ending`. */
export function describeEvents(events: ReadonlyArray<{ readonly type: string; readonly label: string }>, ending: string): string {
  const labels = events.map((event) => `${outcomeActor(event) ?? event.type}(${event.label})`)
  return `${labels.join(' → ')} ⇒ ${ending}`
}

/**
 * Where the host provides the running actor itself, its outcome is its own: the path keeps one
 * representative success of it (labelled `provided`) and the events from outside.
 */
export function narrowToProvided<TEvent extends { readonly type: string; readonly label: string }>(
  events: ReadonlyArray<TEvent>,
  provided: ReadonlyArray<string>,
): TEvent[] {
  const running = events.map((event) => outcomeActor(event)).find((actor) => actor !== undefined && provided.includes(actor))
  if (running === undefined) return [...events]
  const representative = events.find((event) => outcomeActor(event) === running && 'output' in event)
  return [...(representative ? [{ ...representative, label: 'provided' }] : []), ...events.filter((event) => outcomeActor(event) !== running)]
}

