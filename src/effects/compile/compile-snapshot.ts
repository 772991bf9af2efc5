// The configuration snapshot (SPEC §8): copied into the job when it is queued
// (`jobs.configuration_json`) and read back, validated, by every attempt and every retry — the
// server's configuration may have changed since, the job still runs as it was asked. What runs
// it (a model's endpoint and key, a CLI profile's argument vector) is looked up by id at run
// time, so an operator who removes a model or profile stops its jobs rather than leaving them
// running on a stale command line.
import { createHash } from 'node:crypto'
import * as Schema from 'effect/Schema'
import { PROMPT_VERSION } from './compile-prompts.ts'

export const SNAPSHOT_VERSION = 1

const Text = Schema.String.check(Schema.isMaxLength(4096))

export const CompileSnapshotSchema = Schema.Struct({
  version: Schema.Literal(SNAPSHOT_VERSION),
  channel: Schema.Literals(['llm', 'cli']),
  /** `llm`: the model's id in the registry; `cli`: the model passed as `{model}`. */
  modelId: Text,
  /** `cli` only. */
  profileId: Schema.NullOr(Text),
  reasoningLevel: Text,
  callBudget: Schema.Int.check(Schema.isGreaterThan(0)),
  timeoutSeconds: Schema.Int.check(Schema.isGreaterThan(0)),
  maxAttempts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 })),
  /** The directory the files come from. */
  source: Schema.Struct({ uri: Text, path: Schema.String }),
  /** Where summaries/, .overview.md and .abstract.md are written (the source directory by default). */
  artifactParent: Schema.Struct({
    uri: Text,
    path: Schema.String,
    /** Its node (absent in jobs queued before it was kept): pages follow it when it is moved, and are not written when it is gone. */
    id: Schema.optionalKey(Text),
  }),
  skill: Schema.NullOr(
    Schema.Struct({
      ref: Text,
      name: Text,
      description: Text,
      /** The instructions as they were when the job was queued. */
      body: Schema.String,
      sha256: Text,
    }),
  ),
})
export type CompileSnapshot = typeof CompileSnapshotSchema.Type

export function decodeSnapshot(value: unknown): CompileSnapshot {
  return Schema.decodeUnknownSync(CompileSnapshotSchema)(value, { errors: 'all', onExcessProperty: 'error' })
}

/** What people and programs see of a job's configuration (no skill body). */
export interface PublicConfiguration {
  readonly channel: 'llm' | 'cli'
  readonly model_id: string
  readonly profile_id: string | null
  readonly reasoning_level: string
  readonly call_budget: number
  readonly timeout_seconds: number
  readonly max_attempts: number
  readonly artifact_parent_uri: string
  readonly skill: { readonly ref: string; readonly name: string; readonly sha256: string } | null
}

export function toPublicConfiguration(snapshot: CompileSnapshot): PublicConfiguration {
  return {
    channel: snapshot.channel,
    model_id: snapshot.modelId,
    profile_id: snapshot.profileId,
    reasoning_level: snapshot.reasoningLevel,
    call_budget: snapshot.callBudget,
    timeout_seconds: snapshot.timeoutSeconds,
    max_attempts: snapshot.maxAttempts,
    artifact_parent_uri: snapshot.artifactParent.uri,
    skill: snapshot.skill ? { ref: snapshot.skill.ref, name: snapshot.skill.name, sha256: snapshot.skill.sha256 } : null,
  }
}

/** Two requests ask for the same job when everything but the source files is equal. */
export function sameConfiguration(a: CompileSnapshot, b: CompileSnapshot): boolean {
  return JSON.stringify(toPublicConfiguration(a)) === JSON.stringify(toPublicConfiguration(b)) && a.source.path === b.source.path
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/**
 * The cache key of one model step: the engine (model or CLI profile, model and reasoning level),
 * the prompt version and the exact request (instruction with the skill, and the material, which
 * holds the input body). Budget, timeout and attempts change no output and are not part of it.
 */
export function stepFingerprint({ engine, reasoningLevel, system, input, outputVersion }: { engine: string; reasoningLevel: string; system: string; input: string; outputVersion?: number | undefined }): string {
  // outputVersion only when the engine has one: every other fingerprint stays what it was
  return sha256(JSON.stringify({ prompt: PROMPT_VERSION, engine, reasoningLevel, system: sha256(system), input: sha256(input), ...(outputVersion === undefined ? {} : { outputVersion }) }))
}
