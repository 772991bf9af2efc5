// The compile job machine (SPEC §8): one attempt of a job, from its claim by a worker to its end.
//   queued (claim) → parsing (L2) → summarising (one file at a time) → overview (L1)
//   → abstract (L0) → publishing → succeeded | cancelled | queued again (retry) | failed (dead-lettered)
// It decides; the host's actors (supplied with `compileJobMachine.provide({ actors })`) do the
// I/O. Pure: it never imports src/effects/.
//
// Decisions worth knowing:
// - Budget: each model step reports how many calls it made (0 for a cached result); a step that
//   made more than the calls left fails `budget_exceeded`. Actors get `callsLeft` and refuse to
//   call a model when none is left.
// - Timeout: the attempt's wall-clock limit runs from the claim to the end of the abstract; when it
//   fires, the running stage is stopped (its model call aborted, its process tree killed).
// - Publishing is one transaction that also records the job's success; once it has started it is
//   not interrupted (cancel and shutdown are decided by the database row it locks).
// - Each stage's output is classified once (`StageOutcome`, compile-stage-outcome.ts: cancelled,
//   failed, over budget, nothing readable, or the stage's result) and kept in `context.outcome`;
//   the stage's eventless transitions choose on its kind with one parameterised guard, `outcomeIs`.
// - Failures are structured (stage, code, message, attempt, retryable, bodyReadable). A retryable
//   failure with attempts left ends the run `queued` (the queue retries it with backoff); otherwise
//   the job is dead-lettered (`failed`) with that failure as its last error.
import { assign, emit, fromPromise, setup } from 'xstate'
import {
  type AbstractInput,
  type ActorFailure,
  type BeginInput,
  type BeginOutput,
  COMPILE_ERROR_CODES,
  type CompileFailure,
  type CompileFailureStage,
  type CompileFileRef,
  type CompileJobEmitted,
  type CompileJobEvent,
  type CompileJobInput,
  type CompileJobOutput,
  type CompileProgress,
  type FileSummary,
  type OverviewInput,
  type ParsedFile,
  type ParseInput,
  type ParseOutput,
  type PublishInput,
  type PublishOutput,
  type StepOutput,
  type SummariseInput,
} from './compile-job-contract.ts'
import { classifyBegin, classifyParse, classifyPublish, classifyStep, type StageOutcome, type StageOutcomeKind } from './compile-stage-outcome.ts'

export interface CompileJobContext {
  readonly jobId: string
  readonly attempt: number
  readonly maxAttempts: number
  readonly files: ReadonlyArray<CompileFileRef>
  readonly callBudget: number
  readonly timeoutMs: number
  readonly stage: CompileFailureStage
  readonly callsUsed: number
  /** Set by `parse`: every file with whether its body is readable. */
  readonly parsed: ReadonlyArray<ParsedFile> | undefined
  readonly summaries: ReadonlyArray<FileSummary>
  readonly overview: string
  readonly abstract: string
  readonly artifacts: ReadonlyArray<string>
  readonly failure: CompileFailure | undefined
  readonly status: CompileJobOutput['status'] | undefined
  /** What the running stage's actor reported, classified once; undefined until it has. */
  readonly outcome: StageOutcome | undefined
}

function missingActor<TOutput, TInput>(name: string) {
  return fromPromise<TOutput, TInput>(async () => {
    throw new Error(`compile job actor "${name}" was not provided: use compileJobMachine.provide({ actors: { ${name} } })`)
  })
}

// ── pure context helpers ─────────────────────────────────────────────────────────────────

export function initialCompileJobContext(input: CompileJobInput): CompileJobContext {
  return {
    jobId: input.jobId,
    attempt: input.attempt,
    maxAttempts: Math.max(1, input.maxAttempts),
    files: input.files,
    callBudget: input.callBudget,
    timeoutMs: input.timeoutMs,
    stage: 'queued',
    callsUsed: 0,
    parsed: undefined,
    summaries: [],
    overview: '',
    abstract: '',
    artifacts: [],
    failure: undefined,
    status: undefined,
    outcome: undefined,
  }
}

export function readableFiles(context: CompileJobContext): ReadonlyArray<ParsedFile> {
  return (context.parsed ?? []).filter((file) => file.readable)
}

export function progressOf(context: CompileJobContext): CompileProgress {
  return {
    stage: context.stage,
    filesDone: context.summaries.length,
    filesTotal: context.parsed === undefined ? context.files.length : readableFiles(context).length,
    callsUsed: context.callsUsed,
    callBudget: context.callBudget,
  }
}

function callsLeft(context: CompileJobContext): number {
  return Math.max(0, context.callBudget - context.callsUsed)
}

/** The failure of the current stage; the bodies stay readable once parsing has saved them. */
export function failureOf(context: CompileJobContext, failure: Omit<ActorFailure, 'ok'>): CompileFailure {
  return {
    stage: context.stage,
    code: failure.code,
    message: failure.message,
    attempt: context.attempt,
    retryable: failure.retryable,
    bodyReadable: context.parsed !== undefined && readableFiles(context).length > 0,
  }
}

function crashFailure(context: CompileJobContext, actor: string, error: unknown): CompileFailure {
  const detail = error instanceof Error ? error.message : String(error)
  return failureOf(context, { code: COMPILE_ERROR_CODES.internal, message: `${actor} crashed: ${detail}`, retryable: true })
}

function budgetFailure(context: CompileJobContext, calls: number): CompileFailure {
  return failureOf(context, {
    code: COMPILE_ERROR_CODES.budgetExceeded,
    message: `the ${context.stage} step made ${calls} model call(s) with ${callsLeft(context)} of the budget of ${context.callBudget} left`,
    retryable: false,
  })
}

export function buildCompileJobOutput(context: CompileJobContext, status: CompileJobOutput['status'] | undefined): CompileJobOutput {
  const progress = progressOf(context)
  switch (status) {
    case 'succeeded':
      return { status, progress, artifacts: context.artifacts, skipped: (context.parsed ?? []).filter((file) => !file.readable) }
    case 'cancelled':
      return { status, progress }
    case 'queued':
    case 'failed':
    case undefined:
      return {
        status: status ?? 'failed',
        progress,
        failure: context.failure ?? failureOf(context, { code: COMPILE_ERROR_CODES.internal, message: 'the attempt ended without a result', retryable: false }),
      }
  }
}

/** The stage's outcome when it is of `kind`. */
function outcomeOf<K extends StageOutcomeKind>(context: CompileJobContext, kind: K): Extract<StageOutcome, { kind: K }> | undefined {
  return context.outcome?.kind === kind ? (context.outcome as Extract<StageOutcome, { kind: K }>) : undefined
}

// ── the machine ──────────────────────────────────────────────────────────────────────────

export const compileJobMachine = setup({
  types: {
    context: {} as CompileJobContext,
    events: {} as CompileJobEvent,
    input: {} as CompileJobInput,
    output: {} as CompileJobOutput,
    emitted: {} as CompileJobEmitted,
    children: {} as {
      begin: 'begin'
      parse: 'parse'
      summarise: 'summarise'
      overview: 'overview'
      abstract: 'abstract'
      publish: 'publish'
    },
  },
  actors: {
    begin: missingActor<BeginOutput, BeginInput>('begin'),
    parse: missingActor<ParseOutput, ParseInput>('parse'),
    summarise: missingActor<StepOutput, SummariseInput>('summarise'),
    overview: missingActor<StepOutput, OverviewInput>('overview'),
    abstract: missingActor<StepOutput, AbstractInput>('abstract'),
    publish: missingActor<PublishOutput, PublishInput>('publish'),
  },
  delays: {
    attemptTimeout: ({ context }) => context.timeoutMs,
  },
  guards: {
    canRetry: ({ context }) => context.failure?.retryable === true && context.attempt < context.maxAttempts,
    allSummarised: ({ context }) => context.summaries.length >= readableFiles(context).length,
    outcomeIs: ({ context }, params: { kind: StageOutcomeKind }) => context.outcome?.kind === params.kind,
  },
  actions: {
    /** A stage starts without an outcome (the previous stage's must not route this one). */
    enterStage: assign((_, params: { stage: CompileFailureStage }) => ({ stage: params.stage, outcome: undefined })),
    forgetOutcome: assign({ outcome: undefined }),
    emitProgress: emit(({ context }) => ({ type: 'progress' as const, ...progressOf(context) })),
    failWith: assign(({ context }, params: { code: string; message: string; retryable: boolean }) => ({
      failure: failureOf(context, params),
    })),
    failWithOutcome: assign(({ context }) => {
      const outcome = outcomeOf(context, 'failed')
      return outcome ? { failure: failureOf(context, outcome.failure) } : {}
    }),
    failOverBudget: assign(({ context }) => {
      const outcome = outcomeOf(context, 'overBudget')
      return outcome ? { failure: budgetFailure(context, outcome.calls) } : {}
    }),
    failNothingReadable: assign(({ context }) => {
      const outcome = outcomeOf(context, 'nothingReadable')
      if (!outcome) return {}
      return {
        parsed: outcome.files,
        failure: failureOf(context, {
          code: COMPILE_ERROR_CODES.noReadableInput,
          message: `none of the ${context.files.length} file(s) has a readable body: ${outcome.files.map((file) => `${file.name} (${file.reason ?? 'unreadable'})`).join('; ')}`,
          retryable: false,
        }),
      }
    }),
    keepParsed: assign(({ context }) => ({ parsed: outcomeOf(context, 'parsed')?.files ?? [] })),
    keepSummary: assign(({ context }) => {
      const outcome = outcomeOf(context, 'written')
      if (!outcome) return {}
      const file = readableFiles(context)[context.summaries.length]!
      return {
        callsUsed: context.callsUsed + outcome.calls,
        summaries: [...context.summaries, { nodeId: file.nodeId, uri: file.uri, name: file.name, summary: outcome.text }],
      }
    }),
    keepOverview: assign(({ context }) => {
      const outcome = outcomeOf(context, 'written')
      return outcome ? { overview: outcome.text, callsUsed: context.callsUsed + outcome.calls } : {}
    }),
    keepAbstract: assign(({ context }) => {
      const outcome = outcomeOf(context, 'written')
      return outcome ? { abstract: outcome.text, callsUsed: context.callsUsed + outcome.calls } : {}
    }),
    keepArtifacts: assign(({ context }) => ({ artifacts: outcomeOf(context, 'published')?.artifacts ?? [] })),
  },
}).createMachine({
  id: 'compileJob',
  context: ({ input }) => initialCompileJobContext(input),
  initial: 'queued',
  output: ({ context }) => buildCompileJobOutput(context, context.status),
  states: {
    queued: {
      on: {
        'job.cancel': { target: 'cancelled' },
        'job.interrupt': {
          target: 'failed',
          actions: { type: 'failWith', params: { code: COMPILE_ERROR_CODES.interrupted, message: 'the worker stopped before the job started', retryable: true } },
        },
      },
      invoke: {
        id: 'begin',
        src: 'begin',
        input: ({ context }) => ({ jobId: context.jobId, attempt: context.attempt }),
        onDone: { actions: assign({ outcome: ({ event }) => classifyBegin(event.output) }) },
        onError: { target: 'failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'begin', event.error) })) },
      },
      always: [
        { guard: { type: 'outcomeIs', params: { kind: 'cancelled' } }, target: 'cancelled' },
        { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: 'failed', actions: 'failWithOutcome' },
        { guard: { type: 'outcomeIs', params: { kind: 'begun' } }, target: 'running' },
      ],
    },
    running: {
      initial: 'parsing',
      after: {
        attemptTimeout: {
          target: 'failed',
          actions: assign(({ context }) => ({
            failure: failureOf(context, {
              code: COMPILE_ERROR_CODES.timeout,
              message: `the attempt ran past its timeout of ${Math.round(context.timeoutMs / 1000)} s during ${context.stage}`,
              retryable: true,
            }),
          })),
        },
      },
      on: {
        'job.cancel': { target: 'cancelled' },
        'job.interrupt': {
          target: 'failed',
          actions: assign(({ context, event }) => ({
            failure: failureOf(context, {
              code: COMPILE_ERROR_CODES.interrupted,
              message: event.reason === 'shutdown' ? `the worker stopped during ${context.stage}` : `the worker lost its claim on the job during ${context.stage}`,
              retryable: true,
            }),
          })),
        },
      },
      states: {
        parsing: {
          entry: [{ type: 'enterStage', params: { stage: 'parsing' } }, 'emitProgress'],
          invoke: {
            id: 'parse',
            src: 'parse',
            input: ({ context }) => ({ jobId: context.jobId, files: context.files }),
            onDone: { actions: assign({ outcome: ({ event }) => classifyParse(event.output) }) },
            onError: { target: '#compileJob.failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'parse', event.error) })) },
          },
          always: [
            { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: '#compileJob.failed', actions: 'failWithOutcome' },
            { guard: { type: 'outcomeIs', params: { kind: 'nothingReadable' } }, target: '#compileJob.failed', actions: 'failNothingReadable' },
            { guard: { type: 'outcomeIs', params: { kind: 'parsed' } }, target: 'summarising', actions: 'keepParsed' },
          ],
        },
        summarising: {
          entry: [{ type: 'enterStage', params: { stage: 'summarising' } }, 'emitProgress'],
          initial: 'nextFile',
          states: {
            nextFile: {
              always: [{ guard: 'allSummarised', target: '#compileJob.running.overview' }, { target: 'file' }],
            },
            file: {
              entry: 'forgetOutcome',
              invoke: {
                id: 'summarise',
                src: 'summarise',
                input: ({ context }) => ({
                  jobId: context.jobId,
                  file: readableFiles(context)[context.summaries.length]!,
                  callsLeft: callsLeft(context),
                }),
                onDone: { actions: assign({ outcome: ({ context, event }) => classifyStep(event.output, callsLeft(context)) }) },
                onError: { target: '#compileJob.failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'summarise', event.error) })) },
              },
              always: [
                { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: '#compileJob.failed', actions: 'failWithOutcome' },
                { guard: { type: 'outcomeIs', params: { kind: 'overBudget' } }, target: '#compileJob.failed', actions: 'failOverBudget' },
                { guard: { type: 'outcomeIs', params: { kind: 'written' } }, target: 'nextFile', actions: ['keepSummary', 'emitProgress'] },
              ],
            },
          },
        },
        overview: {
          entry: [{ type: 'enterStage', params: { stage: 'overview' } }, 'emitProgress'],
          invoke: {
            id: 'overview',
            src: 'overview',
            input: ({ context }) => ({ jobId: context.jobId, summaries: context.summaries, callsLeft: callsLeft(context) }),
            onDone: { actions: assign({ outcome: ({ context, event }) => classifyStep(event.output, callsLeft(context)) }) },
            onError: { target: '#compileJob.failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'overview', event.error) })) },
          },
          always: [
            { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: '#compileJob.failed', actions: 'failWithOutcome' },
            { guard: { type: 'outcomeIs', params: { kind: 'overBudget' } }, target: '#compileJob.failed', actions: 'failOverBudget' },
            { guard: { type: 'outcomeIs', params: { kind: 'written' } }, target: 'abstract', actions: 'keepOverview' },
          ],
        },
        abstract: {
          entry: [{ type: 'enterStage', params: { stage: 'abstract' } }, 'emitProgress'],
          invoke: {
            id: 'abstract',
            src: 'abstract',
            input: ({ context }) => ({ jobId: context.jobId, overview: context.overview, callsLeft: callsLeft(context) }),
            onDone: { actions: assign({ outcome: ({ context, event }) => classifyStep(event.output, callsLeft(context)) }) },
            onError: { target: '#compileJob.failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'abstract', event.error) })) },
          },
          always: [
            { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: '#compileJob.failed', actions: 'failWithOutcome' },
            { guard: { type: 'outcomeIs', params: { kind: 'overBudget' } }, target: '#compileJob.failed', actions: 'failOverBudget' },
            { guard: { type: 'outcomeIs', params: { kind: 'written' } }, target: '#compileJob.publishing', actions: 'keepAbstract' },
          ],
        },
      },
    },
    publishing: {
      entry: [{ type: 'enterStage', params: { stage: 'publishing' } }, 'emitProgress'],
      // One transaction that checks the job row itself: a cancel or a shutdown does not cut it short
      // (neither event has a transition here).
      invoke: {
        id: 'publish',
        src: 'publish',
        input: ({ context }) => ({
          jobId: context.jobId,
          attempt: context.attempt,
          summaries: context.summaries,
          overview: context.overview,
          abstract: context.abstract,
          skipped: (context.parsed ?? []).filter((file) => !file.readable),
          progress: progressOf(context),
        }),
        onDone: { actions: assign({ outcome: ({ event }) => classifyPublish(event.output) }) },
        onError: { target: 'failed', actions: assign(({ context, event }) => ({ failure: crashFailure(context, 'publish', event.error) })) },
      },
      always: [
        { guard: { type: 'outcomeIs', params: { kind: 'cancelled' } }, target: 'cancelled' },
        { guard: { type: 'outcomeIs', params: { kind: 'failed' } }, target: 'failed', actions: 'failWithOutcome' },
        { guard: { type: 'outcomeIs', params: { kind: 'published' } }, target: 'succeeded', actions: 'keepArtifacts' },
      ],
    },
    failed: {
      always: [{ guard: 'canRetry', target: 'requeued' }, { target: 'deadLettered' }],
    },
    /** Retry → queued: the queue runs the next attempt after its backoff. */
    requeued: { type: 'final', entry: assign({ status: 'queued' as const }) },
    deadLettered: { type: 'final', entry: assign({ status: 'failed' as const }) },
    succeeded: { type: 'final', entry: assign({ status: 'succeeded' as const }) },
    cancelled: { type: 'final', entry: assign({ status: 'cancelled' as const }) },
  },
})

export type CompileJobMachine = typeof compileJobMachine
