// How a compile step's engine fails (SPEC §8), one vocabulary for every engine: a public code, a
// message for people and whether another attempt may pass. A gateway model's failure is described
// once for every caller (`describeModelError`, src/effects/llm/model-failure.ts); the CLI runner
// fails with its `cli.*` codes (cli-runner.ts), the local thread with `local.failed`.
import * as Data from 'effect/Data'
import type { ModelError } from '../llm/model.ts'
import { describeModelError } from '../llm/model-failure.ts'

export class ChannelFailure extends Data.TaggedError('ChannelFailure')<{
  readonly code: string
  readonly message: string
  /** Worth another attempt (a timeout or a crash may pass; a refused model will not). */
  readonly retryable: boolean
}> {
  static fromModelError(error: ModelError): ChannelFailure {
    const { code, message, retryable } = describeModelError(error)
    return new ChannelFailure({ code, message, retryable })
  }
}
