// Model-based tests of the compile job machine: simple paths of its graph (per input profile, see
// compile-job-graph.ts) are replayed against the real machine and the real bridge (`fromEffect`),
// with scripted actors that report, in order, the outcomes the path prescribes, and a simulated
// clock for the attempt's timeout. Every replay must pass through exactly the path's states, and
// together the replays must visit every state node and take every transition of the machine.
import { Effect } from 'effect'
import { describe, expect, it } from 'vitest'
import { getStateNodes as getAllStateNodes } from '@xstate/graph'
import { type AnyStateNode, type AnyTransitionDefinition, createActor, getStateNodes, type InspectionEvent, SimulatedClock } from 'xstate'
import { fromEffect } from '../../src/effects/actor-bridge.ts'
import { type CompileJobEmitted, compileJobMachine } from '../../src/machines/index.ts'
import { createInterruptionTracker, tracked } from '../support/scripted-model.ts'
import {
  type CompileSnapshot,
  compilePaths,
  type ExternalEvent,
  type GraphEvent,
  type GraphPath,
  type OutcomeEvent,
  type Profile,
  PROFILES,
  serializeCompileState,
  TIMEOUT_EVENT,
} from './compile-job-graph.ts'

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
  return [compileJobMachine.root, ...getAllStateNodes(compileJobMachine.root)].map((node) => node.id)
}

function definedTransitions(): string[] {
  return [compileJobMachine.root, ...getAllStateNodes(compileJobMachine.root)].flatMap((source) => [
    ...[...source.transitions.entries()].flatMap(([eventType, list]) => list.map((_, index) => transitionKey({ source, eventType, index }))),
    ...(source.always ?? []).map((_, index) => transitionKey({ source, eventType: '', index })),
  ])
}

const visitedStateNodes = new Set<string>()
const takenTransitions = new Set<string>()
let replayedPaths = 0

// ── replay ───────────────────────────────────────────────────────────────────────────────

const isExternal = (event: GraphEvent): event is ExternalEvent => !/^xstate\.(done|error)\.actor\./.test(event.type)

/** The scripted Effect running in each resting state, by state value. */
const RUNNING_ACTOR: Record<string, string> = {
  '"queued"': 'begin',
  '{"running":"parsing"}': 'parse',
  '{"running":{"summarising":"file"}}': 'summarise',
  '{"running":"overview"}': 'overview',
  '{"running":"abstract"}': 'abstract',
}

function describePath(path: GraphPath): string {
  const labels = path.events.map((event) => `${event.type.replace(/^xstate\.(done|error)\.actor\./, '').replace(TIMEOUT_EVENT, 'after')}(${event.label})`)
  const output = path.finalState.output
  return `${labels.join(' → ')} ⇒ ${output?.status}${output && 'failure' in output ? ` ${output.failure.code}` : ''}`
}

async function waitUntil(condition: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 2_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
}

async function replay({ profile, path }: { profile: Profile; path: GraphPath }) {
  const events = path.events
  let cursor = 0
  let hangingAt = -1
  const tracker = createInterruptionTracker()
  const scripted = (actorId: string) =>
    fromEffect<unknown, unknown>(() =>
      tracked({
        tracker,
        name: actorId,
        effect: Effect.suspend(() => {
          const next = events[cursor]
          if (next?.type === `xstate.done.actor.${actorId}`) {
            cursor++
            return Effect.succeed((next as Extract<OutcomeEvent, { output: unknown }>).output)
          }
          if (next?.type === `xstate.error.actor.${actorId}`) {
            cursor++
            return Effect.die((next as Extract<OutcomeEvent, { error: Error }>).error)
          }
          hangingAt = cursor
          return Effect.never
        }),
      }),
    )
  const machine = compileJobMachine.provide({
    actors: {
      begin: scripted('begin') as never,
      parse: scripted('parse') as never,
      summarise: scripted('summarise') as never,
      overview: scripted('overview') as never,
      abstract: scripted('abstract') as never,
      publish: scripted('publish') as never,
    },
  })

  const clock = new SimulatedClock()
  const observed: string[] = []
  const outcomes: Array<{ type: string; output?: unknown; error?: unknown }> = []
  const emitted: CompileJobEmitted[] = []
  const actor = createActor(machine, {
    input: profile.input,
    clock,
    inspect: (event: InspectionEvent) => {
      if (event.actorRef.sessionId !== event.rootId) return
      if (event.type === '@xstate.microstep') {
        for (const transition of event._transitions) takenTransitions.add(keyOfTaken(transition))
        recordStateNodes(event.snapshot as CompileSnapshot)
      }
      if (event.type === '@xstate.event' && /^xstate\.(done|error)\.actor\./.test(event.event.type)) outcomes.push(event.event)
    },
  })
  actor.subscribe({
    next: (snapshot) => {
      recordStateNodes(snapshot)
      const serialized = serializeCompileState(snapshot)
      if (observed.at(-1) !== serialized) observed.push(serialized)
    },
    error: () => {},
  })
  actor.on('progress', (event) => emitted.push(event))
  actor.start()

  for (const [index, event] of events.entries()) {
    if (!isExternal(event)) continue
    await waitUntil(
      () => hangingAt === index && serializeCompileState(actor.getSnapshot()) === path.states[index],
      () => `the state before step ${index + 1} (${path.states[index]}), at ${serializeCompileState(actor.getSnapshot())}`,
    )
    cursor++
    if (event.type === TIMEOUT_EVENT) {
      clock.increment(profile.input.timeoutMs - 1)
      expect(serializeCompileState(actor.getSnapshot())).toBe(path.states[index]) // not a moment early
      clock.increment(1)
    } else if (event.type === 'job.interrupt') {
      actor.send({ type: 'job.interrupt', reason: event.reason })
    } else {
      actor.send({ type: 'job.cancel' })
    }
  }
  await waitUntil(
    () => actor.getSnapshot().status === 'done',
    () => `the end of the path, at ${serializeCompileState(actor.getSnapshot())}`,
  )

  expect(observed).toEqual(path.states)
  expect(cursor).toBe(events.length)
  expectSameOutcomes({ actual: outcomes, expected: events })
  const output = actor.getSnapshot().output!
  const expected = path.finalState.output!
  expect(output.status).toBe(expected.status)
  expect('failure' in output ? output.failure.code : undefined).toBe('failure' in expected ? expected.failure.code : undefined)
  expect(output.progress.callsUsed).toBeLessThanOrEqual(profile.input.callBudget)
  // every emitted progress names the stage the machine was in, and files and calls only grow
  for (const [index, event] of emitted.entries()) {
    const before = emitted[index - 1]
    if (before) {
      expect(event.filesDone).toBeGreaterThanOrEqual(before.filesDone)
      expect(event.callsUsed).toBeGreaterThanOrEqual(before.callsUsed)
    }
  }
  expect(emitted.at(-1)?.stage ?? 'queued').toBe(output.progress.stage)

  const last = events.at(-1)
  if (last && isExternal(last)) {
    const before = JSON.parse(path.states.at(-2)!) as { value: unknown }
    const stoppedActor = RUNNING_ACTOR[JSON.stringify(before.value)]
    expect(stoppedActor).toBeDefined()
    await waitUntil(() => tracker.interrupted.length > 0, () => `the interruption of ${stoppedActor}`)
    expect(tracker.interrupted).toEqual([stoppedActor])
  } else {
    expect(tracker.interrupted).toEqual([])
  }
  replayedPaths++
}

function recordStateNodes(snapshot: CompileSnapshot) {
  for (const node of getStateNodes(compileJobMachine.root, snapshot.value)) visitedStateNodes.add(node.id)
}

function expectSameOutcomes({ actual, expected }: { actual: ReadonlyArray<{ type: string; output?: unknown; error?: unknown }>; expected: ReadonlyArray<GraphEvent> }) {
  const wanted = expected.filter((event): event is OutcomeEvent => !isExternal(event))
  expect(actual.map((event) => event.type)).toEqual(wanted.map((event) => event.type))
  wanted.forEach((event, index) => {
    const got = actual[index]!
    if ('error' in event) expect((got.error as Error).message).toBe(event.error.message)
    else expect(got.output).toEqual(event.output)
  })
}

// ── the tests ────────────────────────────────────────────────────────────────────────────

describe.each(PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = compilePaths(profile)

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
