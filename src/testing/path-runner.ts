// Runs one generated path through the real machine: scripted actors wait for the path to hand
// them their outcome, provided actors (the host's own) run for real, events from outside are sent
// when the machine rests in the state the path says. Records what a contract check needs.
import * as Effect from 'effect/Effect'
import { type AnyActorLogic, type AnyActorRef, type AnyMachineSnapshot, type AnyStateMachine, createActor, type InspectionEvent, SimulatedClock, type Snapshot, type StateValue } from 'xstate'
import { fromEffect } from '../effects/actor-bridge.ts'
import { activeStateNodes, invokedIn, keyOfTaken, type Reached } from './coverage.ts'
import { type ActorOutcomeEvent, isActorOutcome, outcomeActor } from './paths.ts'
import { createResourceTracker, describeHeld, settleEventLoop } from './resources.ts'

/** The rules `replay` checks; a violation names one. */
export type ContractRule =
  | 'follows the path'
  | 'exactly one terminal outcome'
  | 'every tool call has exactly one result'
  | 'limits honoured'
  | 'cancel releases every actor'
  | 'terminal record written once'
  | 'actor output matches the contract'

/** A broken rule, on a named path. Thrown by `replay`; no test runner needed. */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation'
  readonly path: string
  readonly rule: ContractRule
  readonly detail: string
  constructor({ path, rule, detail }: { readonly path: string; readonly rule: ContractRule; readonly detail: string }) {
    super(`${rule}: broken on path "${path}": ${detail}`)
    this.path = path
    this.rule = rule
    this.detail = detail
  }
}

// ── scripted actors wait for the path ───────────────────────────────────────────────────────

/** Scripted actors register here and wait until the path hands them their outcome. */
export class Waiters {
  private readonly waiting = new Map<string, Array<(event: ActorOutcomeEvent) => void>>()
  /** Actors interrupted while waiting (stopped by their machine), in order. */
  readonly interrupted: string[] = []

  /** Waits for the path's next outcome for `actorId`. */
  outcomeFor(actorId: string): Effect.Effect<ActorOutcomeEvent> {
    return Effect.callback<ActorOutcomeEvent>((resume) => {
      const waiter = (event: ActorOutcomeEvent) => resume(Effect.succeed(event))
      this.waiting.set(actorId, [...(this.waiting.get(actorId) ?? []), waiter])
      return Effect.sync(() => {
        this.remove(actorId, waiter)
        this.interrupted.push(actorId)
      })
    })
  }

  /** A scripted actor (through the real bridge) that reports the path's outcome: its output, or a crash. */
  actor(actorId: string): AnyActorLogic {
    return fromEffect<unknown, unknown>(() =>
      this.outcomeFor(actorId).pipe(Effect.flatMap((event) => ('error' in event ? Effect.die(event.error) : Effect.succeed(event.output)))),
    )
  }

  has(actorId: string): boolean {
    return (this.waiting.get(actorId)?.length ?? 0) > 0
  }

  resume(actorId: string, event: ActorOutcomeEvent): void {
    const [waiter, ...rest] = this.waiting.get(actorId) ?? []
    if (waiter === undefined) throw new Error(`no ${actorId} is waiting`)
    this.waiting.set(actorId, rest)
    waiter(event)
  }

  private remove(actorId: string, waiter: (event: ActorOutcomeEvent) => void): void {
    this.waiting.set(
      actorId,
      (this.waiting.get(actorId) ?? []).filter((one) => one !== waiter),
    )
  }
}

// ── the run ─────────────────────────────────────────────────────────────────────────────────

export interface RunSpec {
  readonly path: {
    readonly name: string
    readonly events: ReadonlyArray<{ readonly type: string; readonly label: string }>
    readonly states: ReadonlyArray<string>
  }
  /** The machine as exported (for its definition). */
  readonly machine: AnyStateMachine
  readonly input: unknown
  readonly waiters: Waiters
  /** The kit's actors, by id (they take their outcomes from `waiters`). */
  readonly scripted: Readonly<Record<string, AnyActorLogic>>
  /** The host's actors, by id: they replace the scripted ones and run for real. */
  readonly provided: Readonly<Record<string, AnyActorLogic>>
  readonly serialize: (snapshot: any) => string
  /** Sends an event from outside (or moves the clock). */
  readonly deliver: (args: {
    readonly actor: AnyActorRef
    readonly event: { readonly type: string }
    readonly clock: SimulatedClock
    readonly fail: (rule: ContractRule, detail: string) => never
  }) => void
  /** Ends a run whose provided actors took it off the path. */
  readonly stopEvent: { readonly type: string }
  readonly timeoutMs: number
}

export interface ActorRun {
  readonly actorId: string
  /** `actorId#n`: the n-th actor run of the replay. */
  readonly owner: string
  readonly provided: boolean
  /** Index of the path event that was next when it started. */
  readonly startedAt: number
  /** The input it was started with. */
  readonly input: unknown
  settled: boolean
  /** Its done event's output, once settled. */
  output?: unknown
  error?: unknown
}

export interface RunRecord extends Reached {
  readonly snapshot: any
  readonly observed: ReadonlyArray<string>
  /** Outcome events the machine received, in order. */
  readonly received: ReadonlyArray<{ readonly type: string; readonly output?: unknown; readonly error?: unknown }>
  readonly emitted: ReadonlyArray<{ readonly type: string } & Record<string, unknown>>
  readonly runs: ReadonlyArray<ActorRun>
  /** The most runs of one actor at once. */
  readonly maxConcurrent: Readonly<Record<string, number>>
  /** Provided runs that had not settled when the machine stopped, with what they still held. */
  readonly leaks: ReadonlyArray<{ readonly run: ActorRun; readonly held: string }>
  readonly diverged?: { readonly at: number; readonly expected: string; readonly actual: string } | undefined
  readonly interrupted: ReadonlyArray<string>
}

const valueOf = (serialized: string | undefined): string => JSON.stringify((JSON.parse(serialized ?? '{}') as { value?: unknown }).value)

export async function runPath(spec: RunSpec): Promise<RunRecord> {
  const { path, machine, waiters, provided, serialize, timeoutMs } = spec
  const events = path.events
  const strict = Object.keys(provided).length === 0
  const stateNodes = new Set<string>()
  const transitions = new Set<string>()
  const observed: string[] = []
  const received: Array<{ type: string; output?: unknown; error?: unknown }> = []
  const emitted: Array<{ type: string } & Record<string, unknown>> = []
  const runs: ActorRun[] = []
  const maxConcurrent: Record<string, number> = {}
  // async hooks cost: only runs of provided actors are followed
  const resources = strict ? undefined : createResourceTracker()
  let cursor = 0
  let diverged: RunRecord['diverged']
  let root: AnyActorRef | undefined
  const clock = new SimulatedClock()

  const violation = (rule: ContractRule, detail: string) => new ContractViolation({ path: path.name, rule, detail })
  const fail = (rule: ContractRule, detail: string): never => {
    throw violation(rule, detail)
  }
  const recordNodes = (value: StateValue) => {
    for (const id of activeStateNodes(machine, value)) stateNodes.add(id)
  }
  const stateMatches = (index: number) => {
    const now = serialize(root!.getSnapshot())
    return strict ? now === path.states[index] : valueOf(now) === valueOf(path.states[index])
  }
  const running = (actorId: string) => runs.filter((run) => run.actorId === actorId && !run.settled)

  const wrap = (actorId: string, logic: AnyActorLogic, isProvided: boolean): AnyActorLogic => ({
    ...logic,
    start: (snapshot: any, scope: any) => {
      const owner = `${actorId}#${runs.length + 1}`
      const run: ActorRun = { actorId, owner, provided: isProvided, startedAt: cursor, settled: false, input: snapshot?.input }
      runs.push(run)
      maxConcurrent[actorId] = Math.max(maxConcurrent[actorId] ?? 0, running(actorId).length)
      if (!isProvided || resources === undefined) return logic.start?.(snapshot, scope)
      resources.run(owner, () => logic.start?.(snapshot, scope))
      // The path stops the machine while this actor runs: stop it now, before the actor can finish.
      const next = events[cursor]
      if (next && !isActorOutcome(next) && invokedIn(machine, JSON.parse(path.states[cursor] ?? '{}').value).includes(actorId)) {
        cursor++
        spec.deliver({ actor: root!, event: withoutLabel(next), clock, fail })
      }
    },
  })

  const actors: Record<string, AnyActorLogic> = {}
  for (const [id, logic] of Object.entries(spec.scripted)) actors[id] = wrap(id, logic, false)
  for (const [id, logic] of Object.entries(provided)) actors[id] = wrap(id, logic, true)
  const logic = machine.provide({ actors: actors as never })

  const actor = createActor(logic, {
    input: spec.input as never,
    clock,
    inspect: (event: InspectionEvent) => {
      if (event.actorRef.sessionId !== event.rootId) return
      if (event.type === '@xstate.microstep') {
        for (const transition of event._transitions) transitions.add(keyOfTaken(transition))
        if (isMachineSnapshot(event.snapshot)) recordNodes(event.snapshot.value)
      }
      if (event.type === '@xstate.event') {
        const actorId = outcomeActor(event.event)
        if (actorId === undefined) return
        received.push(event.event)
        const run = runs.find((one) => one.actorId === actorId && !one.settled)
        if (run) {
          run.settled = true
          if ('output' in event.event) run.output = event.event.output
          if ('error' in event.event) run.error = event.event.error
          if (run.provided && outcomeActor(events[cursor] ?? { type: '' }) === actorId) cursor++
        }
      }
    },
  })
  root = actor
  actor.subscribe({
    next: (snapshot) => {
      recordNodes(snapshot.value)
      const serialized = serialize(snapshot)
      if (observed.at(-1) !== serialized) observed.push(serialized)
    },
    error: () => {},
  })
  actor.on('*', (event) => emitted.push(event as { type: string } & Record<string, unknown>))

  /** Nothing will happen until the path does something: every running actor is a scripted one, waiting. */
  const resting = () => {
    const snapshot = actor.getSnapshot()
    if (snapshot.status !== 'active') return true
    const invoked = invokedIn(machine, snapshot.value)
    return invoked.every((id) => !(id in spec.scripted) || id in provided || waiters.has(id)) && runs.every((run) => !run.provided || run.settled || !invoked.includes(run.actorId))
  }
  const until = async (ready: () => boolean, expected: () => string) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (ready()) return
      if (resting() || Date.now() > deadline) {
        await settleEventLoop(2)
        if (ready()) return
        const actual = `${serialize(actor.getSnapshot())}${actor.getSnapshot().status === 'error' ? ` (the machine crashed: ${String(actor.getSnapshot().error)})` : ''}`
        const stillRunning = runs.filter((run) => run.provided && !run.settled).map((run) => run.actorId)
        if (strict || Date.now() > deadline) {
          throw violation(
            actor.getSnapshot().status === 'active' && !resting() ? 'exactly one terminal outcome' : 'follows the path',
            !resting() && stillRunning.length > 0
              ? `${stillRunning.join(', ')} (provided) did not settle within ${timeoutMs} ms; expected ${expected()}`
              : `expected ${expected()}, the machine is at ${actual}`,
          )
        }
        diverged = { at: cursor, expected: expected(), actual }
        return
      }
      await new Promise((resolve) => setTimeout(resolve, 0))
    }
  }

  actor.start()
  try {
    while (cursor < events.length && diverged === undefined && actor.getSnapshot().status === 'active') {
      const index = cursor
      const event = events[index]!
      const actorId = outcomeActor(event)
      const expected = () => `step ${index + 1} (${event.type} ${event.label}) in ${path.states[index]}`
      if (actorId !== undefined && actorId in provided) {
        await until(() => cursor > index, expected)
      } else if (actorId !== undefined) {
        await until(() => cursor > index || (waiters.has(actorId) && stateMatches(index)), expected)
        if (diverged === undefined && cursor === index) {
          cursor++
          waiters.resume(actorId, event as ActorOutcomeEvent)
        }
      } else {
        const settledThere = () => {
          const value = JSON.parse(path.states[index] ?? '{}').value as StateValue
          return invokedIn(machine, value).every((id) => !(id in spec.scripted) || id in provided || waiters.has(id))
        }
        await until(() => cursor > index || (stateMatches(index) && settledThere()), expected)
        if (diverged === undefined && cursor === index) {
          cursor++
          spec.deliver({ actor, event: withoutLabel(event), clock, fail })
        }
      }
    }
    await until(
      () => actor.getSnapshot().status !== 'active',
      () => `the end of the path (${path.states.at(-1)})`,
    )
    if (diverged !== undefined && actor.getSnapshot().status === 'active') {
      actor.send(spec.stopEvent)
      await until(
        () => actor.getSnapshot().status !== 'active',
        () => 'the end after a stop',
      )
    }
    // A stopped actor gets a few turns of the event loop to let go of what it held.
    if (runs.some((run) => !run.settled)) await settleEventLoop()
    const leaks = runs
      .filter((run) => run.provided && !run.settled)
      .map((run) => ({ run, held: describeHeld(resources?.held(run.owner) ?? {}) }))
      .filter((leak) => leak.held !== '')
    return {
      snapshot: actor.getSnapshot(),
      observed,
      received,
      emitted,
      runs,
      maxConcurrent,
      leaks,
      diverged,
      interrupted: waiters.interrupted,
      stateNodes,
      transitions,
    }
  } finally {
    actor.stop()
    resources?.dispose()
  }
}

function isMachineSnapshot(snapshot: Snapshot<unknown>): snapshot is AnyMachineSnapshot {
  return 'value' in snapshot
}

function withoutLabel(event: { readonly type: string; readonly label: string }): { readonly type: string } {
  const { label: _label, ...rest } = event
  return rest
}
