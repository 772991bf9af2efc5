// The abstract model of a compile job's environment for model-based testing: which outcome each
// invoked actor may report in each resting state (the event alphabet), how snapshots are
// abstracted (serializeState), and the input profiles that make every branch reachable.
import { getSimplePaths } from '@xstate/graph'
import type { AnyStateMachine, SnapshotFrom } from 'xstate'
import {
  type ActorFailure,
  type CompileJobInput,
  compileJobMachine,
  type ParseOutput,
  type PublishOutput,
  type StepOutput,
} from '../machines/index.ts'
import { type ActorOutcomeEvent, crash, describeEvents, done, type MachinePath, narrowToProvided } from './paths.ts'

export type CompileJobSnapshot = SnapshotFrom<typeof compileJobMachine>

/** The delayed transition of the attempt's timeout, as xstate names its event. */
export const COMPILE_JOB_TIMEOUT_EVENT = 'xstate.after.attemptTimeout.compileJob.running'

/** The actors a host provides to the compile job machine. */
export const COMPILE_JOB_ACTORS = ['begin', 'parse', 'summarise', 'overview', 'abstract', 'publish'] as const
export type CompileJobActorId = (typeof COMPILE_JOB_ACTORS)[number]

export type CompileJobExternalEvent =
  | { readonly type: 'job.cancel'; readonly label: string }
  | { readonly type: 'job.interrupt'; readonly reason: 'shutdown' | 'claim_lost'; readonly label: string }
  | { readonly type: typeof COMPILE_JOB_TIMEOUT_EVENT; readonly label: string }
export type CompileJobPathEvent = ActorOutcomeEvent | CompileJobExternalEvent

export interface CompileJobAlphabet {
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

export interface CompileJobProfile {
  readonly name: string
  readonly input: CompileJobInput
  readonly alphabet: CompileJobAlphabet
}

// ── fixed outcomes ───────────────────────────────────────────────────────────────────────

export const COMPILE_JOB_FILES = [
  { nodeId: 'node-a', uri: 'kb://users/alice/notes/a.md', name: 'a.md' },
  { nodeId: 'node-b', uri: 'kb://users/alice/notes/b.pdf', name: 'b.pdf' },
  { nodeId: 'node-c', uri: 'kb://users/alice/notes/c.md', name: 'c.md' },
]

const failure = (code: string, retryable: boolean): ActorFailure => ({ ok: false, code, message: `${code} (scripted)`, retryable })

function stepDone(actor: string, label: string, calls: number): ActorOutcomeEvent {
  return done(actor, label, { ok: true, text: `${actor} text (${label})`, calls, cached: calls === 0 } satisfies StepOutput)
}

function failures(actor: string): ActorOutcomeEvent[] {
  return [done(actor, 'transient', failure('provider.connection', true)), done(actor, 'permanent', failure('provider.http', false)), crash(actor)]
}

const PARSED_SOME: ParseOutput = {
  ok: true,
  files: COMPILE_JOB_FILES.map((file) => (file.name === 'b.pdf' ? { ...file, readable: false, reason: 'encrypted PDF' } : { ...file, readable: true })),
}
const PARSED_NONE: ParseOutput = { ok: true, files: COMPILE_JOB_FILES.map((file) => ({ ...file, readable: false, reason: 'empty' })) }

function modelStepOutcomes({ actor, alphabet, callsLeft }: { actor: string; alphabet: CompileJobAlphabet; callsLeft: number }): ActorOutcomeEvent[] {
  return [
    stepDone(actor, 'one call', 1),
    ...(alphabet.cached ? [stepDone(actor, 'cached', 0)] : []),
    ...(alphabet.overspend ? [stepDone(actor, 'overspent', callsLeft + 1)] : []),
    ...(alphabet.failures ? failures(actor) : []),
  ]
}

// ── the alphabet: outcomes possible in each resting state ────────────────────────────────

export function compileJobEventsIn({ snapshot, profile }: { readonly snapshot: CompileJobSnapshot; readonly profile: CompileJobProfile }): CompileJobPathEvent[] {
  const { alphabet } = profile
  if (snapshot.status !== 'active') return []
  const callsLeft = snapshot.context.callBudget - snapshot.context.callsUsed
  const external = (running: boolean): CompileJobExternalEvent[] =>
    alphabet.external
      ? [
          { type: 'job.cancel', label: 'cancel' },
          { type: 'job.interrupt', reason: 'shutdown', label: 'shutdown' },
          ...(running ? [{ type: 'job.interrupt' as const, reason: 'claim_lost' as const, label: 'claim lost' }, { type: COMPILE_JOB_TIMEOUT_EVENT, label: 'timeout' } as const] : []),
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
export function serializeCompileJobState(snapshot: CompileJobSnapshot): string {
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

const BASE: CompileJobInput = { jobId: 'job-model', attempt: 1, maxAttempts: 3, files: COMPILE_JOB_FILES, callBudget: 8, timeoutMs: 60_000 }
const QUIET: CompileJobAlphabet = { failures: false, external: false, cached: false, overspend: false, nothingReadable: false }

export const COMPILE_JOB_PROFILES: ReadonlyArray<CompileJobProfile> = [
  { name: 'first attempt, every failure and interruption', input: BASE, alphabet: { ...QUIET, failures: true, external: true, nothingReadable: true } },
  { name: 'last attempt, every failure', input: { ...BASE, attempt: 3 }, alphabet: { ...QUIET, failures: true, external: true } },
  { name: 'a budget of two calls, cached and overspent steps', input: { ...BASE, callBudget: 2 }, alphabet: { ...QUIET, cached: true, overspend: true } },
]

export interface CompileJobPath extends MachinePath<'compile-job', CompileJobProfile, CompileJobPathEvent, CompileJobSnapshot> {
  readonly provided: ReadonlyArray<CompileJobActorId>
}

export interface CompileJobPathOptions {
  /** Default: every profile of COMPILE_JOB_PROFILES. */
  readonly profiles?: ReadonlyArray<CompileJobProfile>
  /** The actors you provide to `replay`: their outcomes in each path are left to them. */
  readonly provided?: ReadonlyArray<CompileJobActorId>
}

/** The graph steps with actor outcomes too, which the machine's own event type does not list. */
const steppedByOutcomes: AnyStateMachine = compileJobMachine

/** The simple paths of each profile's graph that end in a final state. */
export function compileJobPaths({ profiles = COMPILE_JOB_PROFILES, provided = [] }: CompileJobPathOptions = {}): CompileJobPath[] {
  return profiles.flatMap((profile) =>
    getSimplePaths(steppedByOutcomes, {
      input: profile.input,
      serializeState: (snapshot) => serializeCompileJobState(snapshot),
      events: (snapshot) => narrowToProvided(compileJobEventsIn({ snapshot, profile }), provided),
    })
      .filter((path) => path.state.status === 'done')
      .map((path): CompileJobPath => {
        const events = path.steps.slice(1).map((step) => step.event)
        const output = path.state.output
        return {
          machine: 'compile-job',
          profile,
          provided,
          name: `${profile.name}: ${describeEvents(events, `${output?.status}${output && 'failure' in output ? ` ${output.failure.code}` : ''}`).replaceAll(COMPILE_JOB_TIMEOUT_EVENT, 'after')}`,
          events,
          states: path.steps.map((step) => serializeCompileJobState(step.state)),
          finalState: path.state,
        }
      }),
  )
}
