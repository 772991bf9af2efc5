// Why a queue request's files are refused (compile-requests.ts): the configuration it asks for is
// resolved once (the snapshot's base) against the models, CLI profiles and skills of this server and
// the caller's artifact parent; each URI must name a visible raw file of one directory; and the
// snapshot must be one a job can store. A refusal is data in the answer, per URI: the request itself
// was taken (and counted).
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { ModelRegistry } from '../llm/model-registry.ts'
import { resolveNode } from '../workspace/resolve.ts'
import type { WorkspaceNode } from '../workspace/store.ts'
import type { Owner } from '../db/schema.ts'
import { getNode } from '../workspace/store.ts'
import { MAX_URI_LENGTH, pathToSegments } from '../workspace/uri.ts'
import { type CliProfile, type CompileDefaults, MAX_CALL_BUDGET, MAX_COMPILE_FILES, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS, REASONING_LEVELS } from './compile-config.ts'
import { type CompileSnapshot, decodeSnapshot, type PublicConfiguration, SNAPSHOT_VERSION } from './compile-snapshot.ts'
import { DEFAULT_SKILL, resolveSkill, type Skill, USER_SKILLS_DIR } from './skills.ts'

export type RefusalCode =
  | 'not_visible'
  | 'not_raw'
  | 'generated_artifact'
  | 'over_limit'
  | 'duplicate'
  | 'other_directory'
  | 'conflicting_active_job'
  | 'too_many_active_jobs'
  | 'unknown_model'
  | 'unknown_profile'
  | 'model_not_allowed'
  | 'reasoning_not_allowed'
  | 'unknown_skill'
  | 'invalid_parent'
  | 'invalid_configuration'

export interface Refusal {
  readonly uri: string
  readonly code: RefusalCode
  readonly message: string
  /** `conflicting_active_job`: the job that holds the file, and how it was configured. */
  readonly job_id?: string | undefined
  readonly configuration?: PublicConfiguration | undefined
}

/** The configuration a queue request asks for, in our words (absent: the default). */
export interface AskedConfiguration {
  readonly channel: 'llm' | 'cli'
  readonly modelId?: string | undefined
  readonly profileId?: string | undefined
  readonly reasoningLevel?: string | undefined
  readonly callBudget?: number | undefined
  readonly timeoutSeconds?: number | undefined
  readonly artifactParentUri?: string | undefined
  /** A bundled skill's name, or `user:<name>` for one of the caller's own; '' for none. */
  readonly skill?: string | undefined
}

/** What the checks read: this server's models, CLI profiles, defaults and skills, and the caller's tree. */
export interface RefusalContext {
  readonly db: Kysely<DB>
  readonly models: ModelRegistry
  readonly cliProfiles: ReadonlyArray<CliProfile>
  readonly defaults: CompileDefaults
  readonly bundledSkills: ReadonlyArray<Skill>
}

/** A configuration resolved into the snapshot's base and the artifact parent (absent: the source directory), or why it cannot be. */
export type Resolved = { ok: true; snapshotBase: Omit<CompileSnapshot, 'source' | 'artifactParent'>; parent: WorkspaceNode | undefined } | { ok: false; code: RefusalCode; message: string }

/** The configuration `params` asks for, resolved once into the snapshot's base (and the artifact parent), or why it cannot be. */
export async function resolveConfiguration(options: RefusalContext, caller: Owner, params: AskedConfiguration): Promise<Resolved> {
  const { defaults } = options
  let modelId: string
  let profileId: string | null = null
  let reasoningLevel: string
  if (params.channel === 'llm') {
    modelId = params.modelId ?? defaults.modelId
    const model = options.models.list().find((candidate) => candidate.id === modelId)
    if (!model) return { ok: false, code: 'unknown_model', message: `unknown model "${modelId}"; GET options lists the models` }
    const takesReasoning = model.supportsReasoningEffort === true
    reasoningLevel = params.reasoningLevel ?? defaults.reasoningLevel
    // A model that takes no reasoning effort (the local one, one configured without it) is given
    // none: its level is not part of the job, so requests differing only in it are one job.
    if (!takesReasoning && (reasoningLevel === '' || (REASONING_LEVELS as ReadonlyArray<string>).includes(reasoningLevel))) reasoningLevel = ''
    else if (!(REASONING_LEVELS as ReadonlyArray<string>).includes(reasoningLevel)) {
      return { ok: false, code: 'reasoning_not_allowed', message: `reasoning level "${reasoningLevel}" is not one of ${REASONING_LEVELS.join(', ')}` }
    }
  } else {
    const profile = options.cliProfiles.find((candidate) => candidate.id === params.profileId)
    if (!profile) return { ok: false, code: 'unknown_profile', message: `unknown CLI profile "${params.profileId ?? ''}"; GET options lists the profiles` }
    profileId = profile.id
    modelId = params.modelId ?? profile.models[0]
    if (!profile.models.includes(modelId)) return { ok: false, code: 'model_not_allowed', message: `CLI profile "${profile.id}" does not allow model "${modelId}"` }
    const levels = profile.reasoningLevels ?? []
    reasoningLevel = params.reasoningLevel ?? (levels.includes(defaults.reasoningLevel) ? defaults.reasoningLevel : (levels[0] ?? ''))
    if (levels.length === 0 ? reasoningLevel !== '' : !levels.includes(reasoningLevel)) {
      return {
        ok: false,
        code: 'reasoning_not_allowed',
        message: levels.length === 0 ? `CLI profile "${profile.id}" takes no reasoning level` : `CLI profile "${profile.id}" allows the reasoning levels ${levels.join(', ')}`,
      }
    }
  }
  const skillRef = params.skill === undefined ? DEFAULT_SKILL : params.skill
  let skill: CompileSnapshot['skill'] = null
  if (skillRef !== '') {
    const found = await resolveSkill(options.db, { owner: caller, ref: skillRef, bundled: options.bundledSkills })
    if (!found && params.skill !== undefined) return { ok: false, code: 'unknown_skill', message: `no compile skill "${skillRef}" (yours are "user:<name>")` }
    skill = found ? { ref: found.ref, name: found.name, description: found.description, body: found.body, sha256: found.sha256 } : null
  }
  let parent: WorkspaceNode | undefined
  if (params.artifactParentUri !== undefined && params.artifactParentUri !== '') {
    try {
      parent = (await resolveNode(options.db, { caller, uri: params.artifactParentUri })).node
    } catch (error) {
      return { ok: false, code: 'invalid_parent', message: `artifact parent: ${(error as Error).message}` }
    }
    if (parent.kind !== 'directory') return { ok: false, code: 'invalid_parent', message: `artifact parent ${parent.uri} is a file; choose a directory` }
    if (pathToSegments(parent.path)[0] === USER_SKILLS_DIR) return { ok: false, code: 'invalid_parent', message: 'artifacts cannot be written among your skills' }
  }
  return {
    ok: true,
    parent,
    snapshotBase: {
      version: SNAPSHOT_VERSION,
      channel: params.channel,
      modelId,
      profileId,
      reasoningLevel,
      callBudget: Math.min(MAX_CALL_BUDGET, params.callBudget ?? defaults.callBudget),
      timeoutSeconds: Math.min(MAX_TIMEOUT_SECONDS, Math.max(MIN_TIMEOUT_SECONDS, params.timeoutSeconds ?? defaults.timeoutSeconds)),
      maxAttempts: defaults.maxAttempts,
      skill,
    },
  }
}

export interface Candidate {
  readonly uri: string
  readonly node: WorkspaceNode
}

/** Sorts the request's URIs into candidates (one directory's raw files) and refusals. */
export async function screenUris(options: RefusalContext, caller: Owner, uris: ReadonlyArray<string>): Promise<{ candidates: Candidate[]; directory: WorkspaceNode | undefined; refused: Refusal[] }> {
  const refused: Refusal[] = []
  const candidates: Candidate[] = []
  const seen = new Set<string>()
  let directory: WorkspaceNode | undefined
  for (const [index, uri] of uris.entries()) {
    if (index >= MAX_COMPILE_FILES) {
      refused.push({ uri, code: 'over_limit', message: `a compile request takes at most ${MAX_COMPILE_FILES} files` })
      continue
    }
    let node: WorkspaceNode
    try {
      node = (await resolveNode(options.db, { caller, uri })).node
    } catch (error) {
      refused.push({ uri, code: 'not_visible', message: (error as Error).message })
      continue
    }
    if (seen.has(node.id)) {
      refused.push({ uri, code: 'duplicate', message: `${node.uri} is already in this request` })
      continue
    }
    seen.add(node.id)
    const segments = pathToSegments(node.path)
    if (node.kind !== 'file') {
      refused.push({ uri, code: 'not_raw', message: `${node.uri} is a directory; pick the files in it` })
      continue
    }
    if (segments[0] === USER_SKILLS_DIR) {
      refused.push({ uri, code: 'not_raw', message: `${node.uri} is a compile skill, not a raw file` })
      continue
    }
    const row = await options.db.selectFrom('nodes').select('generated').where('id', '=', node.id).executeTakeFirstOrThrow()
    if (row.generated !== null) {
      refused.push({ uri, code: 'generated_artifact', message: `${node.uri} was written by a compile job (${row.generated}); compile the raw files instead` })
      continue
    }
    const parent = await getNode(options.db, caller, segments.slice(0, -1))
    if (directory === undefined) directory = parent
    if (parent.id !== directory.id) {
      refused.push({ uri, code: 'other_directory', message: `${node.uri} is not in ${directory.uri}; a request compiles the files of one directory` })
      continue
    }
    candidates.push({ uri: node.uri, node })
  }
  return { candidates, directory, refused }
}

/** Why `snapshot` could not be stored as a job's configuration, or undefined when it can. */
export function unstorableSnapshot(snapshot: CompileSnapshot): string | undefined {
  for (const [what, uri] of [['the source directory', snapshot.source.uri], ['the artifact directory', snapshot.artifactParent.uri]] as const) {
    if (uri.length > MAX_URI_LENGTH) return `the URI of ${what} is ${uri.length} characters, over ${MAX_URI_LENGTH}: move or rename it to compile its files`
  }
  try {
    decodeSnapshot(JSON.parse(JSON.stringify(snapshot)))
    return undefined
  } catch (error) {
    return `the job's configuration is invalid: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`
  }
}
