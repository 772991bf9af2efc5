// The engines a compile step can write with (SPEC §8): a configured model through the model
// gateway (`llm`), the built-in local model (extractive, offline), or an operator's CLI profile
// (`cli`). Each call is an Effect whose interruption aborts the model request or kills the CLI's
// process tree. Expected failures are `ChannelFailure` (data with a public code).
import * as Data from 'effect/Data'
import * as Effect from 'effect/Effect'
import type { ChatModel, ModelError } from '../llm/model.ts'
import { LOCAL_MODEL_ID } from '../llm/model-config.ts'
import { buildCliInvocation, CliFailure, runCliInvocation } from './cli-runner.ts'
import type { CliProfile } from './compile-config.ts'
import { cliPrompt, type CompileRequest } from './compile-prompts.ts'
import { compileLocally } from './local-compile.ts'
import type { LocalCompiler } from './local-compile-thread.ts'

export class ChannelFailure extends Data.TaggedError('ChannelFailure')<{
  readonly code: string
  readonly message: string
  readonly retryable: boolean
}> {}

export interface CompileChannel {
  /** Which engine writes; part of every cache fingerprint (e.g. `llm:gpt-4o`, `cli:codex:o4:high`). */
  readonly engine: string
  /** How much source text one request may carry (code points). */
  readonly maxInputChars: number
  readonly complete: (request: CompileRequest) => Effect.Effect<string, ChannelFailure>
}

/** Conservative: one code point may be a token (CJK), and the instruction and skill need room. */
export function maxInputCharsFor(model: Pick<ChatModel['info'], 'contextWindow' | 'maxOutputTokens'>): number {
  return Math.max(2_000, Math.min(200_000, model.contextWindow - model.maxOutputTokens - 6_000))
}

export function modelFailure(error: ModelError): ChannelFailure {
  switch (error._tag) {
    case 'ProviderHttpError':
      return new ChannelFailure({
        code: 'provider.http',
        message: `the model provider answered HTTP ${error.status}${error.code ? ` (${error.code})` : ''}: ${error.message}`,
        retryable: error.status === 429 || error.status >= 500,
      })
    case 'ProviderConnectionError':
      return new ChannelFailure({ code: 'provider.connection', message: `could not reach the model provider: ${error.message}`, retryable: true })
    case 'ProviderStreamError':
      return new ChannelFailure({ code: 'provider.stream_error', message: `the model provider reported an error: ${error.message}`, retryable: true })
    case 'StreamIncomplete':
      return new ChannelFailure({ code: 'provider.incomplete', message: `incomplete model response: ${error.message}`, retryable: true })
    case 'StreamIdleTimeout':
      return new ChannelFailure({ code: 'provider.idle_timeout', message: `the model sent nothing for ${error.idleMs} ms`, retryable: true })
    case 'ProviderProtocolError':
      return new ChannelFailure({ code: 'provider.protocol', message: `unreadable model response: ${error.message}`, retryable: true })
    case 'MissingApiKey':
      return new ChannelFailure({
        code: 'provider.missing_api_key',
        message: `model "${error.modelId}" has no API key: set ${error.envName} on the server and restart it`,
        retryable: false,
      })
  }
  const unknown: { readonly _tag: string; readonly message?: string } = error
  return new ChannelFailure({ code: 'provider.error', message: unknown.message ?? unknown._tag, retryable: true })
}

/** A configured model through the gateway: the instruction as system message, the material as user message, no tools. */
export function makeLlmChannel(model: ChatModel): CompileChannel {
  return {
    engine: `llm:${model.info.id}`,
    maxInputChars: maxInputCharsFor(model.info),
    complete: (request) =>
      model.stream({ messages: [{ role: 'system', content: request.system }, { role: 'user', content: request.input }] }).pipe(
        Effect.mapError(modelFailure),
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
export function channelForModel(model: ChatModel, localCompiler?: LocalCompiler): CompileChannel {
  return model.info.id === LOCAL_MODEL_ID ? makeLocalChannel(localCompiler) : makeLlmChannel(model)
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
        return invocation instanceof CliFailure ? Effect.fail(invocation) : runCliInvocation(invocation)
      }).pipe(Effect.mapError((failure) => new ChannelFailure({ code: failure.code, message: failure.message, retryable: failure.retryable }))),
  }
}
