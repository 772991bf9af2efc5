// The abstract model of the catalog refresher's environment for model-based testing: which events
// may arrive in each resting state (the alphabet: pre-step checks, triggers, the fetch's outcomes,
// stop), how snapshots are abstracted (serializeState), and the input profiles.
import { getSimplePaths } from '@xstate/graph'
import type { AnyEventObject, SnapshotFrom } from 'xstate'
import {
  CATALOG_FAILURE_BACKOFF_MS,
  type CatalogRefreshEvent,
  type CatalogRefreshInput,
  type CatalogTriggerReason,
  catalogRefreshMachine,
  type FetchCatalogOutput,
} from '../../src/machines/index.ts'

export type RefreshSnapshot = SnapshotFrom<typeof catalogRefreshMachine>

export const NOW = 50_000_000
export const LATER = NOW + CATALOG_FAILURE_BACKOFF_MS

/** An outcome of the running fetch, or an event from outside (pre-step, tools, settings, shutdown). */
export type GraphEvent =
  | { readonly type: 'xstate.done.actor.fetchCatalog'; readonly output: FetchCatalogOutput; readonly label: string }
  | { readonly type: 'xstate.error.actor.fetchCatalog'; readonly error: Error; readonly label: string }
  | (CatalogRefreshEvent & { readonly label: string })

export type CheckLabel = 'fresh' | 'stale' | 'stale-after-backoff'
export type OutcomeLabel = 'ok' | 'failed' | 'crash'

export interface Alphabet {
  /** Pre-step checks sent while idle. */
  readonly idleChecks: ReadonlyArray<CheckLabel>
  /** Triggers sent while idle. */
  readonly idleTriggers: ReadonlyArray<CatalogTriggerReason>
  /** A stale check arriving while a fetch runs (it joins). */
  readonly runningCheck: boolean
  /** Triggers sent while a fetch runs. */
  readonly runningTriggers: ReadonlyArray<CatalogTriggerReason>
  /** How the running fetch may end. */
  readonly outcomes: ReadonlyArray<OutcomeLabel>
}

export interface Profile {
  readonly name: string
  readonly input: CatalogRefreshInput
  readonly alphabet: Alphabet
}

const check = (label: string, now: number, fetchedAt: number | undefined): GraphEvent => ({ type: 'catalog.check', requester: 'u-check', now, fetchedAt, label })
const trigger = (reason: CatalogTriggerReason): GraphEvent => ({ type: 'catalog.refresh', requester: `u-${reason}`, now: NOW, reason, ticket: 1, label: reason })

const CHECKS: Record<CheckLabel, GraphEvent> = {
  fresh: check('fresh', NOW, NOW - 1_000),
  stale: check('stale', NOW, undefined),
  'stale-after-backoff': check('stale-after-backoff', LATER, undefined),
}

const OUTCOMES: Record<OutcomeLabel, GraphEvent> = {
  ok: { type: 'xstate.done.actor.fetchCatalog', output: { ok: true, at: NOW }, label: 'ok' },
  failed: { type: 'xstate.done.actor.fetchCatalog', output: { ok: false, at: NOW, message: 'Bailian list failed (HTTP 503)' }, label: 'failed' },
  crash: { type: 'xstate.error.actor.fetchCatalog', error: new Error('fetch crashed'), label: 'crash' },
}

export function eventsIn({ snapshot, profile }: { readonly snapshot: RefreshSnapshot; readonly profile: Profile }): GraphEvent[] {
  if (snapshot.status !== 'active') return []
  const stop: GraphEvent = { type: 'refresher.stop', label: 'stop' }
  const { alphabet } = profile
  if (snapshot.matches('idle')) return [...alphabet.idleChecks.map((label) => CHECKS[label]), ...alphabet.idleTriggers.map(trigger), stop]
  if (snapshot.matches('refreshing')) {
    return [
      ...(alphabet.runningCheck ? [CHECKS.stale] : []),
      ...alphabet.runningTriggers.map(trigger),
      ...alphabet.outcomes.map((label) => OUTCOMES[label]),
      stop,
    ]
  }
  return [stop]
}

/**
 * Counters (the generation) and times are never kept, so loops do not make the graph grow without
 * end; what the guards depend on is kept instead: whether a stale check at NOW, and at LATER, would
 * fetch, and whether the running fetch was asked for at LATER (a crash records its failure at the
 * time of the trigger). `succeeded` tells apart the rest after a success from the initial one, and
 * `joined` a fetch that others joined.
 */
export function serializeRefreshState(snapshot: RefreshSnapshot): string {
  const { failedAt, failureBackoffMs, requestedAt, succeededAt } = snapshot.context
  const dueAt = (now: number) => failedAt === undefined || now - failedAt >= failureBackoffMs
  return JSON.stringify({
    value: snapshot.value,
    status: snapshot.status,
    again: snapshot.context.again !== undefined,
    failed: failedAt !== undefined,
    staleCheckFetches: { now: dueAt(NOW), later: dueAt(LATER) },
    requestedLater: requestedAt >= LATER,
    succeeded: succeededAt !== undefined,
    joined: snapshot.context.joined > 0,
  })
}

/** Small alphabets, one concern each: simple paths of one big alphabet would not end. */
export const PROFILES: ReadonlyArray<Profile> = [
  {
    name: 'pre-step checks: TTL and joining a running fetch',
    input: { workspaceId: 'ws-model' },
    alphabet: { idleChecks: ['fresh', 'stale'], idleTriggers: [], runningCheck: true, runningTriggers: ['tool-rejected'], outcomes: ['ok'] },
  },
  {
    name: 'failures and the backoff of stale checks',
    input: { workspaceId: 'ws-model' },
    alphabet: { idleChecks: ['stale', 'stale-after-backoff'], idleTriggers: [], runningCheck: false, runningTriggers: [], outcomes: ['ok', 'failed', 'crash'] },
  },
  {
    name: 'invalidating triggers during a fetch ask for one more',
    input: { workspaceId: 'ws-model' },
    alphabet: { idleChecks: ['stale'], idleTriggers: ['force'], runningCheck: false, runningTriggers: ['bl-command'], outcomes: ['ok', 'failed'] },
  },
  {
    name: 'every explicit trigger from rest',
    input: { workspaceId: 'ws-model' },
    alphabet: { idleChecks: [], idleTriggers: ['force', 'credentials-changed', 'bl-command', 'tool-rejected'], runningCheck: false, runningTriggers: ['credentials-changed'], outcomes: ['ok'] },
  },
]

export interface GraphPath {
  readonly events: ReadonlyArray<GraphEvent>
  /** The serialised state after the start and after each event. */
  readonly states: ReadonlyArray<string>
  readonly finalState: RefreshSnapshot
}

/** Simple paths of the profile's graph that end in the final state. */
export function refreshPaths(profile: Profile): GraphPath[] {
  const paths = getSimplePaths(catalogRefreshMachine, {
    input: profile.input,
    serializeState: serializeRefreshState,
    events: (snapshot) => eventsIn({ snapshot, profile }) as unknown as AnyEventObject[] as never,
  })
  return paths
    .filter((path) => path.state.status === 'done')
    .map((path) => ({
      events: path.steps.slice(1).map((step) => step.event as unknown as GraphEvent),
      states: path.steps.map((step) => serializeRefreshState(step.state)),
      finalState: path.state,
    }))
}
