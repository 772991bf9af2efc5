// `knowagent worker`: a process that only runs compile jobs, on any machine that reaches the
// database (DATABASE_URL). Any number of them share the queue with the workers inside
// `knowagent serve`; stopping (SIGINT/SIGTERM) interrupts its running jobs and releases them for retry.
import type { AppConfig } from './effects/config/app-config.ts'
import { resolveQueueSettings } from './effects/compile/compile-config.ts'
import { startCompileWorker, type CompileWorker } from './effects/compile/compile-worker.ts'
import { makeJobEvents } from './effects/compile/job-events.ts'
import { openPostgres } from './effects/db/database.ts'
import { migrateToLatest } from './effects/db/migrate.ts'
import { makeModelRegistry } from './effects/llm/model-registry.ts'
import type { Logger } from './effects/logging/logger.ts'

export class WorkerNeedsDatabaseUrl extends Error {
  override readonly name = 'WorkerNeedsDatabaseUrl'
  constructor() {
    super('a worker process needs DATABASE_URL (the PostgreSQL that `knowagent serve` uses); `knowagent serve` already runs workers of its own')
  }
}

export interface RunningWorker {
  readonly worker: CompileWorker
  readonly stop: () => Promise<void>
}

export async function startWorkerProcess({ config, logger }: { config: AppConfig; logger: Logger }): Promise<RunningWorker> {
  const url = config.databaseUrl
  if (!url) throw new WorkerNeedsDatabaseUrl()
  const database = await openPostgres({ url, max: 4 })
  const events = makeJobEvents({ databaseUrl: url, logger })
  try {
    await migrateToLatest(database.db)
    await events.ready()
    const worker = await startCompileWorker({
      db: database.db,
      databaseUrl: url,
      engines: { models: makeModelRegistry({ models: config.file.models ?? [], env: config.env }), cliProfiles: config.file.cliProfiles ?? [], serverEnv: config.env },
      settings: resolveQueueSettings(config.file.compile),
      events,
      logger,
    })
    let stopping: Promise<void> | undefined
    return {
      worker,
      stop: () =>
        (stopping ??= (async () => {
          await worker.stop()
          await events.close()
          await database.close()
        })()),
    }
  } catch (error) {
    await events.close()
    await database.close()
    throw error
  }
}
