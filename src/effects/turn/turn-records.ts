// One row per turn. A turn is recorded `running` when it starts and finished exactly once:
// the update only applies while it is still running, so a later write can never turn a
// failed or cancelled turn into a completed one, nor overwrite an earlier turn's error.
import { sql } from 'kysely'
import type { Db } from '../workspace/store.ts'

export async function recordTurnStarted(db: Db, turn: { id: string; userId: string; uri: string; modelId: string }): Promise<void> {
  await db.insertInto('turns').values({ id: turn.id, user_id: turn.userId, uri: turn.uri, model_id: turn.modelId, status: 'running' }).execute()
}

export async function recordTurnFinished(
  db: Db,
  {
    id,
    status,
    finishReason,
    error,
    counters,
    usage,
  }: {
    id: string
    status: 'done' | 'failed' | 'cancelled'
    finishReason?: string | undefined
    error?: { code: string; message: string } | undefined
    counters?: unknown
    usage?: unknown
  },
): Promise<boolean> {
  const result = await db
    .updateTable('turns')
    .set({
      status,
      finish_reason: finishReason ?? null,
      error_code: error?.code ?? null,
      error_message: error?.message?.slice(0, 2000) ?? null,
      counters: counters === undefined ? null : JSON.stringify(counters),
      usage: usage === undefined ? null : JSON.stringify(usage),
      finished_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

export async function findTurn(db: Db, id: string) {
  return db.selectFrom('turns').selectAll().where('id', '=', id).executeTakeFirst()
}

/** Turns left `running` by a process that died are closed as failed at start-up. */
export async function failOrphanedTurns(db: Db): Promise<number> {
  const result = await db
    .updateTable('turns')
    .set({ status: 'failed', error_code: 'interrupted', error_message: 'the server stopped while this turn was running', finished_at: sql<Date>`now()` })
    .where('status', '=', 'running')
    .where('created_at', '<', sql<Date>`now() - interval '1 hour'`)
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}
