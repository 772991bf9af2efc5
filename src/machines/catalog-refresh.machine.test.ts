import { createActor, fromPromise } from 'xstate'
import { describe, expect, test } from 'vitest'
import {
  CATALOG_FAILURE_BACKOFF_MS,
  CATALOG_MIN_INTERVAL_MS,
  CATALOG_TTL_MS,
  type CatalogRefreshEmitted,
  catalogRefreshMachine,
  type FetchCatalogInput,
  type FetchCatalogOutput,
  isCatalogDue,
} from './catalog-refresh.machine.ts'

const NOW = 10_000_000

/** A machine whose fetches wait until the test settles them. */
function harness() {
  const fetches: Array<{ input: FetchCatalogInput; settle: (output: FetchCatalogOutput) => void; fail: (error: Error) => void; signal: AbortSignal }> = []
  const machine = catalogRefreshMachine.provide({
    actors: {
      fetchCatalog: fromPromise<FetchCatalogOutput, FetchCatalogInput>(
        ({ input, signal }) => new Promise((resolve, reject) => fetches.push({ input, settle: resolve, fail: reject, signal })),
      ),
    },
  })
  const actor = createActor(machine, { input: { workspaceId: 'ws-1' } })
  const emitted: CatalogRefreshEmitted[] = []
  actor.on('*', (event) => emitted.push(event))
  actor.start()
  const flush = () => new Promise((resolve) => setTimeout(resolve, 0))
  return { actor, fetches, emitted, flush }
}

describe('isCatalogDue', () => {
  test.each([
    ['no document', undefined, NOW, undefined, true],
    ['fresh', NOW - 1_000, NOW, undefined, false],
    ['exactly the TTL old', NOW - CATALOG_TTL_MS, NOW, undefined, true],
    ['stale but a failure just now', undefined, NOW, NOW - 1_000, false],
    ['stale, the failure backoff over', undefined, NOW, NOW - CATALOG_FAILURE_BACKOFF_MS, true],
  ])('%s', (_name, fetchedAt, now, failedAt, due) => {
    expect(isCatalogDue({ fetchedAt, now, failedAt })).toBe(due)
  })
})

describe('catalog refresh machine', () => {
  test('a stale check fetches in the background; a fresh one does nothing', async () => {
    const { actor, fetches, emitted, flush } = harness()
    actor.send({ type: 'catalog.check', requester: 'u1', now: NOW, fetchedAt: NOW - 60_000 })
    expect(actor.getSnapshot().value).toBe('idle')
    actor.send({ type: 'catalog.check', requester: 'u1', now: NOW, fetchedAt: NOW - CATALOG_TTL_MS - 1 })
    expect(actor.getSnapshot().value).toBe('refreshing')
    await flush()
    expect(fetches.map((f) => f.input)).toEqual([{ workspaceId: 'ws-1', requester: 'u1', generation: 1, reason: 'stale' }])
    fetches[0]!.settle({ ok: true, at: NOW })
    await flush()
    expect(actor.getSnapshot().value).toBe('idle')
    expect(emitted).toEqual([
      { type: 'refresh.started', generation: 1, reason: 'stale' },
      { type: 'refresh.settled', generation: 1, ok: true },
    ])
  })

  test('twenty concurrent checks and 4xx triggers share one fetch', async () => {
    const { actor, fetches, flush } = harness()
    for (let i = 0; i < 10; i++) actor.send({ type: 'catalog.check', requester: `u${i}`, now: NOW, fetchedAt: undefined })
    for (let i = 0; i < 10; i++) actor.send({ type: 'catalog.refresh', requester: `u${i}`, now: NOW, reason: 'tool-rejected' })
    await flush()
    expect(fetches).toHaveLength(1)
    fetches[0]!.settle({ ok: true, at: NOW })
    await flush()
    expect(fetches).toHaveLength(1)
    expect(actor.getSnapshot().value).toBe('idle')
  })

  test('invalidating triggers during a fetch ask for exactly one more, for the last requester', async () => {
    const { actor, fetches, emitted, flush } = harness()
    actor.send({ type: 'catalog.refresh', requester: 'u1', now: NOW, reason: 'force' })
    actor.send({ type: 'catalog.refresh', requester: 'u2', now: NOW, reason: 'bl-command' })
    actor.send({ type: 'catalog.refresh', requester: 'u3', now: NOW, reason: 'credentials-changed' })
    await flush()
    fetches[0]!.settle({ ok: true, at: NOW })
    await flush()
    expect(fetches.map((f) => f.input)).toEqual([
      { workspaceId: 'ws-1', requester: 'u1', generation: 1, reason: 'force' },
      { workspaceId: 'ws-1', requester: 'u3', generation: 2, reason: 'credentials-changed' },
    ])
    fetches[1]!.settle({ ok: true, at: NOW })
    await flush()
    expect(actor.getSnapshot().value).toBe('idle')
    expect(emitted.filter((e) => e.type === 'refresh.settled')).toHaveLength(2)
  })

  test('bl-command triggers: one fetch now, then one no sooner than the minimum interval, which every trigger until then joins', async () => {
    const { actor, fetches, flush } = harness()
    const bl = (now: number, ticket?: number) => actor.send({ type: 'catalog.refresh', requester: 'u1', now, reason: 'bl-command', ticket })
    bl(NOW)
    await flush()
    expect(fetches.map((f) => f.input.notBefore)).toEqual([undefined])
    bl(NOW + 10) // during the first fetch: one more after it
    fetches[0]!.settle({ ok: true, at: NOW + 20 })
    await flush()
    expect(fetches[1]!.input).toMatchObject({ generation: 2, reason: 'bl-command', notBefore: NOW + CATALOG_MIN_INTERVAL_MS })
    for (let i = 1; i <= 9; i++) bl(NOW + 100 * i)
    bl(NOW + 1_000, 9)
    expect(actor.getSnapshot().context.again).toBeUndefined()
    fetches[1]!.settle({ ok: true, at: NOW + CATALOG_MIN_INTERVAL_MS + 10 })
    await flush()
    expect(fetches).toHaveLength(2)
    expect(actor.getSnapshot().value).toBe('idle')
    // A trigger after the delayed fetch's request began asks for one more, again an interval later.
    bl(NOW + CATALOG_MIN_INTERVAL_MS + 20)
    await flush()
    expect(fetches[2]!.input.notBefore).toBe(NOW + 2 * CATALOG_MIN_INTERVAL_MS)
    // Other reasons are never delayed.
    fetches[2]!.settle({ ok: true, at: NOW + 2 * CATALOG_MIN_INTERVAL_MS })
    await flush()
    actor.send({ type: 'catalog.refresh', requester: 'u1', now: NOW + 2 * CATALOG_MIN_INTERVAL_MS + 1, reason: 'force' })
    await flush()
    expect(fetches[3]!.input.notBefore).toBeUndefined()
  })

  test('a failure reports its message and backs off stale checks, not explicit triggers', async () => {
    const { actor, fetches, emitted, flush } = harness()
    actor.send({ type: 'catalog.check', requester: 'u1', now: NOW, fetchedAt: undefined })
    await flush()
    fetches[0]!.settle({ ok: false, at: NOW, message: 'HTTP 503' })
    await flush()
    expect(emitted.at(-1)).toEqual({ type: 'refresh.settled', generation: 1, ok: false, message: 'HTTP 503' })
    actor.send({ type: 'catalog.check', requester: 'u1', now: NOW + 1_000, fetchedAt: undefined })
    expect(actor.getSnapshot().value).toBe('idle')
    actor.send({ type: 'catalog.check', requester: 'u1', now: NOW + CATALOG_FAILURE_BACKOFF_MS, fetchedAt: undefined })
    expect(actor.getSnapshot().value).toBe('refreshing')
    await flush()
    fetches[1]!.fail(new Error('boom'))
    await flush()
    expect(emitted.at(-1)).toMatchObject({ type: 'refresh.settled', generation: 2, ok: false })
    expect((emitted.at(-1) as { message: string }).message).toContain('boom')
    actor.send({ type: 'catalog.refresh', requester: 'u1', now: NOW + CATALOG_FAILURE_BACKOFF_MS + 1, reason: 'force' })
    expect(actor.getSnapshot().value).toBe('refreshing')
    await flush()
    fetches[2]!.settle({ ok: true, at: NOW })
    await flush()
    expect(actor.getSnapshot().context.failedAt).toBeUndefined()
  })

  test('stopping during a fetch ends the machine and stops the fetch', async () => {
    const { actor, fetches, flush } = harness()
    actor.send({ type: 'catalog.refresh', requester: 'u1', now: NOW, reason: 'force' })
    await flush()
    expect(fetches[0]!.signal.aborted).toBe(false)
    actor.send({ type: 'refresher.stop' })
    expect(actor.getSnapshot().status).toBe('done')
    expect(fetches[0]!.signal.aborted).toBe(true)
  })
})

describe('acknowledgements', () => {
  test('a waiting trigger learns which fetch answers it', async () => {
    const { actor, fetches, emitted, flush } = harness()
    actor.send({ type: 'catalog.refresh', requester: 'u1', now: NOW, reason: 'force', ticket: 1 })
    actor.send({ type: 'catalog.refresh', requester: 'u2', now: NOW, reason: 'tool-rejected', ticket: 2 })
    actor.send({ type: 'catalog.refresh', requester: 'u3', now: NOW, reason: 'bl-command', ticket: 3 })
    actor.send({ type: 'catalog.refresh', requester: 'u4', now: NOW, reason: 'force', ticket: 4 })
    expect(emitted.filter((e) => e.type === 'refresh.accepted')).toEqual([
      { type: 'refresh.accepted', ticket: 1, generation: 1 },
      { type: 'refresh.accepted', ticket: 2, generation: 1 },
      { type: 'refresh.accepted', ticket: 3, generation: 2 },
      { type: 'refresh.accepted', ticket: 4, generation: 2 },
    ])
    expect(actor.getSnapshot().context.joined).toBe(1)
    await flush()
    fetches[0]!.settle({ ok: true, at: NOW })
    await flush()
    fetches[1]!.settle({ ok: true, at: NOW })
    await flush()
    expect(emitted.filter((e) => e.type === 'refresh.settled').map((e) => e.generation)).toEqual([1, 2])
  })

})
