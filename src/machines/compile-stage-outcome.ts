// One classification of what a compile job's stage reported, on which the machine decides where the
// attempt goes next (one parameterised guard on its kind, as the turn does with
// `classifyModelOutput`) instead of re-checking the output in every branch.
import type { ActorFailure, BeginOutput, ParsedFile, ParseOutput, PublishOutput, StepOutput } from './compile-job-contract.ts'

export type StageOutcome =
  /** `begin` or `publish` found the job cancelled (the row says so): the attempt ends `cancelled`. */
  | { readonly kind: 'cancelled' }
  /** The actor reported an expected failure: the attempt fails with it. */
  | { readonly kind: 'failed'; readonly failure: ActorFailure }
  /** A model step made more calls than the budget had left: `budget_exceeded`. */
  | { readonly kind: 'overBudget'; readonly calls: number }
  /** Parsing found no file with a readable body: `no_readable_input`. */
  | { readonly kind: 'nothingReadable'; readonly files: ReadonlyArray<ParsedFile> }
  /** The job is running for this attempt. */
  | { readonly kind: 'begun' }
  /** Every file, with whether its body is readable (at least one is). */
  | { readonly kind: 'parsed'; readonly files: ReadonlyArray<ParsedFile> }
  /** A model step's text and the calls it made (0 when cached). */
  | { readonly kind: 'written'; readonly text: string; readonly calls: number }
  /** The pages are published and the job has succeeded. */
  | { readonly kind: 'published'; readonly artifacts: ReadonlyArray<string> }

export type StageOutcomeKind = StageOutcome['kind']

/** Only `begin` and `publish` read the job row, so only they can find it cancelled. */
function rowOutcome(output: ActorFailure): Extract<StageOutcome, { kind: 'cancelled' | 'failed' }> {
  return output.code === 'cancelled' ? { kind: 'cancelled' } : { kind: 'failed', failure: output }
}

export function classifyBegin(output: BeginOutput): Extract<StageOutcome, { kind: 'cancelled' | 'failed' | 'begun' }> {
  return output.ok ? { kind: 'begun' } : rowOutcome(output)
}

export function classifyParse(output: ParseOutput): Extract<StageOutcome, { kind: 'failed' | 'nothingReadable' | 'parsed' }> {
  if (!output.ok) return { kind: 'failed', failure: output }
  return output.files.some((file) => file.readable) ? { kind: 'parsed', files: output.files } : { kind: 'nothingReadable', files: output.files }
}

export function classifyStep(output: StepOutput, callsLeft: number): Extract<StageOutcome, { kind: 'failed' | 'overBudget' | 'written' }> {
  if (!output.ok) return { kind: 'failed', failure: output }
  return output.calls > callsLeft ? { kind: 'overBudget', calls: output.calls } : { kind: 'written', text: output.text, calls: output.calls }
}

export function classifyPublish(output: PublishOutput): Extract<StageOutcome, { kind: 'cancelled' | 'failed' | 'published' }> {
  return output.ok ? { kind: 'published', artifacts: output.artifacts } : rowOutcome(output)
}
