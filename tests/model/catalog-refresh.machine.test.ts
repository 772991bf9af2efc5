// Model-based tests of the catalog refresh machine, through the kit (`knowagent/testing`): every
// simple path of its graph (per input profile) is replayed against the real machine and the real
// bridge (`fromEffect`), with a fetch that reports, in order, the outcomes the path prescribes;
// `replay` checks the states passed, that a stop during a fetch interrupts it, and the contract.
// Together the replays must reach every state node and take every transition.
import { fromCallback, fromPromise } from 'xstate'
import { describe, expect, it } from 'vitest'
import { runActor } from '../../src/effects/actor-host.ts'
import {
  type CatalogRefreshEmitted,
  type CatalogRefreshEvent,
  catalogRefreshMachine,
  type FetchCatalogInput,
  type FetchCatalogOutput,
} from '../../src/machines/index.ts'
import { CATALOG_REFRESH_PROFILES, type CatalogRefreshPath, catalogRefreshPaths, coverageOf, formatCoverage, replay } from '../../src/testing/index.ts'
import { replayOnce } from '../support/replay-once.ts'

const replayed = replayOnce((path: CatalogRefreshPath) => replay(path))
const PATHS = new Map(CATALOG_REFRESH_PROFILES.map((profile) => [profile, catalogRefreshPaths({ profiles: [profile] })]))

describe.each(CATALOG_REFRESH_PROFILES.map((profile) => [profile.name, profile] as const))('%s', (_, profile) => {
  const paths = PATHS.get(profile)!

  it('has paths to the final state', () => {
    expect(paths.length).toBeGreaterThan(0)
  })

  it.each(paths.map((path) => [path.name.slice(profile.name.length + 2), path] as const))('%s', async (_, path) => {
    const result = await replayed(path)
    expect(result.diverged).toBeUndefined()
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
  it('reaches every state node and takes every transition', async () => {
    const report = coverageOf(catalogRefreshMachine, await Promise.all([...PATHS.values()].flat().map(replayed)))
    expect(report.transitions.total).toBeGreaterThanOrEqual(9)
    expect(report.complete, formatCoverage(report)).toBe(true)
  })
})
