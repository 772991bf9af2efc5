// `knowagent worker`: a process that only runs compile jobs. It opens the same database as
// `knowagent serve` (the embedded PostgreSQL of the data dir, shared, or DATABASE_URL) and shares
// the queue with every other worker, on this machine or any other that reaches the database.
// Stopping (SIGINT/SIGTERM) interrupts its running jobs and releases them for retry.
import { startCoreRuntime } from './effects/app-layer.ts'
import type { AppConfig } from './effects/config/app-config.ts'
import { resolveQueueSettings } from './effects/compile/compile-config.ts'
import { startCompileWorker, type CompileWorker } from './effects/compile/compile-worker.ts'
import { makeJobEvents } from './effects/compile/job-events.ts'
import type { Logger } from './effects/logging/logger.ts'
import { startTracing } from './effects/observability/tracing.ts'
import { makeBailianSettings } from './effects/retrieval/bailian-settings.ts'
import { subprocessEnvOf } from './effects/retrieval/retrieval-feature.ts'

export interface RunningWorker {
  readonly worker: CompileWorker
  readonly stop: () => Promise<void>
}

export async function startWorkerProcess({ config, logger }: { config: AppConfig; logger: Logger }): Promise<RunningWorker> {
  const tracing = startTracing({ env: config.env, serviceName: 'knowagent-worker' }) // OTEL_EXPORTER_OTLP_ENDPOINT
  const { services, dispose } = await startCoreRuntime({ config, logger, features: { modelConnections: true } }).catch(async (error: unknown) => {
    await tracing?.close()
    throw error
  })
  const events = makeJobEvents({ connection: services.database.connection, logger })
  try {
    await events.ready()
    // A CLI profile's subprocess sees the owner's Bailian workspace id, resolved as serve resolves it.
    const bailian = config.retrievalBailian.enabled
      ? subprocessEnvOf(makeBailianSettings({ db: services.database.db, secret: services.secret, config: config.retrievalBailian, env: config.env, blConfigPath: null, logger }))
      : undefined
    const worker = await startCompileWorker({
      db: services.database.db,
      connection: services.database.connection,
      engines: {
        models: services.models,
        cliProfiles: config.file.cliProfiles ?? [],
        serverEnv: config.env,
        parser: services.parser,
        extraEnv: bailian ? (owner) => bailian(owner.id) : undefined,
      },
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
          await dispose()
          await tracing?.close()
        })()),
    }
  } catch (error) {
    await events.close()
    await dispose()
    await tracing?.close()
    throw error
  }
}
