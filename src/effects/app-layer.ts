// The composition root: one place builds the running service from Effect layers —
// configuration → database (opened, migrated) → document parser (worker pool) → features (the
// retrieval catalog and its refresher, the compile worker: scoped resources) → model registry →
// tool registry and pre-step hooks (the workspace tools plus the features') — into a ManagedRuntime.
// The HTTP server, the CLI and the tests take their services from it; disposing the runtime
// releases them in reverse order (workers stop, the pool closes, the embedded PostgreSQL stops
// when this process was its last user).
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import * as ManagedRuntime from 'effect/ManagedRuntime'
import { type AppConfig, AppConfigService } from './config/app-config.ts'
import { AppSecret } from './config/secret.ts'
import { JOBS_CHANNEL } from './compile/compile-jobs-store.ts'
import { type ChangeFeed, ChangeFeedService } from './db/change-feed.ts'
import { Database, type DatabaseHandle, type DatabaseUnavailable } from './db/database.ts'
import { CATALOG_CHANNEL } from './retrieval/catalog-store.ts'
import { SETTINGS_CHANNEL } from './retrieval/retrieval-settings-store.ts'
import { type ModelRegistry, type ModelRegistryOptions, ModelRegistryService, startLiveModelRegistry } from './llm/model-registry.ts'
import { type ModelConnections, ModelConnectionsService, makeModelConnections } from './llm/model-connections.ts'
import { MODEL_CONNECTIONS_CHANNEL } from './llm/model-connections-store.ts'
import { makeCredentialCipher } from './retrieval/credential-cipher.ts'
import { CREDENTIALS_CHANNEL } from './auth/users.ts'
import { type Logger, LoggerService } from './logging/logger.ts'
import { makeToolRegistry, type ToolRegistry, ToolRegistryService } from './tools/tool-registry.ts'
import { type RetrievalFeature, RetrievalFeatureService } from './retrieval/retrieval-feature.ts'
import { type CompileFeatureOptions, CompileFeatureService, type RunningCompileFeature, startCompileFeature } from './compile/compile-feature.ts'
import { WORKSPACE_TOOLS } from './tools/workspace-tools.ts'
import { CALL_CANCEL_CHANNEL } from './tools/running-calls.ts'
import { FILE_VERSIONS_CHANNEL } from './workspace/file-subscriptions.ts'
import { ScheduledBackupsService, startScheduledBackups } from './backup/scheduled-backups.ts'
import { composePreStepHooks, type PreStepHook } from './turn/pre-step-hooks.ts'
import { type LiveTurns, LiveTurnsService } from './turn/live-turns.ts'
import { TURN_CONTROL_CHANNEL } from './turn/turn-control.ts'
import { TURN_EVENTS_CHANNEL } from './turn/turn-event-store.ts'
import { type DocumentParser, DocumentParserService } from './workspace/parse/document-parser.ts'
import { MetricsService } from './observability/metrics-service.ts'
import type { ServiceMetrics } from './observability/metrics.ts'

/**
 * Every channel of the process's one change feed: the retrieval catalog and settings, compile jobs,
 * ended sessions and tokens (which the live job streams follow), the stored model connections
 * (the model registry), the turns' commands and stored events (a Stop or a resumed stream from
 * another instance), and for the MCP face: cancels of tool calls running in another process and
 * new file versions (for subscriptions). A channel no running feature follows costs almost nothing
 * (a rare notification nobody reads).
 */
export const FEED_CHANNELS = [
  CATALOG_CHANNEL,
  SETTINGS_CHANNEL,
  JOBS_CHANNEL,
  CREDENTIALS_CHANNEL,
  MODEL_CONNECTIONS_CHANNEL,
  TURN_CONTROL_CHANNEL,
  TURN_EVENTS_CHANNEL,
  CALL_CANCEL_CHANNEL,
  FILE_VERSIONS_CHANNEL,
] as const

/** Hooks that run before every model step (features add theirs here). */
export class PreStepHooks extends Context.Service<PreStepHooks, PreStepHook>()('knowagent/turn/PreStepHooks') {
  static readonly none = Layer.succeed(PreStepHooks, composePreStepHooks([]))
}

export interface CoreLayerOptions {
  readonly config: AppConfig
  readonly logger: Logger
  /** `serve` passes true: a second serve on the same embedded data dir refuses. */
  readonly exclusiveDatabase?: boolean | undefined
  /** Apply migrations when the database opens (default true). */
  readonly migrate?: boolean | undefined
  /** Model registry overrides (tests: no delta delay, an injected fetch). */
  readonly models?: Partial<ModelRegistryOptions> | undefined
  /**
   * Long-lived features to run with this runtime (serve runs them all; CLI commands none). Each is
   * a scoped resource: started when the runtime is built, stopped when it is disposed.
   */
  readonly features?: {
    /** Retrieval services (Bailian), unless `retrieval.bailian.enabled` is false. `blConfigPath: null` skips the bl login import. */
    readonly retrieval?: boolean | { readonly blConfigPath?: string | null | undefined } | undefined
    /** Compile jobs: the queue, live job events and (unless `compile.queue.inServe` is false) a worker. */
    readonly compile?: boolean | undefined
    /**
     * Follow the stored model connections live (the change feed): serve, the worker, test servers.
     * Without it (CLI commands) they are read once, when the runtime starts.
     */
    readonly modelConnections?: boolean | undefined
    /** Scheduled backups (`backup.schedule`), run by the queue in this process: serve. */
    readonly backups?: boolean | undefined
  } | undefined
}

export type CoreServices =
  | AppConfigService
  | LoggerService
  | AppSecret
  | Database
  | ChangeFeedService
  | ModelRegistryService
  | ModelConnectionsService
  | ToolRegistryService
  | PreStepHooks
  | MetricsService
  | DocumentParserService
  | RetrievalFeatureService
  | CompileFeatureService
  | ScheduledBackupsService
  | LiveTurnsService

/** Configuration, logger, secret and database: what every CLI command needs. */
export function databaseLayer(options: Pick<CoreLayerOptions, 'config' | 'logger' | 'exclusiveDatabase' | 'migrate'>) {
  const base = Layer.mergeAll(AppConfigService.layer(options.config), Layer.succeed(LoggerService, options.logger))
  return Layer.mergeAll(AppSecret.layer, Database.layer({ exclusive: options.exclusiveDatabase ?? false, migrate: options.migrate ?? true })).pipe(
    Layer.provideMerge(base),
  )
}

/** Everything a turn needs, on top of the database; the features' tools and hooks join the registries. */
export function coreLayer(options: CoreLayerOptions): Layer.Layer<CoreServices, DatabaseUnavailable> {
  // The config file's models plus the stored connections' enabled ones, reloaded on every change.
  const connections = Layer.effect(
    ModelConnectionsService,
    Effect.gen(function* () {
      const database = yield* Database
      const feed = yield* ChangeFeedService
      const secret = yield* AppSecret
      const logger = yield* LoggerService
      const metrics = yield* MetricsService
      const cipher = makeCredentialCipher(secret)
      const allowMetadataAddresses = options.config.file.modelConnections?.allowMetadataAddresses ?? false
      return yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const registry = await startLiveModelRegistry({
            models: options.config.file.models ?? [],
            env: options.config.env,
            metrics,
            ...options.models,
            db: database.db,
            cipher,
            feed,
            logger,
            allowMetadataAddresses,
          })
          return makeModelConnections({ db: database.db, cipher, registry, env: options.config.env, allowMetadataAddresses })
        }),
        (running) =>
          Effect.sync(() => {
            running.close()
            running.registry.close()
          }),
      )
    }),
  )
  const models = Layer.effect(
    ModelRegistryService,
    Effect.gen(function* () {
      const running = yield* ModelConnectionsService
      return running.registry as ModelRegistry
    }),
  ).pipe(Layer.provideMerge(connections))
  // The parser's worker pool is scoped: released (its workers terminated) with the runtime.
  const parser = DocumentParserService.layer(options.config.parsing)
  const retrievalOption = options.features?.retrieval
  const retrieval = retrievalOption
    ? RetrievalFeatureService.layerFromCore(typeof retrievalOption === 'object' ? retrievalOption : {})
    : RetrievalFeatureService.none
  const registries = Layer.mergeAll(
    Layer.effect(
      ToolRegistryService,
      Effect.gen(function* () {
        const feature = yield* RetrievalFeatureService
        return makeToolRegistry([...WORKSPACE_TOOLS, ...(feature?.tools ?? [])])
      }),
    ),
    Layer.effect(
      PreStepHooks,
      Effect.gen(function* () {
        const feature = yield* RetrievalFeatureService
        return composePreStepHooks(feature ? [feature.preStep] : [])
      }),
    ),
  )
  // One LISTEN connection for the process, opened only where a feature follows it (serve): the
  // compile job events, and the retrieval caches unless `retrieval.bailian.enabled` is false.
  const followed =
    Boolean(options.features?.compile) || Boolean(options.features?.modelConnections) || (Boolean(retrievalOption) && options.config.retrievalBailian.enabled)
  const feed = followed ? ChangeFeedService.layer(FEED_CHANNELS) : ChangeFeedService.none
  const services = Layer.mergeAll(models, parser, registries, LiveTurnsService.layer).pipe(
    Layer.provideMerge(retrieval),
    Layer.provideMerge(feed),
    Layer.provideMerge(MetricsService.layer(options.config.metrics.enabled)),
    Layer.provideMerge(databaseLayer(options)),
  )
  // Built last, so released first: a worker stops before the parser, the models and the database.
  const compile = options.features?.compile
    ? Layer.effect(
        CompileFeatureService,
        Effect.gen(function* () {
          const options = compileFeatureOptionsOf(yield* serviceValuesBeforeFeatures)
          return yield* Effect.acquireRelease(
            Effect.promise(() => startCompileFeature(options)),
            (running) => Effect.promise(() => running.stop()),
          )
        }),
      )
    : CompileFeatureService.none
  // Stopped before everything else: a running backup is interrupted (no file is left).
  const backups = options.features?.backups
    ? Layer.effect(
        ScheduledBackupsService,
        Effect.gen(function* () {
          const { config, logger, secret, database } = yield* serviceValuesBeforeFeatures
          const compile = yield* CompileFeatureService // its queue holds the schedule and takes the jobs
          if (!compile) return undefined
          return yield* Effect.acquireRelease(
            Effect.promise(() => startScheduledBackups({ boss: compile.queue.boss, config, logger, secret, db: database.db, connection: database.connection })),
            (running) => Effect.promise(async () => running?.stop()),
          )
        }),
      )
    : ScheduledBackupsService.none
  return backups.pipe(Layer.provideMerge(compile.pipe(Layer.provideMerge(services))))
}

export interface CoreServiceValues {
  readonly config: AppConfig
  readonly logger: Logger
  /** Counting when `metrics.enabled` (/metrics), NO_METRICS otherwise. */
  readonly metrics: ServiceMetrics
  readonly secret: string
  readonly database: DatabaseHandle
  /** The process's change feed (serve); undefined for CLI commands. */
  readonly feed: ChangeFeed | undefined
  readonly models: ModelRegistry
  /** Admin → Model connections (the stored connections behind `models`). */
  readonly modelConnections: ModelConnections
  readonly tools: ToolRegistry
  readonly preStep: PreStepHook
  readonly parser: DocumentParser
  readonly retrieval: RetrievalFeature | undefined
  /** The compile feature (queue, job events, worker), when the runtime runs it. */
  readonly compile: RunningCompileFeature | undefined
  /** The turns this process runs (their events stored, their clients attached). */
  readonly turns: LiveTurns
}

const serviceValuesBeforeFeatures = Effect.gen(function* () {
  return {
    config: yield* AppConfigService,
    logger: yield* LoggerService,
    metrics: yield* MetricsService,
    secret: yield* AppSecret,
    database: yield* Database,
    feed: yield* ChangeFeedService,
    models: yield* ModelRegistryService,
    modelConnections: yield* ModelConnectionsService,
    tools: yield* ToolRegistryService,
    preStep: yield* PreStepHooks,
    parser: yield* DocumentParserService,
    retrieval: yield* RetrievalFeatureService,
    turns: yield* LiveTurnsService,
  } satisfies Omit<CoreServiceValues, 'compile'>
})

/** The services as plain values, for code outside Effect (express routes, the CLI). */
export const coreServiceValues = Effect.gen(function* () {
  return { ...(yield* serviceValuesBeforeFeatures), compile: yield* CompileFeatureService } satisfies CoreServiceValues
})

/**
 * The feature's options from the runtime's services (serve and the test server): a CLI profile's
 * subprocess sees its owner's resolved Bailian workspace id when the retrieval feature runs.
 */
export function compileFeatureOptionsOf(services: Omit<CoreServiceValues, 'compile'>): CompileFeatureOptions {
  const { config, logger, database, feed, models, parser, retrieval } = services
  return {
    config,
    logger,
    feed,
    db: database.db,
    connection: database.connection,
    models,
    parser,
    extraEnv: retrieval ? (owner) => retrieval.subprocessEnvFor(owner.id) : undefined,
  }
}

/** Builds the runtime and reads the services out of it; `dispose` releases everything. */
export async function startCoreRuntime(options: CoreLayerOptions): Promise<{ services: CoreServiceValues; dispose: () => Promise<void> }> {
  const runtime = ManagedRuntime.make(coreLayer(options))
  try {
    const services = await runtime.runPromise(coreServiceValues)
    return { services, dispose: () => runtime.dispose() }
  } catch (error) {
    await runtime.dispose()
    throw unwrapLayerError(error)
  }
}

/** A layer that failed to build rejects with Effect's wrapper; callers want the domain error itself. */
export function unwrapLayerError(error: unknown): unknown {
  const cause = (error as { cause?: unknown } | null)?.cause
  return cause && typeof cause === 'object' && '_tag' in cause ? cause : error
}
