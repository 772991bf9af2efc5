// Files a program follows for their new versions (the MCP face's resources/subscribe): one row per
// client connection and file, kept in PostgreSQL so that a subscription made through one server
// process is kept by the one holding the connection's stream. Every new file version NOTIFYs
// FILE_VERSIONS_CHANNEL with its file's node id (a trigger, migrations/20261208400000_mcp_subscriptions.ts),
// whoever wrote it: an upload, an import, a compile job, a restore.
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'

/** The NOTIFY channel of new file versions; the payload is the file's node id. */
export const FILE_VERSIONS_CHANNEL = 'knowagent_file_versions'
/** Files one connection may follow. */
export const SUBSCRIPTIONS_PER_CONNECTION = 100
/** A connection whose stream has not opened for this long is forgotten with its subscriptions. */
export const STALE_SUBSCRIPTION_DAYS = 7

/** A client connection's key: its token's HMAC and its session id, hashed (never stored as they are). */
export function connectionKey({ credential, session }: { credential: string; session: string }): string {
  return createHash('sha256').update(JSON.stringify(['connection', credential, session])).digest('hex')
}

/** Follows a file; false when the connection already follows SUBSCRIPTIONS_PER_CONNECTION others. */
export async function subscribeToFile(db: Db, { connection, userId, nodeId, uri }: { connection: string; userId: string; nodeId: string; uri: string }): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    insert into mcp_subscriptions (session_key, user_id, node_id, uri)
    select ${connection}, ${userId}, ${nodeId}, ${uri}
    where (select count(*) from mcp_subscriptions where session_key = ${connection} and node_id <> ${nodeId}) < ${SUBSCRIPTIONS_PER_CONNECTION}
    on conflict (session_key, node_id) do update set uri = excluded.uri, touched_at = now()
    returning 1 as n`.execute(db)
  return rows.length > 0
}

/** Stops following the file subscribed as `uri` (nothing when it was not followed). */
export async function unsubscribeFromFile(db: Db, { connection, uri }: { connection: string; uri: string }): Promise<void> {
  await db.deleteFrom('mcp_subscriptions').where('session_key', '=', connection).where('uri', '=', uri).execute()
}

/** A connection's stream opened: its subscriptions are fresh again, and the user's stale ones go. */
export async function touchConnection(db: Db, { connection, userId }: { connection: string; userId: string }): Promise<void> {
  await db.updateTable('mcp_subscriptions').set({ touched_at: sql`now()` }).where('session_key', '=', connection).execute()
  await db
    .deleteFrom('mcp_subscriptions')
    .where('user_id', '=', userId)
    .where('touched_at', '<', sql<Date>`now() - make_interval(days => ${STALE_SUBSCRIPTION_DAYS})`)
    .execute()
}

/** Which of `connections` follow which of these files, and under which URI. */
export async function followersOf(db: Db, { nodeIds, connections }: { nodeIds: ReadonlyArray<string>; connections: ReadonlyArray<string> }) {
  if (nodeIds.length === 0 || connections.length === 0) return []
  return db
    .selectFrom('mcp_subscriptions')
    .select(['session_key as connection', 'uri'])
    .where('node_id', 'in', [...nodeIds])
    .where('session_key', 'in', [...connections])
    .execute()
}
