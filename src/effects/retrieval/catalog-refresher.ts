// Runs one catalog refresh machine per workspace id under the actor host, and provides its fetch:
// resolve the requester's settings, list both scenes, publish the document (or record the failure,
// keeping the document). Pre-step checks never wait; explicit triggers resolve when the fetch that
// answers them has settled. Started lazily per workspace; `stop()` stops every machine, which
// interrupts a running fetch and aborts its HTTP request.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import * as Result from 'effect/Result'
import { fromCallback } from 'xstate'
import {
  type CatalogRefreshEmitted,
  type CatalogRefreshEvent,
  catalogRefreshMachine,
  type CatalogTriggerReason,
  type FetchCatalogInput,
  type FetchCatalogOutput,
} from '../../machines/index.ts'
import { fromEffect } from '../actor-bridge.ts'
import { runActor } from '../actor-host.ts'
import type { Logger } from '../logging/logger.ts'
import type { BailianClient } from './bailian-client.ts'
import { BailianMissingCredentials } from './bailian-errors.ts'
import { type BailianSettings, connectionOf } from './bailian-settings.ts'
import type { CatalogCache } from './catalog-cache.ts'

export type RefreshOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string }

export interface RefreshFailure {
  /** Increases with every failure in this process. */
  readonly seq: number
  readonly message: string
  /** The user whose settings the failed fetch used. */
  readonly userId: string | undefined
  /** The service refused that user's key (401/403): nobody else needs to hear about it. */
  readonly keySpecific: boolean
}

/** The service refused a user's own key (401/403) when listing a workspace. */
export interface KeyRefusal {
  readonly message: string
  readonly at: Date
  /** The fingerprint of the refused key: a refusal no longer applies once the user's key changed. */
  readonly fingerprint: string
}

export interface CatalogRefresher {
  /** Before a model step: refresh in the background if the document is missing or stale. Never waits. */
  readonly check: (input: { readonly userId: string; readonly workspaceId: string; readonly fetchedAt: Date | undefined }) => void
  /** Refresh now; resolves when the fetch that answers this trigger has settled. Never rejects. */
  readonly refresh: (input: { readonly userId: string; readonly workspaceId: string; readonly reason: CatalogTriggerReason }) => Promise<RefreshOutcome>
  /**
   * The last refresh failure of a workspace in this process, if the last fetch failed and it
   * concerns this user (a refused key concerns only its owner).
   */
  readonly lastFailure: (workspaceId: string, userId: string) => RefreshFailure | undefined
  /**
   * The refusal of this user's key by the workspace (kept in this process until a fetch with the
   * user's settings succeeds), if the key is still the one refused. Never another user's.
   */
  readonly keyRefusal: (input: { readonly workspaceId: string; readonly userId: string; readonly fingerprint: string }) => KeyRefusal | undefined
  readonly stop: () => Promise<void>
}

export interface CatalogRefresherOptions {
  readonly client: BailianClient
  readonly settings: BailianSettings
  readonly cache: CatalogCache
  readonly logger: Logger
  readonly now?: (() => number) | undefined
  readonly ttlMs?: number | undefined
  readonly failureBackoffMs?: number | undefined
  /** Least time between two fetches a `bl knowledge service …` command asks for (the machine's `minIntervalMs`). */
  readonly minIntervalMs?: number | undefined
  /** Waits until `at` (on the `now` clock) before a fetch the machine delayed; interrupted when the machine stops. */
  readonly waitUntil?: ((at: number) => Effect.Effect<void>) | undefined
}

interface Running {
  readonly send: (event: CatalogRefreshEvent) => void
  readonly finished: Promise<unknown>
}

export function makeCatalogRefresher(options: CatalogRefresherOptions): CatalogRefresher {
  const { client, settings, cache, logger } = options
  const now = options.now ?? Date.now
  const stopping = new AbortController()
  const machines = new Map<string, Running>()
  const failures = new Map<string, RefreshFailure>()
  const refusals = new Map<string, KeyRefusal>()
  const refusalKey = (workspaceId: string, userId: string) => `${workspaceId}\u0000${userId}`
  let failureSeq = 0
  let nextTicket = 0
  const waiters = new Map<number, { workspaceId: string; generation: number | undefined; resolve: (outcome: RefreshOutcome) => void }>()

  const waitUntil = options.waitUntil ?? ((at: number) => Effect.sleep(Math.max(0, at - now())))

  const fetchCatalog = (input: FetchCatalogInput): Effect.Effect<FetchCatalogOutput> =>
    Effect.gen(function* () {
      if (input.notBefore !== undefined) yield* waitUntil(input.notBefore)
      const snapshot = yield* Effect.promise(() => settings.resolve(input.requester))
      const connection = connectionOf(snapshot)
      const settingsGone = (message: string) => {
        failures.set(input.workspaceId, { seq: ++failureSeq, message, userId: input.requester, keySpecific: true })
        return { ok: false, at: now(), message } as const
      }
      if (connection instanceof BailianMissingCredentials) return settingsGone(connection.message)
      if (connection.workspaceId !== input.workspaceId) return settingsGone('the requester no longer uses this workspace')
      const listed = yield* Effect.result(client.listCatalog(connection))
      if (Result.isFailure(listed)) {
        const error = listed.failure
        const refusedKey = error._tag === 'BailianHttpError' && (error.status === 401 || error.status === 403)
        failures.set(input.workspaceId, { seq: ++failureSeq, message: error.message, userId: input.requester, keySpecific: refusedKey })
        if (refusedKey) {
          refusals.set(refusalKey(input.workspaceId, input.requester), { message: error.message, at: new Date(now()), fingerprint: cache.fingerprint(connection.apiKey) })
        }
        // A refused key stops reading the shared document; it is not the workspace's error to show others.
        yield* Effect.promise(() =>
          refusedKey
            ? cache.revokeReader({ workspaceId: input.workspaceId, apiKey: connection.apiKey })
            : cache.recordFailure({ workspaceId: input.workspaceId, endpointHost: connection.endpointHost, message: error.message, at: new Date(now()) }),
        )
        return { ok: false, at: now(), message: error.message } as const
      }
      yield* Effect.promise(() =>
        cache.publish({
          workspaceId: input.workspaceId,
          endpointHost: connection.endpointHost,
          listing: listed.success,
          apiKey: connection.apiKey,
          fetchedAt: new Date(now()),
        }),
      )
      refusals.delete(refusalKey(input.workspaceId, input.requester))
      return { ok: true, at: now() } as const
    })

  const onEmitted = (workspaceId: string) => (event: CatalogRefreshEmitted) => {
    switch (event.type) {
      case 'refresh.accepted': {
        const waiter = waiters.get(event.ticket)
        if (waiter !== undefined) waiters.set(event.ticket, { ...waiter, generation: event.generation })
        return
      }
      case 'refresh.started':
        return
      case 'refresh.settled': {
        if (event.ok) failures.delete(workspaceId)
        else {
          // A crashed fetch recorded nothing itself.
          if (failures.get(workspaceId)?.message !== event.message) {
            failures.set(workspaceId, { seq: ++failureSeq, message: event.message ?? 'the catalog refresh failed', userId: undefined, keySpecific: false })
          }
          logger.warn('retrieval catalog refresh failed; keeping the previous catalog', { workspaceId, reason: event.message })
        }
        for (const [ticket, waiter] of waiters) {
          if (waiter.workspaceId !== workspaceId || waiter.generation === undefined || waiter.generation > event.generation) continue
          waiters.delete(ticket)
          waiter.resolve(event.ok ? { ok: true } : { ok: false, message: event.message ?? 'the catalog refresh failed' })
        }
        return
      }
    }
  }

  const machineFor = (workspaceId: string): Running | undefined => {
    if (stopping.signal.aborted) return undefined
    const existing = machines.get(workspaceId)
    if (existing !== undefined) return existing
    const senders = new Set<(event: CatalogRefreshEvent) => void>()
    const logic = catalogRefreshMachine.provide({
      actors: {
        fetchCatalog: fromEffect<FetchCatalogOutput, FetchCatalogInput>(({ input }) => fetchCatalog(input)),
        triggers: fromCallback<CatalogRefreshEvent>(({ sendBack }) => {
          senders.add(sendBack)
          return () => senders.delete(sendBack)
        }),
      },
    })
    const finished = runActor({
      logic,
      input: { workspaceId, ttlMs: options.ttlMs, failureBackoffMs: options.failureBackoffMs, minIntervalMs: options.minIntervalMs },
      signal: stopping.signal,
      stopEvent: () => ({ type: 'refresher.stop' as const }),
      onEmitted: onEmitted(workspaceId),
      onListenerError: (error) => logger.error('catalog refresher listener failed', { workspaceId, error }),
    }).catch((error: unknown) => logger.error('catalog refresher stopped unexpectedly', { workspaceId, error }))
    const running: Running = {
      send: (event) => {
        for (const send of senders) send(event)
      },
      finished,
    }
    machines.set(workspaceId, running)
    void finished.finally(() => {
      if (machines.get(workspaceId) === running) machines.delete(workspaceId)
    })
    return running
  }

  return {
    check: ({ userId, workspaceId, fetchedAt }) => {
      machineFor(workspaceId)?.send({ type: 'catalog.check', requester: userId, now: now(), fetchedAt: fetchedAt?.getTime() })
    },
    refresh: ({ userId, workspaceId, reason }) => {
      const machine = machineFor(workspaceId)
      if (machine === undefined) return Promise.resolve({ ok: false, message: 'the server is shutting down' })
      const ticket = ++nextTicket
      const outcome = new Promise<RefreshOutcome>((resolve) => waiters.set(ticket, { workspaceId, generation: undefined, resolve }))
      machine.send({ type: 'catalog.refresh', requester: userId, now: now(), reason, ticket })
      return outcome
    },
    lastFailure: (workspaceId, userId) => {
      const failure = failures.get(workspaceId)
      return failure === undefined || (failure.keySpecific && failure.userId !== userId) ? undefined : failure
    },
    keyRefusal: ({ workspaceId, userId, fingerprint }) => {
      const refusal = refusals.get(refusalKey(workspaceId, userId))
      return refusal?.fingerprint === fingerprint ? refusal : undefined
    },
    stop: async () => {
      stopping.abort('shutdown')
      await Promise.all([...machines.values()].map((machine) => machine.finished))
      for (const [ticket, waiter] of waiters) {
        waiters.delete(ticket)
        waiter.resolve({ ok: false, message: 'the server is shutting down' })
      }
    },
  }
}

/** The refresher as a scoped service: its machines start on demand and stop when the runtime shuts down. */
export class CatalogRefresherService extends Context.Service<CatalogRefresherService, CatalogRefresher>()('knowagent/retrieval/CatalogRefresher') {
  static readonly layer = (options: CatalogRefresherOptions): Layer.Layer<CatalogRefresherService> =>
    Layer.effect(
      CatalogRefresherService,
      Effect.acquireRelease(
        Effect.sync(() => makeCatalogRefresher(options)),
        (refresher) => Effect.promise(() => refresher.stop()),
      ),
    )
}
