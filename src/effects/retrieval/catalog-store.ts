// The catalog cache in PostgreSQL: one document per workspace id, shared by every server process.
// A publish is one transaction (the services of both scenes, the counts, the reader fingerprint and
// the NOTIFY that tells the other processes), so a reader sees the old document or the new one,
// never a mix. A failed refresh records its error and keeps the document.
import { createHmac } from 'node:crypto'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { CatalogEntry, Scene, SceneListing } from './bailian-client.ts'

type Db = Kysely<DB> | Transaction<DB>

/** The NOTIFY channel; the payload is the workspace id. */
export const CATALOG_CHANNEL = 'knowagent_retrieval_catalog'

export interface SceneSummary {
  readonly count: number
  /** Server-reported total (more than `count` when truncated). */
  readonly total: number
  readonly truncated: boolean
}

export interface CatalogDocument {
  readonly workspaceId: string
  readonly endpointHost: string
  readonly fetchedAt: Date
  /** Bumped by every publish. */
  readonly revision: number
  /** Both scenes, each in the order the service listed them. */
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly scenes: Readonly<Record<Scene, SceneSummary>>
}

/** What is known about one workspace's catalog. */
export interface CatalogStatus {
  readonly workspaceId: string
  /** Undefined until a first fetch succeeded (then nothing is injected). */
  readonly document: CatalogDocument | undefined
  readonly lastAttemptAt: Date | undefined
  readonly lastError: string | undefined
  readonly lastErrorAt: Date | undefined
  /** Fingerprints of the keys that listed this workspace successfully. */
  readonly readers: ReadonlySet<string>
}

/** A keyed fingerprint of an API key: recognises a key without storing anything usable. */
export function keyFingerprint({ secret, apiKey }: { readonly secret: string; readonly apiKey: string }): string {
  return createHmac('sha256', secret).update(`bailian-api-key\u0000${apiKey}`).digest('base64url').slice(0, 32)
}

export async function readCatalogStatus(db: Db, workspaceId: string): Promise<CatalogStatus> {
  const row = await db.selectFrom('retrieval_catalogs').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst()
  if (row === undefined) {
    return { workspaceId, document: undefined, lastAttemptAt: undefined, lastError: undefined, lastErrorAt: undefined, readers: new Set() }
  }
  const [services, readers] = await Promise.all([
    row.fetched_at === null
      ? Promise.resolve([])
      : db.selectFrom('retrieval_catalog_services').selectAll().where('workspace_id', '=', workspaceId).orderBy('scene', 'desc').orderBy('position').execute(),
    db.selectFrom('retrieval_catalog_readers').select('key_fingerprint').where('workspace_id', '=', workspaceId).execute(),
  ])
  const entries = services.map(
    (service): CatalogEntry => ({
      agentId: service.agent_id,
      agentName: service.agent_name,
      scene: service.scene,
      status: service.status,
      modifyTime: service.modify_time ?? undefined,
      description: service.description ?? undefined,
    }),
  )
  const count = (scene: Scene) => entries.filter((entry) => entry.scene === scene).length
  return {
    workspaceId,
    document:
      row.fetched_at === null
        ? undefined
        : {
            workspaceId,
            endpointHost: row.endpoint_host,
            fetchedAt: row.fetched_at,
            revision: Number(row.revision),
            entries,
            scenes: {
              search: { count: count('search'), total: row.search_total, truncated: row.search_truncated },
              chat: { count: count('chat'), total: row.chat_total, truncated: row.chat_truncated },
            },
          },
    lastAttemptAt: row.last_attempt_at ?? undefined,
    lastError: row.last_error ?? undefined,
    lastErrorAt: row.last_error_at ?? undefined,
    readers: new Set(readers.map((reader) => reader.key_fingerprint)),
  }
}

/** Replaces the workspace's document in one transaction and notifies every process. */
export async function publishCatalog(
  db: Kysely<DB>,
  {
    workspaceId,
    endpointHost,
    listing,
    readerFingerprint,
    fetchedAt,
  }: {
    readonly workspaceId: string
    readonly endpointHost: string
    readonly listing: Readonly<Record<Scene, SceneListing>>
    readonly readerFingerprint: string
    readonly fetchedAt: Date
  },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const values = {
      endpoint_host: endpointHost,
      fetched_at: fetchedAt,
      search_total: listing.search.total,
      chat_total: listing.chat.total,
      search_truncated: listing.search.truncated,
      chat_truncated: listing.chat.truncated,
      last_attempt_at: fetchedAt,
      last_error: null,
      last_error_at: null,
    }
    await trx
      .insertInto('retrieval_catalogs')
      .values({ workspace_id: workspaceId, revision: 1, ...values })
      .onConflict((conflict) => conflict.column('workspace_id').doUpdateSet({ ...values, revision: sql`retrieval_catalogs.revision + 1` }))
      .execute()
    await trx.deleteFrom('retrieval_catalog_services').where('workspace_id', '=', workspaceId).execute()
    const rows = (['search', 'chat'] as const).flatMap((scene) =>
      listing[scene].entries.map((entry, position) => ({
        workspace_id: workspaceId,
        scene,
        agent_id: entry.agentId,
        position,
        agent_name: entry.agentName,
        status: entry.status,
        modify_time: entry.modifyTime ?? null,
        description: entry.description ?? null,
      })),
    )
    for (let start = 0; start < rows.length; start += 500) {
      await trx.insertInto('retrieval_catalog_services').values(rows.slice(start, start + 500)).execute()
    }
    await trx
      .insertInto('retrieval_catalog_readers')
      .values({ workspace_id: workspaceId, key_fingerprint: readerFingerprint, verified_at: fetchedAt })
      .onConflict((conflict) => conflict.columns(['workspace_id', 'key_fingerprint']).doUpdateSet({ verified_at: fetchedAt }))
      .execute()
    await sql`select pg_notify(${CATALOG_CHANNEL}, ${workspaceId})`.execute(trx)
  })
}

/** Records a failed refresh; the document (if any) stays. */
export async function recordCatalogFailure(
  db: Kysely<DB>,
  { workspaceId, endpointHost, message, at }: { readonly workspaceId: string; readonly endpointHost: string; readonly message: string; readonly at: Date },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('retrieval_catalogs')
      .values({ workspace_id: workspaceId, endpoint_host: endpointHost, fetched_at: null, last_attempt_at: at, last_error: message, last_error_at: at })
      .onConflict((conflict) => conflict.column('workspace_id').doUpdateSet({ last_attempt_at: at, last_error: message, last_error_at: at }))
      .execute()
    await sql`select pg_notify(${CATALOG_CHANNEL}, ${workspaceId})`.execute(trx)
  })
}

/** The service refused this key (401/403): its holder no longer sees a document it cannot reach. */
export async function revokeCatalogReader(db: Kysely<DB>, { workspaceId, fingerprint }: { readonly workspaceId: string; readonly fingerprint: string }): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const removed = await trx.deleteFrom('retrieval_catalog_readers').where('workspace_id', '=', workspaceId).where('key_fingerprint', '=', fingerprint).executeTakeFirst()
    if (Number(removed.numDeletedRows) > 0) await sql`select pg_notify(${CATALOG_CHANNEL}, ${workspaceId})`.execute(trx)
  })
}
