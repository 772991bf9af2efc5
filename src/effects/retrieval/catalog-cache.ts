// The catalog cache as this process sees it: PostgreSQL is the truth (catalog-store.ts), memory holds
// what was read, and NOTIFY from any process (this one included) drops a workspace from memory.
// The notifications come through the feature's change feed (db/change-feed.ts, makeFeedCache). While its connection
// is down nothing is trusted from memory: every read goes to the database, and a reconnect
// forgets everything (notifications may have been missed).
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { Scene, SceneListing } from './bailian-client.ts'
import { type ChangeFeed, makeFeedCache } from '../db/change-feed.ts'
import { CATALOG_CHANNEL, type CatalogStatus, keyFingerprint, publishCatalog, readCatalogStatus, recordCatalogFailure, revokeCatalogReader } from './catalog-store.ts'

export interface CatalogCache {
  readonly read: (workspaceId: string) => Promise<CatalogStatus>
  /** The keyed fingerprint of an API key, to compare with `CatalogStatus.readers`. */
  readonly fingerprint: (apiKey: string) => string
  readonly publish: (input: {
    readonly workspaceId: string
    readonly endpointHost: string
    readonly listing: Readonly<Record<Scene, SceneListing>>
    readonly apiKey: string
    readonly fetchedAt: Date
  }) => Promise<void>
  /** A failed refresh of the workspace: recorded on its document, which stays. */
  readonly recordFailure: (input: { readonly workspaceId: string; readonly endpointHost: string; readonly message: string; readonly at: Date }) => Promise<void>
  /** The service refused this key: it no longer reads the shared document. */
  readonly revokeReader: (input: { readonly workspaceId: string; readonly apiKey: string }) => Promise<void>
  /** Called with the workspace id whenever any process changed its catalog. */
  readonly subscribe: (listener: (workspaceId: string) => void) => () => void
  readonly listening: () => boolean
  readonly close: () => Promise<void>
}

export interface CatalogCacheOptions {
  readonly db: Kysely<DB>
  readonly secret: string
  readonly logger: Logger
  /** The change feed listening on CATALOG_CHANNEL (its owner closes it); without one nothing is cached in memory. */
  readonly feed?: ChangeFeed | undefined
}

export function makeCatalogCache(options: CatalogCacheOptions): CatalogCache {
  const { db, secret, logger, feed } = options
  const listeners = new Set<(workspaceId: string) => void>()

  const announce = (workspaceId: string): void => {
    for (const listener of [...listeners]) {
      try {
        listener(workspaceId)
      } catch (error) {
        logger.error('catalog change listener failed', { error })
      }
    }
  }
  const memory = makeFeedCache<CatalogStatus>({ feed, channel: CATALOG_CHANNEL, onNotify: announce })

  /** After a write of this process: our own NOTIFY announces it to everyone; without a feed, we do. */
  const written = (workspaceId: string): void => {
    memory.forget(workspaceId)
    if (feed?.connected() !== true) announce(workspaceId)
  }

  return {
    read: (workspaceId) => memory.read(workspaceId, () => readCatalogStatus(db, workspaceId)),
    fingerprint: (apiKey) => keyFingerprint({ secret, apiKey }),
    publish: async ({ workspaceId, endpointHost, listing, apiKey, fetchedAt }) => {
      await publishCatalog(db, { workspaceId, endpointHost, listing, readerFingerprint: keyFingerprint({ secret, apiKey }), fetchedAt })
      written(workspaceId)
    },
    recordFailure: async ({ workspaceId, endpointHost, message, at }) => {
      await recordCatalogFailure(db, { workspaceId, endpointHost, message, at })
      written(workspaceId)
    },
    revokeReader: async ({ workspaceId, apiKey }) => {
      await revokeCatalogReader(db, { workspaceId, fingerprint: keyFingerprint({ secret, apiKey }) })
      written(workspaceId)
    },
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    listening: () => feed?.connected() === true,
    close: async () => {
      memory.close()
      listeners.clear()
    },
  }
}

/** The cache as a scoped service, closed when the runtime shuts down. */
export class CatalogCacheService extends Context.Service<CatalogCacheService, CatalogCache>()('knowagent/retrieval/CatalogCache') {
  static readonly layer = (options: CatalogCacheOptions): Layer.Layer<CatalogCacheService> =>
    Layer.effect(
      CatalogCacheService,
      Effect.acquireRelease(
        Effect.sync(() => makeCatalogCache(options)),
        (cache) => Effect.promise(() => cache.close()),
      ),
    )
}
