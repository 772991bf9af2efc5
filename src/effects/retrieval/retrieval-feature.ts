// Retrieval services, assembled: the settings, the catalog cache (with its LISTEN connection), the
// refresher (its machines), the kb_search / kb_chat tools, the pre-step hook and the workspace-id
// export for CLI subprocesses. `retrieval.bailian.enabled: false` gives no feature at all: no
// tools, no catalog block, no settings page.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { Kysely } from 'kysely'
import type pg from 'pg'
import { AppConfigService } from '../config/app-config.ts'
import { AppSecret } from '../config/secret.ts'
import { Database } from '../db/database.ts'
import { LoggerService } from '../logging/logger.ts'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { AnyToolDefinition } from '../tools/tool-definition.ts'
import type { PreStepHook } from '../turn/pre-step-hooks.ts'
import { type BailianClient, makeBailianClient } from './bailian-client.ts'
import type { BailianConfig } from './bailian-config.ts'
import { type BailianSettings, connectionOf, makeBailianSettings } from './bailian-settings.ts'
import { BailianMissingCredentials } from './bailian-errors.ts'
import { defaultBlConfigPath } from './bl-config-import.ts'
import { type CatalogCache, makeCatalogCache } from './catalog-cache.ts'
import { CATALOG_CHANNEL } from './catalog-store.ts'
import { type ChangeFeed, ChangeFeedService, followFeed } from '../db/change-feed.ts'
import { makeCatalogPreStepHook } from './catalog-pre-step.ts'
import { type CatalogRefresher, makeCatalogRefresher } from './catalog-refresher.ts'
import { makeKbChatTool } from './kb-chat.tool.ts'
import { makeKbSearchTool } from './kb-search.tool.ts'
import { type KnowledgeCalls, makeKnowledgeCalls } from './knowledge-calls.ts'
import { SETTINGS_CHANNEL } from './retrieval-settings-store.ts'

export interface RetrievalFeature {
  readonly config: BailianConfig
  /** kb_search and kb_chat, for the tool registry. */
  readonly tools: ReadonlyArray<AnyToolDefinition>
  /** Keeps the `retrieval-catalog` block in front of the model; compose it with the other hooks. */
  readonly preStep: PreStepHook
  readonly settings: BailianSettings
  readonly cache: CatalogCache
  readonly refresher: CatalogRefresher
  /** Programmatic search and chat (agent_id optional: default service, else the only one). */
  readonly calls: KnowledgeCalls
  /** The user's resolved workspace id (every layer), or undefined. */
  readonly workspaceIdFor: (userId: string) => Promise<string | undefined>
  /** `{ BAILIAN_WORKSPACE_ID }` for a CLI-profile subprocess of this user (empty when unset). */
  readonly subprocessEnvFor: (userId: string) => Promise<Record<string, string>>
  /** Stops the refresher's machines (aborting running fetches) and releases the change feed's LISTEN connection. */
  readonly close: () => Promise<void>
}

export interface RetrievalFeatureOptions {
  readonly config: BailianConfig
  readonly db: Kysely<DB>
  /** The server secret (KNOWAGENT_SECRET or the generated one): keys the credential store. */
  readonly secret: string
  /** Read at call time (usually `process.env`). */
  readonly env: Readonly<Record<string, string | undefined>>
  readonly logger: Logger
  /** The process's change feed (listening on CATALOG_CHANNEL and SETTINGS_CHANNEL), shared and not closed here. */
  readonly feed?: ChangeFeed | undefined
  /** Without a shared feed: connection settings for one of its own (`DatabaseHandle.connection`); with neither, each read goes to the database. */
  readonly listenConnection?: pg.ClientConfig | undefined
  /** Default ~/.bailian/config.json; null disables the one-time import. */
  readonly blConfigPath?: string | null | undefined
  readonly client?: BailianClient | undefined
  readonly now?: (() => number) | undefined
  /** The catalog refresher's wait before a delayed fetch (tests drive it instead of a timer). */
  readonly waitUntil?: ((at: number) => Effect.Effect<void>) | undefined
}

/** `{ BAILIAN_WORKSPACE_ID }` for a CLI-profile subprocess of this user: the id resolved through every layer (empty when unset). */
export function subprocessEnvOf(settings: BailianSettings): (userId: string) => Promise<Record<string, string>> {
  return async (userId): Promise<Record<string, string>> => {
    const workspaceId = (await settings.resolve(userId)).settings.workspaceId.value
    return workspaceId === undefined ? {} : { BAILIAN_WORKSPACE_ID: workspaceId }
  }
}

/** The feature, or undefined when `retrieval.bailian.enabled` is false. */
export function makeRetrievalFeature(options: RetrievalFeatureOptions): RetrievalFeature | undefined {
  if (!options.config.enabled) return undefined
  const logger = options.logger.child({ feature: 'retrieval' })
  const client = options.client ?? makeBailianClient()
  // One LISTEN connection for both caches (the catalog documents, the users' settings): the
  // process's, or one of its own.
  const followed = followFeed({ shared: options.feed, connection: options.listenConnection, channels: [CATALOG_CHANNEL, SETTINGS_CHANNEL], logger })
  const { feed } = followed
  const settings = makeBailianSettings({
    db: options.db,
    secret: options.secret,
    config: options.config,
    env: options.env,
    blConfigPath: options.blConfigPath === undefined ? defaultBlConfigPath() : options.blConfigPath,
    logger,
    feed,
  })
  const cache = makeCatalogCache({ db: options.db, secret: options.secret, logger, feed })
  const refresher = makeCatalogRefresher({ client, settings, cache, logger, now: options.now, minIntervalMs: options.config.catalogMinIntervalMs, waitUntil: options.waitUntil })
  const calls = makeKnowledgeCalls({ client, settings, cache, refresher })

  // A new key or workspace: fetch the catalog now rather than at the next step.
  const unsubscribe = settings.subscribe(({ userId, keys }) => {
    if (!keys.includes('apiKey') && !keys.includes('workspaceId')) return
    void settings
      .resolve(userId)
      .then((snapshot) => {
        const connection = connectionOf(snapshot)
        if (connection instanceof BailianMissingCredentials) return
        return refresher.refresh({ userId, workspaceId: connection.workspaceId, reason: 'credentials-changed' })
      })
      .catch((error: unknown) => logger.error('refresh after a settings change failed', { error }))
  })

  const workspaceIdFor = async (userId: string) => (await settings.resolve(userId)).settings.workspaceId.value
  return {
    config: options.config,
    tools: [makeKbSearchTool({ calls }), makeKbChatTool({ calls })],
    preStep: makeCatalogPreStepHook({ settings, cache, refresher, logger }),
    settings,
    cache,
    refresher,
    calls,
    workspaceIdFor,
    subprocessEnvFor: subprocessEnvOf(settings),
    close: async () => {
      unsubscribe()
      await refresher.stop()
      await cache.close()
      settings.close()
      await followed.release()
    },
  }
}

/**
 * The feature as a scoped service of the composition root: built with the runtime, closed when it
 * shuts down. Its value is undefined when the feature is switched off.
 */
export class RetrievalFeatureService extends Context.Service<RetrievalFeatureService, RetrievalFeature | undefined>()(
  'knowagent/retrieval/RetrievalFeature',
) {
  static readonly layer = (options: RetrievalFeatureOptions): Layer.Layer<RetrievalFeatureService> =>
    Layer.effect(
      RetrievalFeatureService,
      Effect.acquireRelease(
        Effect.sync(() => makeRetrievalFeature(options)),
        (feature) => Effect.promise(async () => feature?.close()),
      ),
    )

  /** Built from the core services (config, database, secret, logger), as the composition root has them. */
  static readonly layerFromCore = ({ blConfigPath }: { readonly blConfigPath?: string | null | undefined } = {}): Layer.Layer<RetrievalFeatureService, never, AppConfigService | Database | AppSecret | LoggerService | ChangeFeedService> => Layer.effect(
    RetrievalFeatureService,
    Effect.gen(function* () {
      const config = yield* AppConfigService
      const database = yield* Database
      const secret = yield* AppSecret
      const logger = yield* LoggerService
      const feed = yield* ChangeFeedService
      return yield* Effect.acquireRelease(
        Effect.sync(() =>
          makeRetrievalFeature({
            config: config.retrievalBailian,
            db: database.db,
            secret,
            env: config.env,
            logger,
            feed,
            blConfigPath,
          }),
        ),
        (feature) => Effect.promise(async () => feature?.close()),
      )
    }),
  )

  /** No retrieval feature (CLI commands, tests that do not exercise it). */
  static readonly none: Layer.Layer<RetrievalFeatureService> = Layer.succeed(RetrievalFeatureService, undefined)
}
