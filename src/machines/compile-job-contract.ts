// The compile job machine's public contract (SPEC §8): its input, the actors a host provides
// (with their input and output), the events it accepts, what it emits, and its output.
// One run of the machine is one attempt of a job, from the moment a worker claimed it.

/** The stages of an attempt, in order; `queued` is the claim before the first stage. */
export const COMPILE_STAGES = ['parsing', 'summarising', 'overview', 'abstract', 'publishing'] as const
export type CompileStage = (typeof COMPILE_STAGES)[number]
export type CompileFailureStage = CompileStage | 'queued'

export interface CompileFileRef {
  readonly nodeId: string
  readonly uri: string
  readonly name: string
}

export interface CompileJobInput {
  readonly jobId: string
  /** 1-based attempt of this run. */
  readonly attempt: number
  /** Attempts allowed before the job is dead-lettered (≥ 1). */
  readonly maxAttempts: number
  readonly files: ReadonlyArray<CompileFileRef>
  /** Model calls this attempt may make (cached results cost none). */
  readonly callBudget: number
  /** Wall-clock limit of the attempt, from the claim. */
  readonly timeoutMs: number
}

export interface CompileProgress {
  readonly stage: CompileFailureStage
  readonly filesDone: number
  readonly filesTotal: number
  readonly callsUsed: number
  readonly callBudget: number
}

/** Why an attempt failed: shown to people as is. */
export interface CompileFailure {
  readonly stage: CompileFailureStage
  readonly code: string
  readonly message: string
  readonly attempt: number
  readonly retryable: boolean
  /** The parsed bodies (L2) were saved and stay readable; only a semantic step failed. */
  readonly bodyReadable: boolean
}

/** An expected failure reported by an actor (data, not a crash). */
export interface ActorFailure {
  readonly ok: false
  readonly code: string
  readonly message: string
  readonly retryable: boolean
}

// ── actors ────────────────────────────────────────────────────────────────────────────────

/** `begin`: mark the job running for this attempt; refuses a job cancelled meanwhile. */
export interface BeginInput {
  readonly jobId: string
  readonly attempt: number
}
export type BeginOutput = { readonly ok: true } | ActorFailure

/** `parse`: make sure each file has its parsed body (L2) saved. */
export interface ParseInput {
  readonly jobId: string
  readonly files: ReadonlyArray<CompileFileRef>
}
export interface ParsedFile extends CompileFileRef {
  readonly readable: boolean
  /** Why the file has no readable body (it is skipped). */
  readonly reason?: string | undefined
}
export type ParseOutput = { readonly ok: true; readonly files: ReadonlyArray<ParsedFile> } | ActorFailure

/** A model step's result; `calls` is how many model calls it made (0 when cached). */
export interface StepResult {
  readonly ok: true
  readonly text: string
  readonly calls: number
  readonly cached: boolean
}
export type StepOutput = StepResult | ActorFailure

/** `summarise`: one file's summary. */
export interface SummariseInput {
  readonly jobId: string
  readonly file: CompileFileRef
  readonly callsLeft: number
}

export interface FileSummary {
  readonly nodeId: string
  readonly uri: string
  readonly name: string
  readonly summary: string
}

/** `overview`: the directory overview (L1) from the summaries. */
export interface OverviewInput {
  readonly jobId: string
  readonly summaries: ReadonlyArray<FileSummary>
  readonly callsLeft: number
}

/** `abstract`: the directory abstract (L0) from the overview. */
export interface AbstractInput {
  readonly jobId: string
  readonly overview: string
  readonly callsLeft: number
}

/** `publish`: every artifact as a new version, in one transaction, with the job's success. */
export interface PublishInput {
  readonly jobId: string
  readonly attempt: number
  readonly summaries: ReadonlyArray<FileSummary>
  readonly overview: string
  readonly abstract: string
  readonly skipped: ReadonlyArray<ParsedFile>
  readonly progress: CompileProgress
}
export type PublishOutput = { readonly ok: true; readonly artifacts: ReadonlyArray<string> } | ActorFailure

// ── events in ─────────────────────────────────────────────────────────────────────────────

export type CompileJobEvent =
  /** A person cancelled the job: the running stage is stopped, nothing is published. */
  | { readonly type: 'job.cancel' }
  /** The worker is stopping (or lost its claim): the attempt ends and the job is released for retry. */
  | { readonly type: 'job.interrupt'; readonly reason: 'shutdown' | 'claim_lost' }

// ── events out (xstate `emit`) ────────────────────────────────────────────────────────────

export type CompileJobEmitted = { readonly type: 'progress' } & CompileProgress

// ── output ────────────────────────────────────────────────────────────────────────────────

export type CompileJobOutput =
  | {
      readonly status: 'succeeded'
      readonly progress: CompileProgress
      readonly artifacts: ReadonlyArray<string>
      readonly skipped: ReadonlyArray<ParsedFile>
    }
  /** Retry → queued: the attempt failed and another is allowed. */
  | { readonly status: 'queued'; readonly progress: CompileProgress; readonly failure: CompileFailure }
  /** Dead-lettered with the last error: no attempt left, or a failure retrying cannot mend. */
  | { readonly status: 'failed'; readonly progress: CompileProgress; readonly failure: CompileFailure }
  | { readonly status: 'cancelled'; readonly progress: CompileProgress }

export type CompileJobStatus = CompileJobOutput['status']

/** Failure codes the machine itself produces (actors report their own). */
export const COMPILE_ERROR_CODES = {
  timeout: 'timeout',
  interrupted: 'interrupted',
  noReadableInput: 'no_readable_input',
  budgetExceeded: 'budget_exceeded',
  internal: 'internal_error',
} as const
