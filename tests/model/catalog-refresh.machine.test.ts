// Model-based tests of the catalog refresh machine: simple paths of its graph (per input profile,
// see catalog-refresh-graph.ts) are replayed against the real machine and the real bridge
// (`fromEffect`), with a fetch Effect that reports, in order, the outcomes the path prescribes.
// Every replay must pass through exactly the path's states, a stop during a fetch must interrupt
// its Effect, and together the replays must visit every state node and take every transition.
import { Effect } from 'effect'
import { getStateNodes as getAllStateNodes } from '@xstate/graph'
import { type AnyStateNode, type AnyTransitionDefinition, createActor, fromCallback, fromPromise, getStateNodes, type InspectionEvent } from 'xstate'
import { runActor } from '../../src/effects/actor-host.ts'
import { describe, expect, it } from 'vitest'
import { fromEffect } from '../../src/effects/actor-bridge.ts'
import {
  type CatalogRefreshEmitted,
  type CatalogRefreshEvent,
  catalogRefreshMachine,
  type FetchCatalogInput,
  type FetchCatalogOutput,
} from '../../src/machines/index.ts'
import { createInterruptionTracker, tracked } from '../support/scripted-model.ts'
import { waitUntil } from '../support/wait-until.ts'
import { type GraphEvent, type GraphPath, type Profile, PROFILES, type RefreshSnapshot, refreshPaths, serializeRefreshState } from './catalog-refresh-graph.ts'

// ── what the machine definition holds ────────────────────────────────────────────────────

function transitionKey({ source, eventType, index }: { source: AnyStateNode; eventType: string; index: number }): string {
  return `${source.id} —${eventType || '(always)'}#${index}`
}

function keyOfTaken(transition: AnyTransitionDefinition): string {
  const source = transition.source
  const list = transition.eventType === '' ? (source.always ?? []) : (source.transitions.get(transition.eventType) ?? [])
  return transitionKey({ source, eventType: transition.eventType, index: list.indexOf(transition) })
}

const allNodes = () => [catalogRefreshMachine.root, ...getAllStateNodes(catalogRefreshMachine.root)]
const definedStateNodes = () => allNodes().map((node) => node.id)
const definedTransitions = () =>
  allNodes().flatMap((source) => [
    ...[...source.transitions.entries()].flatMap(([eventType, list]) => list.map((_, index) => transitionKey({ source, eventType, index }))),
    ...(source.always ?? []).map((_, index) => transitionKey({ source, eventType: '', index })),
  ])

const visitedStateNodes = new Set<string>()
const takenTransitions = new Set<string>()
let replayedPaths = 0

// ── replay ───────────────────────────────────────────────────────────────────────────────

const isOutcome = (event: GraphEvent) => event.type.startsWith('xstate.')

function describePath(path: GraphPath): string {
  return path.events.map((event) => `${event.type.replace(/^xstate\.(done|error)\.actor\.fetchCatalog$/, 'fetch')}(${event.label})`).join(' → ')
}

async function replay({ profile, path }: { profile: Profile; path: GraphPath }) {
  const waiting: Array<{ input: FetchCatalogInput; resume: (effect: Effect.Effect<FetchCatalogOutput>) => void }> = []
  const tracker = createInterruptionTracker()
  const fetchCatalog = fromEffect<FetchCatalogOutput, FetchCatalogInput>(({ input }) =>
    tracked({
      tracker,
      name: 'fetchCatalog',
      effect: Effect.callback<FetchCatalogOutput>((resume) => {
        waiting.push({ input, resume })
      }),
    }),
  )
  const machine = catalogRefreshMachine.provide({ actors: { fetchCatalog } })
  const observed: string[] = []
  const emitted: CatalogRefreshEmitted[] = []
  const record = (snapshot: RefreshSnapshot) => {
    for (const node of getStateNodes(catalogRefreshMachine.root, snapshot.value)) visitedStateNodes.add(node.id)
  }
  const actor = createActor(machine, {
    input: profile.input,
    inspect: (event: InspectionEvent) => {
      if (event.actorRef.sessionId !== event.rootId) return
      if (event.type === '@xstate.microstep') {
        for (const transition of event._transitions) takenTransitions.add(keyOfTaken(transition))
        record(event.snapshot as RefreshSnapshot)
      }
    },
  })
  actor.subscribe({
    next: (snapshot) => {
      record(snapshot)
      const serialized = serializeRefreshState(snapshot)
      if (observed.at(-1) !== serialized) observed.push(serialized)
    },
    error: () => {},
  })
  actor.on('*', (event) => emitted.push(event))
  actor.start()

  for (const [index, event] of path.events.entries()) {
    await waitUntil(
      () => serializeRefreshState(actor.getSnapshot()) === path.states[index] && (!isOutcome(event) || waiting.length > 0),
      `the state before step ${index + 1} (${path.states[index]}), at ${serializeRefreshState(actor.getSnapshot())}`,
      { timeoutMs: 2_000 },
    )
    if (isOutcome(event)) {
      const fetch = waiting.shift()!
      expect(fetch.input.workspaceId).toBe(profile.input.workspaceId)
      if ('output' in event) fetch.resume(Effect.succeed(event.output))
      else if ('error' in event) fetch.resume(Effect.die(event.error))
    } else {
      const { label: _label, ...machineEvent } = event as CatalogRefreshEvent & { label: string }
      actor.send(machineEvent)
    }
  }
  await waitUntil(() => actor.getSnapshot().status === 'done', 'the end of the path', { timeoutMs: 2_000 })

  expect(observed).toEqual(path.states)
  const started = emitted.filter((event) => event.type === 'refresh.started')
  const settled = emitted.filter((event) => event.type === 'refresh.settled')
  const stoppedWhileFetching = JSON.parse(path.states.at(-2) ?? '{}').value === 'refreshing'
  expect(settled.map((event) => event.generation)).toEqual(started.map((event) => event.generation).slice(0, started.length - (stoppedWhileFetching ? 1 : 0)))
  // Every acknowledged trigger is answered by the fetch it was promised, unless the stop came first.
  const settledGenerations = new Set(settled.map((event) => event.generation))
  const lastStarted = started.at(-1)?.generation ?? 0
  for (const accepted of emitted.filter((event) => event.type === 'refresh.accepted')) {
    if (!settledGenerations.has(accepted.generation)) expect(accepted.generation).toBeGreaterThanOrEqual(lastStarted)
  }
  const failures = path.events.filter((event) => event.label === 'failed' || event.label === 'crash').length
  expect(settled.filter((event) => !event.ok)).toHaveLength(failures)
  if (stoppedWhileFetching) {
    await waitUntil(() => tracker.interrupted.length > 0, 'the interruption of the running fetch')
    expect(tracker.interrupted).toEqual(['fetchCatalog'])
  } else {
    expect(tracker.interrupted).toEqual([])
  }
  replayedPaths++
}

// ── the tests ────────────────────────────────────────────────────────────────────────────

describe.each(PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = refreshPaths(profile)

  it('has paths to the final state', () => {
    expect(paths.length).toBeGreaterThan(0)
  })

  it.each(paths.map((path) => [describePath(path), path] as const))('%s', async (_, path) => {
    await replay({ profile, path })
  })
})

describe('under the actor host', () => {
  it('runs under the actor host: events arrive through the triggers actor, an abort stops it and its fetch', async () => {
    const senders = new Set<(event: CatalogRefreshEvent) => void>()
    let fetchSignal: AbortSignal | undefined
    const logic = catalogRefreshMachine.provide({
      actors: {
        triggers: fromCallback<CatalogRefreshEvent>(({ sendBack }) => {
          senders.add(sendBack)
          return () => senders.delete(sendBack)
        }),
        fetchCatalog: fromPromise<FetchCatalogOutput, FetchCatalogInput>(({ signal }) => {
          fetchSignal = signal
          return new Promise(() => {})
        }),
      },
    })
    const controller = new AbortController()
    const emitted: CatalogRefreshEmitted[] = []
    const running = runActor({ logic, input: { workspaceId: 'ws-host' }, signal: controller.signal, stopEvent: () => ({ type: 'refresher.stop' as const }), onEmitted: (e) => emitted.push(e) })
    expect(senders.size).toBe(1)
    for (const send of senders) send({ type: 'catalog.refresh', requester: 'u1', now: 50_000_000, reason: 'force', ticket: 7 })
    expect(emitted).toEqual([
      { type: 'refresh.accepted', ticket: 7, generation: 1 },
      { type: 'refresh.started', generation: 1, reason: 'force' },
    ])
    await new Promise((resolve) => setTimeout(resolve, 0))
    controller.abort('shutdown')
    await running
    expect(fetchSignal?.aborted).toBe(true)
    expect(senders.size).toBe(0)
  })
})

describe('coverage of the machine definition', () => {
  it('visits every state node', () => {
    expect(replayedPaths).toBeGreaterThan(0)
    expect(definedStateNodes().filter((id) => !visitedStateNodes.has(id))).toEqual([])
  })

  it('takes every transition', () => {
    const defined = definedTransitions()
    expect(defined.length).toBeGreaterThanOrEqual(9)
    expect(defined.filter((key) => !takenTransitions.has(key))).toEqual([])
  })
})
