// The abstract model of a compile job's environment for model-based testing: which outcome each
// invoked actor may report in each resting state (the event alphabet), how snapshots are
// abstracted (serializeState), and the input profiles that make every branch reachable.
import { getSimplePaths } from '@xstate/graph'
import type { AnyEventObject, SnapshotFrom } from 'xstate'
import {
  type ActorFailure,
  type CompileJobInput,
  compileJobMachine,
  type ParseOutput,
  type PublishOutput,
  type StepOutput,
} from '../../src/machines/index.ts'

export type CompileSnapshot = SnapshotFrom<typeof compileJobMachine>

/** The delayed transition of the attempt's timeout, as xstate names its event. */
export const TIMEOUT_EVENT = 'xstate.after.attemptTimeout.compileJob.running'

export type OutcomeEvent =
  | { readonly type: `xstate.done.actor.${string}`; readonly output: unknown; readonly label: string }
  | { readonly type: `xstate.error.actor.${string}`; readonly error: Error; readonly label: string }
export type ExternalEvent =
  | { readonly type: 'job.cancel'; readonly label: string }
  | { readonly type: 'job.interrupt'; readonly reason: 'shutdown' | 'claim_lost'; readonly label: string }
  | { readonly type: typeof TIMEOUT_EVENT; readonly label: string }
export type GraphEvent = OutcomeEvent | ExternalEvent

export interface Alphabet {
  /** The expected failures (retryable and not) and crashes of every actor. */
  readonly failures: boolean
  /** Cancel, interrupt (shutdown and lost claim) and the timeout. */
  readonly external: boolean
  /** Model steps may report a cached result (0 calls). */
  readonly cached: boolean
  /** A model step may overspend the calls left. */
  readonly overspend: boolean
  /** Parsing may find no readable file. */
  readonly nothingReadable: boolean
}

export interface Profile {
  readonly name: string
  readonly input: CompileJobInput
  readonly alphabet: Alphabet
}

// ── fixed outcomes ───────────────────────────────────────────────────────────────────────

export const FILES = [
  { nodeId: 'node-a', uri: 'kb://users/alice/notes/a.md', name: 'a.md' },
  { nodeId: 'node-b', uri: 'kb://users/alice/notes/b.pdf', name: 'b.pdf' },
  { nodeId: 'node-c', uri: 'kb://users/alice/notes/c.md', name: 'c.md' },
]

function done(actor: string, label: string, output: unknown): OutcomeEvent {
  return { type: `xstate.done.actor.${actor}`, output, label }
}

function crash(actor: string): OutcomeEvent {
  return { type: `xstate.error.actor.${actor}`, error: new Error(`${actor} crashed`), label: 'crash' }
}

const failure = (code: string, retryable: boolean): ActorFailure => ({ ok: false, code, message: `${code} (scripted)`, retryable })

function stepDone(actor: string, label: string, calls: number): OutcomeEvent {
  return done(actor, label, { ok: true, text: `${actor} text (${label})`, calls, cached: calls === 0 } satisfies StepOutput)
}

function failures(actor: string): OutcomeEvent[] {
  return [done(actor, 'transient', failure('provider.connection', true)), done(actor, 'permanent', failure('provider.http', false)), crash(actor)]
}

const PARSED_SOME: ParseOutput = {
  ok: true,
  files: FILES.map((file) => (file.name === 'b.pdf' ? { ...file, readable: false, reason: 'encrypted PDF' } : { ...file, readable: true })),
}
const PARSED_NONE: ParseOutput = { ok: true, files: FILES.map((file) => ({ ...file, readable: false, reason: 'empty' })) }

function modelStepOutcomes({ actor, alphabet, callsLeft }: { actor: string; alphabet: Alphabet; callsLeft: number }): OutcomeEvent[] {
  return [
    stepDone(actor, 'one call', 1),
    ...(alphabet.cached ? [stepDone(actor, 'cached', 0)] : []),
    ...(alphabet.overspend ? [stepDone(actor, 'overspent', callsLeft + 1)] : []),
    ...(alphabet.failures ? failures(actor) : []),
  ]
}

// ── the alphabet: outcomes possible in each resting state ────────────────────────────────

export function outcomesIn({ snapshot, profile }: { readonly snapshot: CompileSnapshot; readonly profile: Profile }): GraphEvent[] {
  const { alphabet } = profile
  if (snapshot.status !== 'active') return []
  const callsLeft = snapshot.context.callBudget - snapshot.context.callsUsed
  const external = (running: boolean): ExternalEvent[] =>
    alphabet.external
      ? [
          { type: 'job.cancel', label: 'cancel' },
          { type: 'job.interrupt', reason: 'shutdown', label: 'shutdown' },
          ...(running ? [{ type: 'job.interrupt' as const, reason: 'claim_lost' as const, label: 'claim lost' }, { type: TIMEOUT_EVENT, label: 'timeout' } as const] : []),
        ]
      : []
  if (snapshot.matches('queued')) {
    return [
      done('begin', 'claimed', { ok: true }),
      ...(alphabet.failures ? [done('begin', 'cancelled meanwhile', failure('cancelled', false)), done('begin', 'refused', failure('job_missing', false)), crash('begin')] : []),
      ...external(false),
    ]
  }
  if (snapshot.matches({ running: 'parsing' })) {
    return [
      done('parse', 'some readable', PARSED_SOME),
      ...(alphabet.nothingReadable ? [done('parse', 'nothing readable', PARSED_NONE)] : []),
      ...(alphabet.failures ? failures('parse') : []),
      ...external(true),
    ]
  }
  if (snapshot.matches({ running: { summarising: 'file' } })) {
    return [...modelStepOutcomes({ actor: 'summarise', alphabet, callsLeft }), ...external(true)]
  }
  if (snapshot.matches({ running: 'overview' })) return [...modelStepOutcomes({ actor: 'overview', alphabet, callsLeft }), ...external(true)]
  if (snapshot.matches({ running: 'abstract' })) return [...modelStepOutcomes({ actor: 'abstract', alphabet, callsLeft }), ...external(true)]
  if (snapshot.matches('publishing')) {
    return [
      done('publish', 'published', { ok: true, artifacts: ['kb://users/alice/notes/.overview.md'] } satisfies PublishOutput),
      ...(alphabet.failures ? [done('publish', 'row cancelled', failure('cancelled', false)), ...failures('publish')] : []),
    ]
  }
  return []
}

// ── abstraction ──────────────────────────────────────────────────────────────────────────

/** Counters are kept only as far as decisions depend on them (calls left capped at 2). */
export function serializeCompileState(snapshot: CompileSnapshot): string {
  const { context } = snapshot
  return JSON.stringify({
    value: snapshot.value,
    status: snapshot.status,
    filesDone: context.summaries.length,
    callsLeft: Math.min(2, context.callBudget - context.callsUsed),
    failure: context.failure?.code,
  })
}

// ── profiles ─────────────────────────────────────────────────────────────────────────────

const BASE: CompileJobInput = { jobId: 'job-model', attempt: 1, maxAttempts: 3, files: FILES, callBudget: 8, timeoutMs: 60_000 }
const QUIET: Alphabet = { failures: false, external: false, cached: false, overspend: false, nothingReadable: false }

export const PROFILES: ReadonlyArray<Profile> = [
  { name: 'first attempt, every failure and interruption', input: BASE, alphabet: { ...QUIET, failures: true, external: true, nothingReadable: true } },
  { name: 'last attempt, every failure', input: { ...BASE, attempt: 3 }, alphabet: { ...QUIET, failures: true, external: true } },
  { name: 'a budget of two calls, cached and overspent steps', input: { ...BASE, callBudget: 2 }, alphabet: { ...QUIET, cached: true, overspend: true } },
]

export interface GraphPath {
  readonly events: ReadonlyArray<GraphEvent>
  readonly states: ReadonlyArray<string>
  readonly finalState: CompileSnapshot
}

/** Simple paths of the profile's graph that end in a final state. */
export function compilePaths(profile: Profile): GraphPath[] {
  const paths = getSimplePaths(compileJobMachine, {
    input: profile.input,
    serializeState: (snapshot) => serializeCompileState(snapshot),
    events: (snapshot) => outcomesIn({ snapshot, profile }) as unknown as AnyEventObject[] as never,
  })
  return paths
    .filter((path) => path.state.status === 'done')
    .map((path) => ({
      events: path.steps.slice(1).map((step) => step.event as unknown as GraphEvent),
      states: path.steps.map((step) => serializeCompileState(step.state)),
      finalState: path.state,
    }))
}
