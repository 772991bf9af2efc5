// Why a compile request is refused (compile-requests.ts). Each failure carries its public `code`
// and HTTP `status` (and, where the answer needs them, its headers and the fields it adds to the
// error body): the JSON API, the compile form and the task center answer with the same code
// (docs/api.md, Compile jobs). A file refused from a queue request is not an error but a refusal in
// the answer (`Refusal`): the request itself was taken.
import * as Data from 'effect/Data'
import type { JobStatus } from '../db/schema.ts'
import type { PublicConfiguration } from './compile-snapshot.ts'

/** The request does not decode, or names a field its channel does not use. HTTP 400. */
export class InvalidCompileRequest extends Data.TaggedError('InvalidCompileRequest')<{ readonly reason: string }> {
  readonly code = 'invalid_request'
  readonly status = 400
  override get message() {
    return this.reason
  }
}

/** More compile requests (queue, or a retry that queues work) than `limits.compileRequestsPerMinute` in 60 s. HTTP 429. */
export class CompileRateLimited extends Data.TaggedError('CompileRateLimited')<{ readonly limit: number; readonly retryAfterSeconds: number }> {
  readonly code = 'rate_limited'
  readonly status = 429
  override get message() {
    return `at most ${this.limit} compile requests per minute; retry in ${this.retryAfterSeconds} s`
  }
  get headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) }
  }
}

/** A retry while the caller already has `compile.queue.maxActiveJobsPerUser` jobs queued or running. HTTP 429. */
export class TooManyActiveJobs extends Data.TaggedError('TooManyActiveJobs')<{ readonly limit: number }> {
  readonly code = 'too_many_active_jobs'
  readonly status = 429
  override get message() {
    return `you have ${this.limit} compile jobs queued or running, the most one person may have; wait for some to finish or cancel them`
  }
}

/** No compile job with that id among the caller's (or not an id at all). HTTP 404. */
export class JobNotFound extends Data.TaggedError('JobNotFound')<{ readonly id: string }> {
  readonly code = 'job_not_found'
  readonly status = 404
  override get message() {
    return `no compile job ${this.id.slice(0, 64)}`
  }
}

/** Cancel of a job that has ended. HTTP 409. */
export class JobFinished extends Data.TaggedError('JobFinished')<{ readonly id: string; readonly jobStatus: JobStatus | undefined }> {
  readonly code = 'job_finished'
  readonly status = 409
  override get message() {
    return `job ${this.id} is ${this.jobStatus ?? 'gone'}; only a queued or running job can be cancelled`
  }
}

/** Retry of a job that is not failed or cancelled (`jobStatus`), or that changed while the retry ran (undefined). HTTP 409. */
export class JobNotRetryable extends Data.TaggedError('JobNotRetryable')<{ readonly id: string; readonly jobStatus: JobStatus | undefined }> {
  readonly code = 'job_not_retryable'
  readonly status = 409
  override get message() {
    return this.jobStatus === undefined
      ? `job ${this.id} changed meanwhile; reload and try again`
      : `job ${this.id} is ${this.jobStatus}; only a failed or cancelled job can be retried`
  }
}

/** Retry of a job whose stored configuration cannot be read. HTTP 409. */
export class UnreadableJobConfiguration extends Data.TaggedError('UnreadableJobConfiguration')<{ readonly id: string }> {
  readonly code = 'invalid_snapshot'
  readonly status = 409
  override get message() {
    return `job ${this.id} has no readable configuration snapshot`
  }
}

/** Retry of a job one of whose files another active job holds now; the answer says which job, and how it is configured. HTTP 409. */
export class ConflictingActiveJob extends Data.TaggedError('ConflictingActiveJob')<{ readonly holderId: string; readonly configuration: PublicConfiguration | undefined }> {
  readonly code = 'conflicting_active_job'
  readonly status = 409
  override get message() {
    return `job ${this.holderId} is compiling some of these files now; retry when it has finished`
  }
  /** Added to the error body: `{ code, message, job_id, configuration }`. */
  get details() {
    return { job_id: this.holderId, configuration: this.configuration }
  }
}

export type CompileRequestError =
  | InvalidCompileRequest
  | CompileRateLimited
  | JobNotFound
  | JobFinished
  | JobNotRetryable
  | TooManyActiveJobs
  | UnreadableJobConfiguration
  | ConflictingActiveJob
