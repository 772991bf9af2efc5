// What the compile feature shows (SPEC §8): a caller's jobs, one job, and what the form and
// `GET options` offer. Queueing, cancelling and retrying — the requests that change something —
// are the feature's use case, compile-requests.ts.
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Owner } from '../db/schema.ts'
import {
  type CliProfile,
  type CliProfileInfo,
  type CompileDefaults,
  MAX_CALL_BUDGET,
  MAX_COMPILE_FILES,
  MAX_TIMEOUT_SECONDS,
  MIN_TIMEOUT_SECONDS,
  REASONING_LEVELS,
  toCliProfileInfo,
} from './compile-config.ts'
import { type CompileJobView, findCompileJob, type JobListFilter, listCompileJobs } from './compile-jobs-store.ts'
import { type CompileRequests, isJobId } from './compile-requests.ts'
import type { JobEvents } from './job-events.ts'
import { DEFAULT_SKILL, listUserSkills, type Skill } from './skills.ts'

export interface CompileOptions {
  readonly cli_profiles: ReadonlyArray<CliProfileInfo>
  readonly reasoning_levels: ReadonlyArray<string>
  readonly skills: ReadonlyArray<{ readonly ref: string; readonly name: string; readonly description: string; readonly source: 'bundled' | 'user' }>
  readonly defaults: {
    readonly channel: 'llm'
    readonly model_id: string
    readonly reasoning_level: string
    readonly call_budget: number
    readonly timeout_seconds: number
    readonly max_attempts: number
    readonly max_files: number
    readonly skill: string | null
  }
  readonly limits: { readonly max_files: number; readonly max_call_budget: number; readonly min_timeout_seconds: number; readonly max_timeout_seconds: number }
}

export interface CompileService {
  /** The caller's job, or undefined (another user's, or no job id at all). */
  readonly get: (args: { caller: Owner; id: string }) => Promise<CompileJobView | undefined>
  readonly list: (args: { caller: Owner; filter: JobListFilter }) => Promise<{ jobs: CompileJobView[]; total: number }>
  /** What the form and `GET options` offer: never a command line. */
  readonly options: (args: { caller: Owner }) => Promise<CompileOptions>
  readonly defaults: CompileDefaults
}

export interface CompileServiceOptions {
  readonly db: Kysely<DB>
  readonly cliProfiles: ReadonlyArray<CliProfile>
  readonly defaults: CompileDefaults
  readonly bundledSkills: ReadonlyArray<Skill>
}

export function makeCompileService(options: CompileServiceOptions): CompileService {
  const { db } = options
  return {
    get: async ({ caller, id }) => (isJobId(id) ? (await findCompileJob(db, { id, ownerId: caller.id }))?.view : undefined),
    list: ({ caller, filter }) => listCompileJobs(db, caller, filter),
    options: async ({ caller }) => {
      const user = await listUserSkills(db, caller)
      const skills = [...options.bundledSkills, ...user.skills].map(({ ref, name, description, source }) => ({ ref, name, description, source }))
      return {
        cli_profiles: options.cliProfiles.map(toCliProfileInfo),
        reasoning_levels: REASONING_LEVELS,
        skills,
        defaults: {
          channel: 'llm',
          model_id: options.defaults.modelId,
          reasoning_level: options.defaults.reasoningLevel,
          call_budget: options.defaults.callBudget,
          timeout_seconds: options.defaults.timeoutSeconds,
          max_attempts: options.defaults.maxAttempts,
          max_files: MAX_COMPILE_FILES,
          skill: options.bundledSkills.some((skill) => skill.ref === DEFAULT_SKILL) ? DEFAULT_SKILL : null,
        },
        limits: { max_files: MAX_COMPILE_FILES, max_call_budget: MAX_CALL_BUDGET, min_timeout_seconds: MIN_TIMEOUT_SECONDS, max_timeout_seconds: MAX_TIMEOUT_SECONDS },
      }
    },
    defaults: options.defaults,
  }
}

/** What the HTTP layer needs of the compile feature (AppContext.compile): its reads, its use case, its live job changes. */
export interface CompileFeature {
  readonly service: CompileService
  readonly requests: CompileRequests
  readonly events: JobEvents
}
