// The engines a compile step can write with (SPEC §8): a configured model through the model
// gateway (`llm`), the built-in local model (extractive, offline), or an operator's CLI profile
// (`cli`). Each call is an Effect whose interruption aborts the model request or kills the CLI's
// process tree. Expected failures are `ChannelFailure` (channel-failure.ts: data with a public code).
import * as Effect from 'effect/Effect'
import type { ChatModel } from '../llm/model.ts'
import { LOCAL_MODEL_ID } from '../llm/model-config.ts'
import { ChannelFailure } from './channel-failure.ts'
import { buildCliInvocation, runCliInvocation } from './cli-runner.ts'
import type { CliProfile } from './compile-config.ts'
import { cliPrompt, type CompileRequest } from './compile-prompts.ts'
import { compileLocally, LOCAL_COMPILE_VERSION } from './local-compile.ts'
import type { LocalCompiler } from './local-compile-thread.ts'

export interface CompileChannel {
  /** Which engine writes; part of every cache fingerprint (e.g. `llm:gpt-4o`, `cli:codex:o4:high`). */
  readonly engine: string
  /** How much source text one request may carry (code points). */
  readonly maxInputChars: number
  /** The version of an engine whose output changes with our code (the local model's pages): part of the fingerprint, so a new version writes again what an old one cached. */
  readonly outputVersion?: number | undefined
  readonly complete: (request: CompileRequest) => Effect.Effect<string, ChannelFailure>
}

/** Conservative: one code point may be a token (CJK), and the instruction and skill need room. */
export function maxInputCharsFor(model: Pick<ChatModel['info'], 'contextWindow' | 'maxOutputTokens'>): number {
  return Math.max(2_000, Math.min(200_000, model.contextWindow - model.maxOutputTokens - 6_000))
}

/**
 * A configured model through the gateway: the instruction as system message, the material as user
 * message, no tools; the job's reasoning level as `reasoning_effort` to a model that takes one.
 */
export function makeLlmChannel(model: ChatModel, reasoningLevel = ''): CompileChannel {
  const reasoningEffort = model.info.supportsReasoningEffort === true && reasoningLevel !== '' ? reasoningLevel : undefined
  return {
    engine: `llm:${model.info.id}`,
    maxInputChars: maxInputCharsFor(model.info),
    complete: (request) =>
      model.stream({ messages: [{ role: 'system', content: request.system }, { role: 'user', content: request.input }], reasoningEffort }).pipe(
        Effect.mapError(ChannelFailure.fromModelError),
        Effect.flatMap((result) => {
          if (result.finishReason === 'length') {
            return Effect.fail(new ChannelFailure({ code: 'model.cut_short', message: `the ${request.purpose} was cut short at the model's output limit`, retryable: false }))
          }
          if (result.finishReason === 'content_filter') {
            return Effect.fail(new ChannelFailure({ code: 'model.content_filter', message: `the provider's content filter stopped the ${request.purpose}`, retryable: false }))
          }
          const text = result.text.trim()
          return text === ''
            ? Effect.fail(new ChannelFailure({ code: 'model.empty', message: `the model wrote an empty ${request.purpose}`, retryable: true }))
            : Effect.succeed(text)
        }),
      ),
  }
}

/**
 * The built-in local model: extractive summaries, no network, no key. With `compiler` (the
 * server's compile worker passes its thread, local-compile-thread.ts) each step runs off the event
 * loop and interruption ends it; without one (tests, embedders) it runs here, synchronously.
 */
export function makeLocalChannel(compiler?: LocalCompiler): CompileChannel {
  return {
    engine: `llm:${LOCAL_MODEL_ID}`,
    maxInputChars: 400_000,
    outputVersion: LOCAL_COMPILE_VERSION,
    complete: (request) =>
      compiler
        ? Effect.tryPromise({
            try: (signal) => compiler.compile(request, signal),
            catch: (error) => new ChannelFailure({ code: 'local.failed', message: `the local model failed: ${error instanceof Error ? error.message : String(error)}`, retryable: true }),
          })
        : Effect.sync(() => compileLocally(request)),
  }
}

/** The channel for a gateway model: the local one is special-cased (it plans tool calls; it does not follow instructions). */
export function channelForModel(model: ChatModel, { localCompiler, reasoningLevel }: { localCompiler?: LocalCompiler | undefined; reasoningLevel?: string | undefined } = {}): CompileChannel {
  return model.info.id === LOCAL_MODEL_ID ? makeLocalChannel(localCompiler) : makeLlmChannel(model, reasoningLevel)
}

export function makeCliChannel({
  profile,
  model,
  reasoning,
  serverEnv,
  extraEnv,
}: {
  readonly profile: CliProfile
  readonly model: string
  readonly reasoning: string | undefined
  readonly serverEnv: Readonly<Record<string, string | undefined>>
  /** e.g. BAILIAN_WORKSPACE_ID for the job's owner (see CompileEnvironmentProvider). */
  readonly extraEnv?: Readonly<Record<string, string>>
}): CompileChannel {
  return {
    engine: `cli:${profile.id}:${model}:${reasoning ?? ''}`,
    maxInputChars: 100_000,
    complete: (request) =>
      Effect.suspend(() => {
        const invocation = buildCliInvocation({ profile, model, reasoning, serverEnv, extraEnv, prompt: cliPrompt(request) })
        return invocation instanceof ChannelFailure ? Effect.fail(invocation) : runCliInvocation(invocation)
      }),
  }
}
