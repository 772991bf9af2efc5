// The compile feature as one resource of a server process: the queue (pg-boss, its own pool and
// schema — serve's queue, which also runs the Trash's hourly retention job, trash-retention.ts),
// the one LISTEN connection for live job updates, the compile service (the jobs and
// options it shows), its use case (queueing, cancelling, retrying: compile-requests.ts) and,
// unless the config leaves jobs to `knowagent worker` processes, a worker. Started with the server,
// stopped before the database closes: running attempts are interrupted and released for retry,
// then the queue and the LISTEN connection are closed.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { Kysely } from 'kysely'
import type pg from 'pg'
import type { AppConfig } from '../config/app-config.ts'
import type { DB } from '../db/schema.ts'
import type { ModelRegistry } from '../llm/model-registry.ts'
import type { Logger } from '../logging/logger.ts'
import type { DocumentParser } from '../workspace/parse/document-parser.ts'
import { resolveCompileDefaults, resolveQueueSettings } from './compile-config.ts'
import type { CompileEnvironmentProvider } from './compile-pipeline.ts'
import { type QueueHandle, startQueue } from './compile-queue.ts'
import { makeCompileRequests } from './compile-requests.ts'
import { type CompileFeature, makeCompileService } from './compile-service.ts'
import { type CompileWorker, startCompileWorker } from './compile-worker.ts'
import { makeJobEvents } from './job-events.ts'
import { loadBundledSkills } from './skills.ts'
import { startTrashRetention, TRASH_RETENTION_SCHEDULE, type TrashRetention } from '../workspace/trash-retention.ts'
import type { ChangeFeed } from '../db/change-feed.ts'
import { backupQueueSchedules } from '../backup/scheduled-backups.ts'

export interface RunningCompileFeature {
  readonly feature: CompileFeature
  /** undefined when `compile.queue.inServe` is false. */
  readonly worker: CompileWorker | undefined
  /** Serve's queue: the features whose recurring jobs it schedules work them on its `boss` (scheduled backups). */
  readonly queue: QueueHandle
  readonly stop: () => Promise<void>
}

export interface CompileFeatureOptions {
  readonly config: AppConfig
  readonly db: Kysely<DB>
  /** The database's connection settings (DatabaseHandle.connection). */
  readonly connection: pg.ClientConfig
  /** The process's change feed (the composition root's); without it the job events open their own. */
  readonly feed?: ChangeFeed | undefined
  readonly models: ModelRegistry
  readonly logger: Logger
  /** e.g. BAILIAN_WORKSPACE_ID for a job's owner, exported to its CLI (the retrieval feature provides it). */
  readonly extraEnv?: CompileEnvironmentProvider | undefined
  /** The server's document parser: a job parses again a file whose parse had failed. */
  readonly parser?: DocumentParser | undefined
}

export async function startCompileFeature(options: CompileFeatureOptions): Promise<RunningCompileFeature> {
  const { config, db, connection, models, logger } = options
  const settings = resolveQueueSettings(config.file.compile)
  const cliProfiles = config.file.cliProfiles ?? []
  const bundledSkills = loadBundledSkills()
  const queue = await startQueue({ connection, settings, logger, instanceName: 'serve', schedules: [TRASH_RETENTION_SCHEDULE, ...backupQueueSchedules(config.backup)] })
  const events = makeJobEvents({ feed: options.feed, connection, logger })
  let worker: CompileWorker | undefined
  let retention: TrashRetention | undefined
  try {
    await events.ready()
    retention = await startTrashRetention({ boss: queue.boss, db, logger })
    const shown = {
      db,
      cliProfiles,
      defaults: resolveCompileDefaults({ settings: config.file.compile, firstModelId: models.list()[0]?.id ?? 'local' }),
      bundledSkills,
    }
    const service = makeCompileService(shown)
    const requests = makeCompileRequests({ ...shown, queue, models, requestsPerMinute: config.compileRequestsPerMinute })
    if (settings.inServe) {
      worker = await startCompileWorker({ db, connection, engines: { models, cliProfiles, serverEnv: config.env, extraEnv: options.extraEnv, parser: options.parser }, settings, events, logger, queue })
    }
    let stopping: Promise<void> | undefined
    return {
      feature: { service, requests, events },
      worker,
      queue,
      stop: () =>
        (stopping ??= (async () => {
          await retention?.stop()
          await worker?.stop()
          await queue.stop({ graceful: true, timeoutMs: 10_000 })
          await events.close()
        })()),
    }
  } catch (error) {
    await retention?.stop().catch(() => {})
    await worker?.stop()
    await queue.stop({ graceful: false, timeoutMs: 1_000 }).catch(() => {})
    await events.close()
    throw error
  }
}

/**
 * The compile feature as a scoped resource of the composition root: started after the services it
 * uses, stopped before them (running attempts are interrupted and released for retry). Its value is
 * undefined when the runtime runs without it (CLI commands).
 */
export class CompileFeatureService extends Context.Service<CompileFeatureService, RunningCompileFeature | undefined>()('knowagent/compile/CompileFeature') {
  /** No compile feature. */
  static readonly none: Layer.Layer<CompileFeatureService> = Layer.succeed(CompileFeatureService, undefined)
}
