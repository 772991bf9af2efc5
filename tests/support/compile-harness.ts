// The compile machinery on a test database: queue, LISTEN connection, compile service and any
// number of workers (each with its own pg-boss instance, as separate processes would have).
// Waits are driven by the job rows' NOTIFY events, never by sleeping.
import * as Effect from 'effect/Effect'
import type { Clock } from 'pg-boss'
import { fileURLToPath } from 'node:url'
import { type CliProfile, type QueueSettings, resolveCompileDefaults } from '../../src/effects/compile/compile-config.ts'
import { type CompileJobView, findCompileJob } from '../../src/effects/compile/compile-jobs-store.ts'
import type { CompileEngines } from '../../src/effects/compile/compile-pipeline.ts'
import { type QueueHandle, startQueue } from '../../src/effects/compile/compile-queue.ts'
import type { CompileRequestError } from '../../src/effects/compile/compile-errors.ts'
import { type CompileParams, makeCompileRequests, type QueueResult } from '../../src/effects/compile/compile-requests.ts'
import { type CompileService, makeCompileService } from '../../src/effects/compile/compile-service.ts'
import { type CompileWorker, startCompileWorker } from '../../src/effects/compile/compile-worker.ts'
import { type JobEvents, makeJobEvents } from '../../src/effects/compile/job-events.ts'
import { loadBundledSkills } from '../../src/effects/compile/skills.ts'
import type { ChatModel } from '../../src/effects/llm/model.ts'
import { makeModelRegistry, type ModelRegistry } from '../../src/effects/llm/model-registry.ts'
import { UnknownModel } from '../../src/effects/llm/model-errors.ts'
import { toModelInfo } from '../../src/effects/llm/model-config.ts'
import { createLogger, type Logger } from '../../src/effects/logging/logger.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import type { TestDatabase } from './test-database.ts'

export const FAKE_CLI = fileURLToPath(new URL('../fixtures/cli/fake-cli.mjs', import.meta.url))

export const TEST_QUEUE_SETTINGS: QueueSettings = { concurrency: 2, perUserConcurrency: 4, maxActiveJobsPerUser: 1000, heartbeatSeconds: 10, retryDelaySeconds: 1, pollingIntervalSeconds: 0.5, inServe: true }

/** The built-in local model plus the given models (e.g. scripted ones). */
export function registryWith(models: ReadonlyArray<ChatModel> = []): ModelRegistry {
  const base = makeModelRegistry({ models: [], env: {}, local: { deltaDelayMs: 0 } })
  const extra = new Map(models.map((model) => [model.info.id, model]))
  return {
    get: (id) => (extra.has(id) ? Effect.succeed(extra.get(id)!) : base.get(id).pipe(Effect.catchTag('UnknownModel', () => Effect.fail(new UnknownModel({ modelId: id }))))),
    list: () => [...models.map((model) => toModelInfo(model.info)), ...base.list()],
    defaultModelId: () => models[0]?.info.id ?? base.defaultModelId(),
  }
}

export function fakeCliProfile(overrides: Partial<CliProfile> & { mode?: string } = {}): CliProfile {
  const { mode = 'summarise', ...rest } = overrides
  return {
    id: 'fake',
    name: 'Fake CLI',
    command: [process.execPath, FAKE_CLI, '--mode', mode, '--model', '{model}', '--reasoning', '{reasoning}'],
    models: ['fake-model'],
    reasoningLevels: ['low', 'medium', 'high'],
    ...rest,
  }
}

export interface HarnessOptions {
  readonly database: TestDatabase
  readonly models?: ModelRegistry
  readonly cliProfiles?: ReadonlyArray<CliProfile>
  readonly settings?: Partial<QueueSettings>
  readonly defaults?: Parameters<typeof resolveCompileDefaults>[0]['settings']
  readonly extraEnv?: CompileEngines['extraEnv']
  readonly parser?: CompileEngines['parser']
}

/** A request's answer as data: the job, or the refusal's public face (as the HTTP faces project it). */
export type HarnessOutcome = { readonly ok: true; readonly job: CompileJobView } | { readonly ok: false; readonly status: number; readonly code: string; readonly message: string }

/** The compile feature as these tests drive it: its reads, and its use case without the rate limit, parameters in our words. */
export interface HarnessCompileService extends CompileService {
  readonly enqueue: (args: { caller: Owner; params: CompileParams }) => Promise<QueueResult>
  readonly cancel: (args: { caller: Owner; id: string }) => Promise<HarnessOutcome>
  readonly retry: (args: { caller: Owner; id: string }) => Promise<HarnessOutcome>
}

/** `POST compile`'s body for `params` (an absent parameter is left out, not sent as undefined). */
function queueRequestOf(params: CompileParams): Record<string, unknown> {
  const { uris, channel, modelId, profileId, reasoningLevel, callBudget, timeoutSeconds, artifactParentUri, skill } = params
  const request = { uris, channel, model_id: modelId, profile_id: profileId, reasoning_level: reasoningLevel, call_budget: callBudget, timeout_seconds: timeoutSeconds, artifact_parent_uri: artifactParentUri, skill }
  return Object.fromEntries(Object.entries(request).filter(([, value]) => value !== undefined))
}

const outcomeOf = (effect: Effect.Effect<CompileJobView, CompileRequestError>): Promise<HarnessOutcome> =>
  Effect.runPromise(
    effect.pipe(
      Effect.map((job): HarnessOutcome => ({ ok: true, job })),
      Effect.catch((error: CompileRequestError) => Effect.succeed<HarnessOutcome>({ ok: false, status: error.status, code: error.code, message: error.message })),
    ),
  )

export interface CompileHarness {
  readonly service: HarnessCompileService
  readonly events: JobEvents
  readonly queue: QueueHandle
  readonly engines: CompileEngines
  readonly logLines: string[]
  readonly modelCalls: string[]
  readonly startWorker: (options?: { clock?: Clock; engines?: CompileEngines; name?: string }) => Promise<CompileWorker>
  /** Resolves with the job once `predicate` holds (checked now and on every NOTIFY for it). */
  readonly waitForJob: (id: string, predicate: (job: CompileJobView) => boolean, what?: string) => Promise<CompileJobView>
  readonly close: () => Promise<void>
}

export async function startCompileHarness(options: HarnessOptions): Promise<CompileHarness> {
  const url = options.database.url!
  const logLines: string[] = []
  const logger: Logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) })
  const settings = { ...TEST_QUEUE_SETTINGS, ...options.settings }
  const models = options.models ?? registryWith()
  const engines: CompileEngines = { models, cliProfiles: options.cliProfiles ?? [], serverEnv: process.env, extraEnv: options.extraEnv, parser: options.parser }
  const connection = { connectionString: url }
  const queue = await startQueue({ connection, settings, logger, supervise: false, instanceName: 'enqueuer' })
  const events = makeJobEvents({ connection, logger })
  await events.ready()
  const shown = {
    db: options.database.db,
    cliProfiles: engines.cliProfiles,
    defaults: resolveCompileDefaults({ settings: options.defaults, firstModelId: 'local' }),
    bundledSkills: loadBundledSkills(),
  }
  const requests = makeCompileRequests({ ...shown, queue, models, requestsPerMinute: 1_000_000 })
  const service: HarnessCompileService = {
    ...makeCompileService(shown),
    enqueue: ({ caller, params }) => Effect.runPromise(requests.queue({ caller, request: queueRequestOf(params) })),
    cancel: (args) => outcomeOf(requests.cancel(args)),
    retry: (args) => outcomeOf(requests.retry(args)),
  }
  const workers: CompileWorker[] = []
  const modelCalls: string[] = []
  return {
    service,
    events,
    queue,
    engines,
    logLines,
    modelCalls,
    startWorker: async ({ clock, engines: workerEngines, name } = {}) => {
      const worker = await startCompileWorker({
        db: options.database.db,
        connection,
        engines: workerEngines ?? engines,
        settings,
        events,
        logger: logger.child({ name: name ?? `w${workers.length + 1}` }),
        clock,
        onModelCall: (purpose) => modelCalls.push(purpose),
        stopTimeoutMs: 10_000,
      })
      workers.push(worker)
      return worker
    },
    waitForJob: (id, predicate, what = 'the expected state') =>
      new Promise<CompileJobView>((resolve, reject) => {
        let last: CompileJobView | undefined
        let done = false
        const check = async () => {
          if (done) return
          const stored = await findCompileJob(options.database.db, { id })
          last = stored?.view
          if (last && predicate(last) && !done) {
            done = true
            clearTimeout(timer)
            unsubscribe()
            resolve(last)
          }
        }
        const unsubscribe = events.subscribe((event) => {
          if (event.type === 'resync' || event.jobId === id) void check()
        })
        const timer = setTimeout(() => {
          done = true
          unsubscribe()
          reject(new Error(`job ${id} did not reach ${what}; last: ${JSON.stringify(last)}`))
        }, 30_000)
        void check()
      }),
    close: async () => {
      for (const worker of workers) await worker.stop()
      await queue.stop({ graceful: false, timeoutMs: 1_000 })
      await events.close()
    },
  }
}
