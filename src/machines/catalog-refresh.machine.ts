// The catalog refresh machine (SPEC §9): one per workspace id and process. It decides when the
// retrieval-service catalog is fetched again; the host's `fetchCatalog` actor (supplied with
// `catalogRefreshMachine.provide({ actors })`) lists the services and publishes the document.
// Pure: it never imports src/effects/, and time comes in on the events.
//
// - `catalog.check` (sent before every model step with the document's fetch time): refresh when
//   there is no document or it is older than the TTL (30 minutes) — unless the last refresh failed
//   less than `failureBackoffMs` ago, so an unreachable service is not asked at every step.
// - `catalog.refresh` with a reason refreshes at once, whatever the TTL or the backoff:
//   `credentials-changed` (API key or workspace id), `force` (the settings page), `bl-command`
//   (a tool ran `bl knowledge service create|deploy|delete|copy`), `tool-rejected` (a kb_* call got
//   a 4xx: the caller waits for the list to append it to the error).
// - Single flight: while a fetch runs, checks and `tool-rejected` join it (one request for any
//   number of them); a trigger that may invalidate what is being fetched (`credentials-changed`,
//   `force`, `bl-command`) asks for exactly one more fetch after it, however many arrive.
// - A failed fetch (or a crashed actor) only reports `refresh.settled` with ok false: the old
//   document stays; the host warns. Nothing here ever blocks a model step.
// - Minimum interval (issue 34: one turn of 11 `bl …` calls made 20 list requests): a `bl-command`
//   fetch begins its request no sooner than `minIntervalMs` after the last fetch's request began
//   (`notBefore` in its input; the host waits until then). Until that moment further `bl-command`
//   triggers join it — its request, made after them, is the trailing edge — so a burst of them costs
//   at most one fetch now and one after the interval.
// - `refresher.stop` ends the machine; a running fetch is stopped (its Effect interrupted).
// - Events reach it directly (`actor.send`) or through the `triggers` actor it invokes for its whole
//   life, which the host provides to forward events from outside (so the machine can run under the
//   actor host, which exposes only its output and emitted events).
// - A `catalog.refresh` with a `ticket` is acknowledged with `refresh.accepted`: the generation of
//   the fetch whose `refresh.settled` answers it (the running one when it joins, else the next).
import { assign, emit, enqueueActions, fromCallback, fromPromise, setup } from 'xstate'

export const CATALOG_TTL_MS = 30 * 60 * 1000
export const CATALOG_FAILURE_BACKOFF_MS = 60 * 1000
export const CATALOG_MIN_INTERVAL_MS = 5 * 1000

export type CatalogRefreshReason = 'stale' | 'credentials-changed' | 'force' | 'bl-command' | 'tool-rejected'
export type CatalogTriggerReason = Exclude<CatalogRefreshReason, 'stale'>

export interface CatalogRefreshInput {
  readonly workspaceId: string
  readonly ttlMs?: number | undefined
  readonly failureBackoffMs?: number | undefined
  /** Least time between two fetches' requests when a `bl-command` asks for one. */
  readonly minIntervalMs?: number | undefined
}

export interface FetchCatalogInput {
  readonly workspaceId: string
  /** The user whose settings (API key, endpoint) the fetch uses. */
  readonly requester: string
  readonly generation: number
  readonly reason: CatalogRefreshReason
  /** The request is not made before this time (the host waits until then); undefined: at once. */
  readonly notBefore?: number | undefined
}

export type FetchCatalogOutput =
  | { readonly ok: true; readonly at: number }
  | { readonly ok: false; readonly at: number; readonly message: string }

export type CatalogRefreshEvent =
  | { readonly type: 'catalog.check'; readonly requester: string; readonly now: number; readonly fetchedAt: number | undefined }
  | {
      readonly type: 'catalog.refresh'
      readonly requester: string
      readonly now: number
      readonly reason: CatalogTriggerReason
      /** Set by a caller that waits for the outcome (see `refresh.accepted`). */
      readonly ticket?: number | undefined
    }
  | { readonly type: 'refresher.stop' }

export type CatalogRefreshEmitted =
  /** The trigger with this ticket is answered by the `refresh.settled` of this generation. */
  | { readonly type: 'refresh.accepted'; readonly ticket: number; readonly generation: number }
  | { readonly type: 'refresh.started'; readonly generation: number; readonly reason: CatalogRefreshReason }
  | { readonly type: 'refresh.settled'; readonly generation: number; readonly ok: boolean; readonly message?: string | undefined }

export interface CatalogRefreshContext {
  readonly workspaceId: string
  readonly ttlMs: number
  readonly failureBackoffMs: number
  readonly minIntervalMs: number
  /** When the last fetch's request began (or begins, for a fetch still waiting for its `notBefore`). */
  readonly requestAt: number | undefined
  /** Fetches started so far; the running one is `generation`. */
  readonly generation: number
  readonly requester: string | undefined
  readonly reason: CatalogRefreshReason
  /** When the running fetch was asked for (the failure time if the actor crashes). */
  readonly requestedAt: number
  /** One more fetch is wanted after the running one, for this requester and reason. */
  readonly again: { readonly requester: string; readonly reason: CatalogRefreshReason; readonly at: number } | undefined
  /** When the last fetch failed; undefined after a success. */
  readonly failedAt: number | undefined
  /** When the last successful fetch of this process ended (diagnostics). */
  readonly succeededAt: number | undefined
  /** Triggers that joined the running fetch (diagnostics: how much single flight saved). */
  readonly joined: number
}

/** Whether a `catalog.check` asks for a fetch (pure; exported for the host's diagnostics). */
export function isCatalogDue({
  fetchedAt,
  now,
  failedAt,
  ttlMs = CATALOG_TTL_MS,
  failureBackoffMs = CATALOG_FAILURE_BACKOFF_MS,
}: {
  readonly fetchedAt: number | undefined
  readonly now: number
  readonly failedAt: number | undefined
  readonly ttlMs?: number
  readonly failureBackoffMs?: number
}): boolean {
  const stale = fetchedAt === undefined || now - fetchedAt >= ttlMs
  const backingOff = failedAt !== undefined && now - failedAt < failureBackoffMs
  return stale && !backingOff
}

/** Triggers that may make a running fetch's answer out of date ask for one more. */
export function invalidatesRunningFetch(reason: CatalogTriggerReason): boolean {
  return reason !== 'tool-rejected'
}

function crashText(error: unknown): string {
  return error instanceof Error ? error.message : String(error ?? 'unknown error')
}

export const catalogRefreshMachine = setup({
  types: {
    context: {} as CatalogRefreshContext,
    events: {} as CatalogRefreshEvent,
    input: {} as CatalogRefreshInput,
    emitted: {} as CatalogRefreshEmitted,
    children: {} as { fetchCatalog: 'fetchCatalog'; triggers: 'triggers' },
  },
  actors: {
    /** Forwards events from outside for the machine's whole life; by default there are none. */
    triggers: fromCallback<CatalogRefreshEvent>(() => undefined),
    fetchCatalog: fromPromise<FetchCatalogOutput, FetchCatalogInput>(async () => {
      throw new Error('catalog refresh actor "fetchCatalog" was not provided: use catalogRefreshMachine.provide({ actors: { fetchCatalog } })')
    }),
  },
  guards: {
    isDue: ({ context, event }) =>
      event.type === 'catalog.check' &&
      isCatalogDue({ fetchedAt: event.fetchedAt, now: event.now, failedAt: context.failedAt, ttlMs: context.ttlMs, failureBackoffMs: context.failureBackoffMs }),
    invalidatesRunningFetch: ({ context, event }) =>
      event.type === 'catalog.refresh' &&
      invalidatesRunningFetch(event.reason) &&
      !(event.reason === 'bl-command' && context.reason === 'bl-command' && context.requestAt !== undefined && event.now < context.requestAt),
    fetchSucceeded: (_, params: { readonly output: FetchCatalogOutput }) => params.output.ok,
    wantsAgain: ({ context }) => context.again !== undefined,
  },
  actions: {
    requestFromEvent: assign(({ event }) => {
      if (event.type === 'catalog.check') return { requester: event.requester, reason: 'stale' as const, requestedAt: event.now }
      if (event.type === 'catalog.refresh') return { requester: event.requester, reason: event.reason, requestedAt: event.now }
      return {}
    }),
    requestAgain: assign(({ event }) =>
      event.type === 'catalog.refresh' ? { again: { requester: event.requester, reason: event.reason, at: event.now } } : {},
    ),
    takeAgain: assign(({ context }) =>
      context.again === undefined ? {} : { requester: context.again.requester, reason: context.again.reason, requestedAt: context.again.at, again: undefined },
    ),
    startFetch: enqueueActions(({ context, enqueue }) => {
      const generation = context.generation + 1
      const requestAt =
        context.reason === 'bl-command' && context.requestAt !== undefined ? Math.max(context.requestedAt, context.requestAt + context.minIntervalMs) : context.requestedAt
      enqueue.assign({ generation, joined: 0, requestAt })
      enqueue.emit({ type: 'refresh.started', generation, reason: context.reason })
    }),
    recordSuccess: assign(({ context }, params: { readonly at: number | undefined }) => ({ failedAt: undefined, succeededAt: params.at ?? context.requestedAt })),
    recordFailure: assign(({ context }, params: { readonly at: number | undefined }) => ({ failedAt: params.at ?? context.requestedAt })),
    /** Answered by the fetch about to start (from rest) or the one after the running fetch. */
    acknowledgeNext: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'catalog.refresh' && event.ticket !== undefined) {
        enqueue.emit({ type: 'refresh.accepted', ticket: event.ticket, generation: context.generation + 1 })
      }
    }),
    /** Answered by the running fetch, which this trigger joins. */
    acknowledgeRunning: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ joined: context.joined + 1 })
      if (event.type === 'catalog.refresh' && event.ticket !== undefined) {
        enqueue.emit({ type: 'refresh.accepted', ticket: event.ticket, generation: context.generation })
      }
    }),
    emitSucceeded: emit(({ context }) => ({ type: 'refresh.settled' as const, generation: context.generation, ok: true })),
    emitFailed: emit(({ context }, params: { readonly message: string }) => ({ type: 'refresh.settled' as const, generation: context.generation, ok: false, message: params.message })),
  },
}).createMachine({
  id: 'catalogRefresh',
  context: ({ input }) => ({
    workspaceId: input.workspaceId,
    ttlMs: input.ttlMs ?? CATALOG_TTL_MS,
    failureBackoffMs: input.failureBackoffMs ?? CATALOG_FAILURE_BACKOFF_MS,
    minIntervalMs: input.minIntervalMs ?? CATALOG_MIN_INTERVAL_MS,
    requestAt: undefined,
    generation: 0,
    requester: undefined,
    reason: 'stale',
    requestedAt: 0,
    again: undefined,
    failedAt: undefined,
    succeededAt: undefined,
    joined: 0,
  }),
  initial: 'idle',
  invoke: { id: 'triggers', src: 'triggers' },
  on: {
    'refresher.stop': { target: '.stopped' },
  },
  states: {
    idle: {
      on: {
        'catalog.check': { guard: 'isDue', target: 'refreshing', actions: 'requestFromEvent' },
        'catalog.refresh': { target: 'refreshing', actions: ['requestFromEvent', 'acknowledgeNext'] },
      },
    },
    refreshing: {
      entry: 'startFetch',
      invoke: {
        id: 'fetchCatalog',
        src: 'fetchCatalog',
        input: ({ context }) => ({
          workspaceId: context.workspaceId,
          requester: context.requester ?? '',
          generation: context.generation,
          reason: context.reason,
          notBefore: context.requestAt !== undefined && context.requestAt > context.requestedAt ? context.requestAt : undefined,
        }),
        onDone: [
          {
            guard: { type: 'fetchSucceeded', params: ({ event }) => ({ output: event.output }) },
            target: 'settled',
            actions: [{ type: 'recordSuccess', params: ({ event }) => ({ at: event.output.at }) }, 'emitSucceeded'],
          },
          {
            target: 'settled',
            actions: [
              { type: 'recordFailure', params: ({ event }) => ({ at: event.output.at }) },
              { type: 'emitFailed', params: ({ event }) => ({ message: event.output.ok ? 'the catalog refresh failed' : event.output.message }) },
            ],
          },
        ],
        onError: {
          target: 'settled',
          actions: [
            { type: 'recordFailure', params: () => ({ at: undefined }) },
            { type: 'emitFailed', params: ({ event }) => ({ message: `the catalog refresh crashed: ${crashText(event.error)}` }) },
          ],
        },
      },
      on: {
        'catalog.refresh': [
          { guard: 'invalidatesRunningFetch', actions: ['requestAgain', 'acknowledgeNext'] },
          { actions: 'acknowledgeRunning' },
        ],
      },
    },
    /** A fetch ended: start the one more that was asked for, or rest. */
    settled: {
      always: [{ guard: 'wantsAgain', target: 'refreshing', actions: 'takeAgain' }, { target: 'idle' }],
    },
    stopped: { type: 'final' },
  },
})
