// The abstract model of the catalog refresher's environment for model-based testing: which events
// may arrive in each resting state (the alphabet: pre-step checks, triggers, the fetch's outcomes,
// stop), how snapshots are abstracted (serializeState), and the input profiles.
import { getSimplePaths } from '@xstate/graph'
import type { AnyStateMachine, SnapshotFrom } from 'xstate'
import {
  CATALOG_FAILURE_BACKOFF_MS,
  type CatalogRefreshEvent,
  type CatalogRefreshInput,
  type CatalogTriggerReason,
  catalogRefreshMachine,
  type FetchCatalogOutput,
} from '../machines/index.ts'
import { describeEvents, type MachinePath, narrowToProvided } from './paths.ts'

export type CatalogRefreshSnapshot = SnapshotFrom<typeof catalogRefreshMachine>

export const CATALOG_NOW = 50_000_000
export const CATALOG_LATER = CATALOG_NOW + CATALOG_FAILURE_BACKOFF_MS

/** An outcome of the running fetch, or an event from outside (pre-step, tools, settings, shutdown). */
export type CatalogRefreshPathEvent =
  | { readonly type: 'xstate.done.actor.fetchCatalog'; readonly output: FetchCatalogOutput; readonly label: string }
  | { readonly type: 'xstate.error.actor.fetchCatalog'; readonly error: Error; readonly label: string }
  | (CatalogRefreshEvent & { readonly label: string })

export type CatalogCheckLabel = 'fresh' | 'stale' | 'stale-after-backoff'
export type CatalogOutcomeLabel = 'ok' | 'failed' | 'crash'

export interface CatalogRefreshAlphabet {
  /** Pre-step checks sent while idle. */
  readonly idleChecks: ReadonlyArray<CatalogCheckLabel>
  /** Triggers sent while idle. */
  readonly idleTriggers: ReadonlyArray<CatalogTriggerReason>
  /** A stale check arriving while a fetch runs (it joins). */
  readonly runningCheck: boolean
  /** Triggers sent while a fetch runs. */
  readonly runningTriggers: ReadonlyArray<CatalogTriggerReason>
  /** How the running fetch may end. */
  readonly outcomes: ReadonlyArray<CatalogOutcomeLabel>
}

export interface CatalogRefreshProfile {
  readonly name: string
  readonly input: CatalogRefreshInput
  readonly alphabet: CatalogRefreshAlphabet
}

const check = (label: string, now: number, fetchedAt: number | undefined): CatalogRefreshPathEvent => ({ type: 'catalog.check', requester: 'u-check', now, fetchedAt, label })
const trigger = (reason: CatalogTriggerReason): CatalogRefreshPathEvent => ({ type: 'catalog.refresh', requester: `u-${reason}`, now: CATALOG_NOW, reason, ticket: 1, label: reason })

const CHECKS: Record<CatalogCheckLabel, CatalogRefreshPathEvent> = {
  fresh: check('fresh', CATALOG_NOW, CATALOG_NOW - 1_000),
  stale: check('stale', CATALOG_NOW, undefined),
  'stale-after-backoff': check('stale-after-backoff', CATALOG_LATER, undefined),
}

const OUTCOMES: Record<CatalogOutcomeLabel, CatalogRefreshPathEvent> = {
  ok: { type: 'xstate.done.actor.fetchCatalog', output: { ok: true, at: CATALOG_NOW }, label: 'ok' },
  failed: { type: 'xstate.done.actor.fetchCatalog', output: { ok: false, at: CATALOG_NOW, message: 'Bailian list failed (HTTP 503)' }, label: 'failed' },
  crash: { type: 'xstate.error.actor.fetchCatalog', error: new Error('fetch crashed'), label: 'crash' },
}

export function catalogRefreshEventsIn({ snapshot, profile }: { readonly snapshot: CatalogRefreshSnapshot; readonly profile: CatalogRefreshProfile }): CatalogRefreshPathEvent[] {
  if (snapshot.status !== 'active') return []
  const stop: CatalogRefreshPathEvent = { type: 'refresher.stop', label: 'stop' }
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
 * end; what the guards depend on is kept instead: whether a stale check at CATALOG_NOW, and at CATALOG_LATER, would
 * fetch, and whether the running fetch was asked for at CATALOG_LATER (a crash records its failure at the
 * time of the trigger). `succeeded` tells apart the rest after a success from the initial one, and
 * `joined` a fetch that others joined.
 */
export function serializeCatalogRefreshState(snapshot: CatalogRefreshSnapshot): string {
  const { failedAt, failureBackoffMs, requestedAt, succeededAt } = snapshot.context
  const dueAt = (now: number) => failedAt === undefined || now - failedAt >= failureBackoffMs
  return JSON.stringify({
    value: snapshot.value,
    status: snapshot.status,
    again: snapshot.context.again !== undefined,
    failed: failedAt !== undefined,
    staleCheckFetches: { now: dueAt(CATALOG_NOW), later: dueAt(CATALOG_LATER) },
    requestedLater: requestedAt >= CATALOG_LATER,
    succeeded: succeededAt !== undefined,
    joined: snapshot.context.joined > 0,
    // Every event comes at CATALOG_NOW or CATALOG_LATER: whether a bl-command fetch still waits for its interval then.
    waitsForInterval: snapshot.context.requestAt !== undefined && snapshot.context.requestAt > CATALOG_LATER,
  })
}

/** Small alphabets, one concern each: simple paths of one big alphabet would not end. */
export const CATALOG_REFRESH_PROFILES: ReadonlyArray<CatalogRefreshProfile> = [
  {
    name: 'pre-step checks: TTL and joining a running fetch',
    input: { workspaceId: 'ws-model', minIntervalMs: 0 },
    alphabet: { idleChecks: ['fresh', 'stale'], idleTriggers: [], runningCheck: true, runningTriggers: ['tool-rejected'], outcomes: ['ok'] },
  },
  {
    name: 'failures and the backoff of stale checks',
    input: { workspaceId: 'ws-model', minIntervalMs: 0 },
    alphabet: { idleChecks: ['stale', 'stale-after-backoff'], idleTriggers: [], runningCheck: false, runningTriggers: [], outcomes: ['ok', 'failed', 'crash'] },
  },
  {
    name: 'invalidating triggers during a fetch ask for one more',
    input: { workspaceId: 'ws-model', minIntervalMs: 0 },
    alphabet: { idleChecks: ['stale'], idleTriggers: ['force'], runningCheck: false, runningTriggers: ['bl-command'], outcomes: ['ok', 'failed'] },
  },
  {
    name: 'every explicit trigger from rest',
    input: { workspaceId: 'ws-model', minIntervalMs: 0 },
    alphabet: { idleChecks: [], idleTriggers: ['force', 'credentials-changed', 'bl-command', 'tool-rejected'], runningCheck: false, runningTriggers: ['credentials-changed'], outcomes: ['ok'] },
  },
  {
    name: 'bl-command triggers keep a minimum interval and join a fetch still waiting for it',
    input: { workspaceId: 'ws-model', minIntervalMs: 2 * (CATALOG_LATER - CATALOG_NOW) },
    alphabet: { idleChecks: [], idleTriggers: ['bl-command'], runningCheck: false, runningTriggers: ['bl-command'], outcomes: ['ok'] },
  },
]

export interface CatalogRefreshPath extends MachinePath<'catalog-refresh', CatalogRefreshProfile, CatalogRefreshPathEvent, CatalogRefreshSnapshot> {
  readonly provided: ReadonlyArray<'fetchCatalog'>
}

export interface CatalogRefreshPathOptions {
  /** Default: every profile of CATALOG_REFRESH_PROFILES. */
  readonly profiles?: ReadonlyArray<CatalogRefreshProfile>
  /** Provide `fetchCatalog` to `replay`: its outcomes in each path are left to it. */
  readonly provided?: ReadonlyArray<'fetchCatalog'>
}

/** The graph steps with actor outcomes too, which the machine's own event type does not list. */
const steppedByOutcomes: AnyStateMachine = catalogRefreshMachine

/** The simple paths of each profile's graph that end in the final state. */
export function catalogRefreshPaths({ profiles = CATALOG_REFRESH_PROFILES, provided = [] }: CatalogRefreshPathOptions = {}): CatalogRefreshPath[] {
  return profiles.flatMap((profile) =>
    getSimplePaths(steppedByOutcomes, {
      input: profile.input,
      serializeState: serializeCatalogRefreshState,
      events: (snapshot) => narrowToProvided(catalogRefreshEventsIn({ snapshot, profile }), provided),
    })
      .filter((path) => path.state.status === 'done')
      .map((path): CatalogRefreshPath => {
        const events = path.steps.slice(1).map((step) => step.event)
        return {
          machine: 'catalog-refresh',
          profile,
          provided,
          name: `${profile.name}: ${describeEvents(events, 'stopped').replaceAll('fetchCatalog(', 'fetch(')}`,
          events,
          states: path.steps.map((step) => serializeCatalogRefreshState(step.state)),
          finalState: path.state,
        }
      }),
  )
}
