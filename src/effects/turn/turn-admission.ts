// A streamed turn's admission in one statement: the selected node, the caller's stream slot and
// the turn's `running` row. Three round trips (and three commits) had been the largest part of a
// turn's start: each query costs the server ~0.2 ms of event loop (pg, its stream and socket
// layers, the garbage they leave), and 100 turns starting together queue on that one loop
// (docs/performance.md, "the eighth pass").
//
// The statement only writes when the node exists (and, for a bearer token taken from the token
// memo, while the token is live): the slot is taken from a row of the node's select, and the turn
// is recorded from the row the take returns. So a path with no node, a revoked token or a full
// window writes nothing (a full window records no hit).
import { sql } from 'kysely'
import type { NodeRow } from '../db/schema.ts'
import { preparedQuery } from '../db/prepared-query.ts'
import { ASYNC_COMMIT, slotWaitMs, takeSlotUpsert } from '../limits/rate-limiter.ts'
import { nodeAtPath, toNode, type WorkspaceNode } from '../workspace/store.ts'
import type { Db, Owner } from '../db/schema.ts'

export interface TurnAdmissionInput {
  readonly caller: Owner
  /** The store's path key of the selected node ("" is the caller's root). */
  readonly path: string
  readonly turn: { readonly id: string; readonly uri: string; readonly modelId: string; readonly instanceId: string | null }
  /** The caller's stream slot: at most `limit` turns per `windowMs` for `key`. */
  readonly slot: { readonly key: string; readonly limit: number; readonly windowMs: number; readonly now: number }
  /**
   * The hash of a bearer token the caller presented and nothing has checked yet (the token memo's
   * hint, authenticate.ts): the statement writes only while it is the caller's live token.
   */
  readonly tokenHash?: string | undefined
}

export type TurnAdmission =
  /** The slot is taken and the turn's row is written (`running`). */
  | { readonly kind: 'admitted'; readonly node: WorkspaceNode }
  /** The window is full: nothing was written; retry after `waitMs`. */
  | { readonly kind: 'limited'; readonly waitMs: number }
  /** No node at the path: nothing was written (resolve the path the usual way for the exact error). The token, if any, is still unchecked. */
  | { readonly kind: 'no-node' }
  /** `tokenHash` is not the caller's live token (revoked since): nothing was written. */
  | { readonly kind: 'bad-token' }

type AdmissionRow = NodeRow & { size: unknown; mime: string | null; admitted: boolean; token_ok: boolean }

/**
 * Compiled once, one SQL text (a named statement). Like the limiter's own take, its commit is not
 * waited for on disk (`synchronous_commit` off for this transaction only): one user's concurrent
 * starts queue on their slot's row until each commits. A crash of PostgreSQL itself can therefore
 * lose the last fraction of a second of admissions — rows of turns that had just started, whose
 * outcome `recordTurnFinished` writes in full when the turn ends (docs/security.md).
 */
export const admitTurnQuery = preparedQuery(
  ['ownerId', 'path', 'key', 'at', 'since', 'limit', 'turnId', 'uri', 'modelId', 'instanceId', 'tokenHash'],
  (
    db,
    p: {
      ownerId: string
      path: string
      key: string
      at: Date
      since: Date
      limit: number
      turnId: string
      uri: string
      modelId: string
      instanceId: string | null
      tokenHash: string | null
    },
  ) =>
    sql<AdmissionRow>`
      with hit_commit as (${ASYNC_COMMIT}),
      scope as ${nodeAtPath(db, { ownerId: p.ownerId, path: p.path })},
      token as (
        select 1 as ok where ${p.tokenHash}::text is null
        union all
        select 1 from api_tokens where token_hash = ${p.tokenHash}::text and revoked_at is null and user_id = ${p.ownerId}::uuid
      ),
      slot as (${takeSlotUpsert({ key: p.key, at: p.at, since: p.since, limit: p.limit, from: sql`hit_commit, scope, token` })}),
      turn as (
        insert into turns (id, user_id, uri, model_id, status, instance_id)
        select ${p.turnId}::uuid, ${p.ownerId}::uuid, ${p.uri}::text, ${p.modelId}::text, 'running', ${p.instanceId}::uuid from slot
        returning id
      )
      select scope.*, exists (select 1 from turn) as admitted, exists (select 1 from token) as token_ok from scope`.compile(db),
)

export async function admitTurn(db: Db, { caller, path, turn, slot, tokenHash }: TurnAdmissionInput): Promise<TurnAdmission> {
  const at = new Date(slot.now)
  const { rows } = await admitTurnQuery.execute(db, {
    ownerId: caller.id,
    path,
    key: slot.key,
    at,
    since: new Date(slot.now - slot.windowMs),
    limit: slot.limit,
    turnId: turn.id,
    uri: turn.uri,
    modelId: turn.modelId,
    instanceId: turn.instanceId,
    tokenHash: tokenHash ?? null,
  })
  const row = rows[0]
  if (!row) return { kind: 'no-node' }
  if (!row.token_ok) return { kind: 'bad-token' }
  if (!row.admitted) return { kind: 'limited', waitMs: await slotWaitMs(db, { key: slot.key, at: slot.now, limit: slot.limit, windowMs: slot.windowMs }) }
  const { admitted: _admitted, token_ok: _tokenOk, ...nodeRow } = row
  return { kind: 'admitted', node: toNode(caller, nodeRow) }
}
