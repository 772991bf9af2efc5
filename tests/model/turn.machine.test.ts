// Model-based tests of the turn machine: simple paths of its graph (per input profile, see
// turn-graph.ts) are replayed against the real machine, the real bridge (`fromEffect`) and the
// real model adapter, with a scripted model and scripted tools that report, in order, the
// outcomes the path prescribes. Every replay must pass through exactly the path's states, and
// together the replays must visit every state node and every transition of the machine.
import { Effect } from 'effect'
import { describe, expect, it } from 'vitest'
import { getStateNodes as getAllStateNodes } from '@xstate/graph'
import { type AnyStateNode, type AnyTransitionDefinition, createActor, getStateNodes, type InspectionEvent } from 'xstate'
import type { ModelRequest } from '../../src/effects/llm/model.ts'
import { modelErrorToCallOutput } from '../../src/effects/turn/model-actors.ts'
import {
  type CallModelOutput,
  type CompactOutput,
  type TurnEmitted,
  isCompactionRequest,
  toolPairingProblems,
  turnMachine,
} from '../../src/machines/index.ts'
import {
  createInterruptionTracker,
  createScriptedModel,
  createScriptedTurnActors,
  type ScriptedModelStep,
  textResult,
} from '../support/scripted-model.ts'
import {
  type GraphEvent,
  type GraphPath,
  INCOMPLETE_ERROR,
  type OutcomeEvent,
  type Profile,
  PROFILES,
  serializeTurnState,
  type TurnSnapshot,
  turnPaths,
} from './turn-graph.ts'

// ── what the machine definition holds ────────────────────────────────────────────────────

function transitionKey({ source, eventType, index }: { source: AnyStateNode; eventType: string; index: number }): string {
  return `${source.id} —${eventType || '(always)'}#${index}`
}

function keyOfTaken(transition: AnyTransitionDefinition): string {
  const source = transition.source
  const list = transition.eventType === '' ? (source.always ?? []) : (source.transitions.get(transition.eventType) ?? [])
  return transitionKey({ source, eventType: transition.eventType, index: list.indexOf(transition) })
}

function definedStateNodes(): string[] {
  return [turnMachine.root, ...getAllStateNodes(turnMachine.root)].map((node) => node.id)
}

function definedTransitions(): string[] {
  return [turnMachine.root, ...getAllStateNodes(turnMachine.root)].flatMap((source) => [
    ...[...source.transitions.entries()].flatMap(([eventType, list]) => list.map((_, index) => transitionKey({ source, eventType, index }))),
    ...(source.always ?? []).map((_, index) => transitionKey({ source, eventType: '', index })),
  ])
}

const visitedStateNodes = new Set<string>()
const takenTransitions = new Set<string>()
let replayedPaths = 0

// ── replay ───────────────────────────────────────────────────────────────────────────────

type Outcome = { kind: 'done'; output: unknown } | { kind: 'crash'; error: Error } | { kind: 'hang' }

/** The scripted Effect (tracker name) running in each resting state, by state value. */
const RUNNING_EFFECT: Record<string, string> = {
  '"preparing"': 'prepare',
  '"preStep"': 'preStep',
  '"compacting"': 'model',
  '"callingModel"': 'model',
  '{"runningTools":"executing"}': 'runTool',
}

function effectStoppedBy(path: GraphPath): string | undefined {
  if (path.events.at(-1)?.type !== 'user.stop') return undefined
  const before = JSON.parse(path.states.at(-2)!) as { value: unknown }
  return RUNNING_EFFECT[JSON.stringify(before.value)]
}

function describePath(path: GraphPath): string {
  const labels = path.events.map((event) => `${event.type.replace(/^xstate\.(done|error)\.actor\./, '')}(${event.label})`)
  const output = path.finalState.output
  return `${labels.join(' → ')} ⇒ ${output?.status}${output?.error ? ` ${output.error.code}` : ''}`
}

async function waitUntil(condition: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 2_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
}

function modelStepFor({ actorId, outcome }: { actorId: 'callModel' | 'compact'; outcome: Outcome }): ScriptedModelStep {
  if (outcome.kind === 'hang') return { kind: 'hang', deltas: actorId === 'callModel' ? ['Partial'] : [] }
  if (outcome.kind === 'crash') return { kind: 'defect', defect: outcome.error }
  if (actorId === 'callModel') {
    const output = outcome.output as CallModelOutput
    if (output.ok) return { kind: 'result', thinking: ['Looking…'], deltas: ['Streamed'], result: output.result }
    expect(output).toEqual(modelErrorToCallOutput(INCOMPLETE_ERROR))
    return { kind: 'error', deltas: ['Partial answer'], error: INCOMPLETE_ERROR }
  }
  const output = outcome.output as CompactOutput
  if (output.ok) return { kind: 'result', result: textResult(output.summary) }
  return { kind: 'error', error: INCOMPLETE_ERROR }
}

async function replay({ profile, path }: { profile: Profile; path: GraphPath }) {
  const events = path.events
  let cursor = 0
  let hangingAt = -1
  const takeOutcome = (actorId: string): Outcome => {
    const next = events[cursor]
    if (next?.type === `xstate.done.actor.${actorId}`) {
      cursor++
      return { kind: 'done', output: (next as Extract<OutcomeEvent, { output: unknown }>).output }
    }
    if (next?.type === `xstate.error.actor.${actorId}`) {
      cursor++
      return { kind: 'crash', error: (next as Extract<OutcomeEvent, { error: Error }>).error }
    }
    hangingAt = cursor
    return { kind: 'hang' }
  }
  const run = <A>(actorId: string, ifDone?: (output: unknown) => A): Effect.Effect<A> =>
    Effect.suspend(() => {
      const outcome = takeOutcome(actorId)
      if (outcome.kind === 'crash') return Effect.die(outcome.error)
      if (outcome.kind === 'hang') return Effect.never
      return Effect.succeed(ifDone ? ifDone(outcome.output) : (outcome.output as A))
    })

  const tracker = createInterruptionTracker()
  const model = createScriptedModel({
    tracker,
    script: (request: ModelRequest) => {
      const actorId = isCompactionRequest(request.messages) ? 'compact' : 'callModel'
      return modelStepFor({ actorId, outcome: takeOutcome(actorId) })
    },
  })
  const actors = createScriptedTurnActors({
    model,
    tracker,
    prepare: () => run('prepare'),
    // "unchanged": the hook hands back what it was given (of this run, not of the graph's sample)
    preStep: () => run('preStep', () => ({})),
    runTool: () => run('runTool'),
  })
  const machine = turnMachine.provide({ actors })

  const observed: string[] = []
  const outcomes: Array<{ type: string; output?: unknown; error?: unknown }> = []
  const emitted: TurnEmitted[] = []
  const actor = createActor(machine, {
    input: profile.input,
    inspect: (event: InspectionEvent) => {
      if (event.actorRef.sessionId !== event.rootId) return // the turn itself, not its children
      if (event.type === '@xstate.microstep') {
        for (const transition of event._transitions) takenTransitions.add(keyOfTaken(transition))
        recordStateNodes(event.snapshot as TurnSnapshot)
      }
      if (event.type === '@xstate.event' && /^xstate\.(done|error)\.actor\./.test(event.event.type)) outcomes.push(event.event)
    },
  })
  const serialize = (snapshot: TurnSnapshot) => serializeTurnState(snapshot, profile.detail)
  actor.subscribe({
    next: (snapshot) => {
      recordStateNodes(snapshot)
      const serialized = serialize(snapshot)
      if (observed.at(-1) !== serialized) observed.push(serialized)
    },
    error: () => {},
  })
  actor.on('*', (event) => emitted.push(event))
  actor.start()

  for (const [index, event] of events.entries()) {
    if (event.type !== 'user.stop') continue
    await waitUntil(
      () => hangingAt === index && serialize(actor.getSnapshot()) === path.states[index],
      () => `the state before step ${index + 1} (${path.states[index]}), at ${serialize(actor.getSnapshot())}`,
    )
    cursor++
    actor.send({ type: 'user.stop' })
  }
  await waitUntil(
    () => actor.getSnapshot().status === 'done',
    () => `the end of the path, at ${serialize(actor.getSnapshot())}`,
  )

  expect(observed).toEqual(path.states)
  expect(cursor).toBe(events.length)
  expectSameOutcomes({ actual: outcomes, expected: events })
  const output = actor.getSnapshot().output!
  expect(output.status).toBe(path.finalState.output?.status)
  expect(output.error?.code).toBe(path.finalState.output?.error?.code)
  expect(toolPairingProblems(output.messages)).toEqual([])

  const terminal = emitted.filter((event) => event.type === 'done' || event.type === 'error')
  expect(terminal).toHaveLength(1)
  expect(emitted.at(-1)).toBe(terminal[0])

  const stoppedIn = effectStoppedBy(path)
  if (events.at(-1)?.type === 'user.stop') {
    expect(Object.values(RUNNING_EFFECT)).toContain(stoppedIn)
    await waitUntil(() => tracker.interrupted.length > 0, () => `the interruption of ${stoppedIn}`)
    expect(tracker.interrupted).toEqual([stoppedIn])
  } else {
    expect(tracker.interrupted).toEqual([])
  }
  replayedPaths++
}

function recordStateNodes(snapshot: TurnSnapshot) {
  for (const node of getStateNodes(turnMachine.root, snapshot.value)) visitedStateNodes.add(node.id)
}

function expectSameOutcomes({ actual, expected }: { actual: ReadonlyArray<{ type: string; output?: unknown; error?: unknown }>; expected: ReadonlyArray<GraphEvent> }) {
  const wanted = expected.filter((event): event is OutcomeEvent => event.type !== 'user.stop')
  expect(actual.map((event) => event.type)).toEqual(wanted.map((event) => event.type))
  wanted.forEach((event, index) => {
    const got = actual[index]!
    if ('error' in event) expect((got.error as Error).message).toBe(event.error.message)
    else if (event.type !== 'xstate.done.actor.preStep') expect(got.output).toEqual(event.output)
  })
}

// ── the tests ────────────────────────────────────────────────────────────────────────────

describe.each(PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = turnPaths(profile)

  it('has paths to a final state', () => {
    expect(paths.length).toBeGreaterThan(0)
  })

  it.each(paths.map((path) => [describePath(path), path] as const))('%s', async (_, path) => {
    await replay({ profile, path })
  })
})

describe('coverage of the machine definition', () => {
  it('visits every state node', () => {
    expect(replayedPaths).toBeGreaterThan(0)
    expect(definedStateNodes().filter((id) => !visitedStateNodes.has(id))).toEqual([])
  })

  it('takes every transition', () => {
    const defined = definedTransitions()
    expect(defined.length).toBeGreaterThan(30)
    expect(defined.filter((key) => !takenTransitions.has(key))).toEqual([])
  })
})
