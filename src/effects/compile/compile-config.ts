// The compile part of the operator's config file (SPEC §8, docs/compile.md): CLI profiles (fixed
// argument vectors the user only picks among), the default compile parameters, and the queue and
// worker settings. Decoded with the rest of the file by src/effects/config/app-config.ts.
import * as Schema from 'effect/Schema'

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

export const MODEL_PLACEHOLDER = '{model}'
export const REASONING_PLACEHOLDER = '{reasoning}'
const PLACEHOLDERS = [MODEL_PLACEHOLDER, REASONING_PLACEHOLDER]

const ProfileId = Schema.String.check(
  Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/, { message: 'a profile id is 1–64 lowercase letters, digits, "-" or "_"' }),
)

const NonBlank = Schema.String.check(Schema.makeFilter((value: string) => (value.trim() === '' ? 'must not be blank' : undefined)))

/** Anything execve can carry: a NUL would cut the argument short. */
const Argument = Schema.String.check(
  Schema.makeFilter((value: string) => (value.includes('\u0000') ? 'an argument cannot contain NUL' : undefined)),
)

/** A placeholder is a whole argument or absent: `--model={model}` would be ambiguous, and is refused. */
const CommandArgument = Argument.check(
  Schema.makeFilter((value: string) => {
    if (PLACEHOLDERS.includes(value)) return undefined
    const embedded = PLACEHOLDERS.find((placeholder) => value.includes(placeholder))
    return embedded ? `${embedded} must be a whole argument of its own (write "--model", "${embedded}" as two arguments)` : undefined
  }),
)

const EnvName = Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'an environment variable name' }))

export const CliProfileSchema = Schema.Struct({
  id: ProfileId,
  name: NonBlank,
  /** The argument vector: the first element is the program (an absolute path, or a name looked up on PATH), never a shell string. */
  command: Schema.NonEmptyArray(CommandArgument).check(
    Schema.makeFilter((command: ReadonlyArray<string>) =>
      PLACEHOLDERS.includes(command[0]!) || command[0]!.trim() === '' ? { path: [0], issue: 'the program must be fixed (not a placeholder, not blank)' } : undefined,
    ),
  ),
  /** The models a user may pick for this profile; `{model}` is replaced by the one picked. */
  models: Schema.NonEmptyArray(Argument.check(Schema.isMinLength(1))),
  /** The reasoning levels a user may pick; `{reasoning}` is replaced by the one picked. */
  reasoningLevels: Schema.optionalKey(Schema.Array(Argument.check(Schema.isMinLength(1)))),
  /** Names of server environment variables passed to the program; nothing else is. */
  env: Schema.optionalKey(Schema.Array(EnvName)),
  /** Per invocation; the whole process tree is killed when it runs out. Default 300. */
  timeoutSeconds: Schema.optionalKey(PositiveInt),
  /** Working directory; default: a fresh empty temporary directory per invocation. */
  cwd: Schema.optionalKey(NonBlank),
  /** Largest answer read from stdout, in bytes. Default 1 MiB. */
  maxOutputBytes: Schema.optionalKey(PositiveInt),
})
export type CliProfile = typeof CliProfileSchema.Type

export const CliProfilesSchema = Schema.Array(CliProfileSchema).check(
  Schema.makeFilter((profiles: ReadonlyArray<CliProfile>) => {
    const seen = new Set<string>()
    for (const [index, profile] of profiles.entries()) {
      if (seen.has(profile.id)) return { path: [index, 'id'], issue: `duplicate profile id "${profile.id}"` }
      seen.add(profile.id)
    }
    return undefined
  }),
)

export const REASONING_LEVELS = ['low', 'medium', 'high'] as const

export const CompileSettingsSchema = Schema.Struct({
  /** Defaults shown in the form and used when a request leaves a parameter out. */
  defaults: Schema.optionalKey(
    Schema.Struct({
      modelId: Schema.optionalKey(NonBlank),
      reasoningLevel: Schema.optionalKey(NonBlank),
      callBudget: Schema.optionalKey(PositiveInt),
      timeoutSeconds: Schema.optionalKey(PositiveInt),
      maxAttempts: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 }))),
    }),
  ),
  /** Queue and worker timing (seconds). */
  queue: Schema.optionalKey(
    Schema.Struct({
      /** Jobs one worker process runs at a time. Default 2. */
      concurrency: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 32 }))),
      /** Jobs of one person running at once across every worker, so that one person cannot hold every slot. Default 1. */
      perUserConcurrency: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 32 }))),
      /** Queued and running jobs one person may have at once; a request past it is refused `too_many_active_jobs`. Default 20. */
      maxActiveJobsPerUser: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 }))),
      /** A claimed job whose worker sent no heartbeat for this long is taken over. Default 30, at least 10. */
      heartbeatSeconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(10))),
      /** First retry delay; doubles with each attempt (with jitter). Default 5. */
      retryDelaySeconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
      /** How often a worker looks for queued jobs when no notification came. Default 2. */
      pollingIntervalSeconds: Schema.optionalKey(Schema.Number.check(Schema.isGreaterThanOrEqualTo(0.5))),
      /** Run workers inside `knowagent serve` (default true); false leaves jobs to `knowagent worker` processes. */
      inServe: Schema.optionalKey(Schema.Boolean),
    }),
  ),
})
export type CompileSettings = typeof CompileSettingsSchema.Type

/** The resolved defaults of every compile parameter. */
export interface CompileDefaults {
  readonly modelId: string
  readonly reasoningLevel: string
  readonly callBudget: number
  readonly timeoutSeconds: number
  readonly maxAttempts: number
}

export const MAX_CALL_BUDGET = 256
export const MAX_TIMEOUT_SECONDS = 6 * 60 * 60
export const MIN_TIMEOUT_SECONDS = 30
/** Files one compile request may queue (the rest of its URIs are refused `over_limit`)… */
export const MAX_COMPILE_FILES = 32
/** …and URIs it may name at all. */
export const MAX_REQUEST_URIS = 256

export function resolveCompileDefaults({ settings, firstModelId }: { settings: CompileSettings | undefined; firstModelId: string }): CompileDefaults {
  const defaults = settings?.defaults
  return {
    modelId: defaults?.modelId ?? firstModelId,
    reasoningLevel: defaults?.reasoningLevel ?? 'medium',
    callBudget: Math.min(MAX_CALL_BUDGET, defaults?.callBudget ?? 40),
    timeoutSeconds: Math.min(MAX_TIMEOUT_SECONDS, defaults?.timeoutSeconds ?? 600),
    maxAttempts: defaults?.maxAttempts ?? 3,
  }
}

export interface QueueSettings {
  readonly concurrency: number
  readonly perUserConcurrency: number
  readonly maxActiveJobsPerUser: number
  readonly heartbeatSeconds: number
  readonly retryDelaySeconds: number
  readonly pollingIntervalSeconds: number
  readonly inServe: boolean
}

export function resolveQueueSettings(settings: CompileSettings | undefined): QueueSettings {
  const queue = settings?.queue
  return {
    concurrency: queue?.concurrency ?? 2,
    perUserConcurrency: queue?.perUserConcurrency ?? 1,
    maxActiveJobsPerUser: queue?.maxActiveJobsPerUser ?? 20,
    heartbeatSeconds: queue?.heartbeatSeconds ?? 30,
    retryDelaySeconds: queue?.retryDelaySeconds ?? 5,
    pollingIntervalSeconds: queue?.pollingIntervalSeconds ?? 2,
    inServe: queue?.inServe ?? true,
  }
}

/** What the browser and API may see of a profile: never the command line, environment or directory. */
export interface CliProfileInfo {
  readonly id: string
  readonly name: string
  readonly models: ReadonlyArray<string>
  readonly reasoning_levels: ReadonlyArray<string>
  readonly timeout_seconds: number
}

export const DEFAULT_CLI_TIMEOUT_SECONDS = 300

export function toCliProfileInfo(profile: CliProfile): CliProfileInfo {
  return {
    id: profile.id,
    name: profile.name,
    models: profile.models,
    reasoning_levels: profile.reasoningLevels ?? [],
    timeout_seconds: profile.timeoutSeconds ?? DEFAULT_CLI_TIMEOUT_SECONDS,
  }
}
