// One row per turn. A turn is recorded `running` when it starts and finished exactly once:
// the update only applies while it is still running, so a later write can never turn a
// failed or cancelled turn into a completed one, nor overwrite an earlier turn's error.
import { type Kysely, sql } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { DB, Db } from '../db/schema.ts'
import { storeTerminals } from './stored-turn-events.ts'
import { TURN_INTERRUPTED } from './turn-events.ts'

/** A turn's row as it starts (compiled once: every turn writes one). */
export const insertRunningTurnQuery = preparedQuery(
  ['id', 'userId', 'uri', 'modelId', 'instanceId'],
  (db, turn: { id: string; userId: string; uri: string; modelId: string; instanceId: string | null }) =>
    db
      .insertInto('turns')
      .values({ id: turn.id, user_id: turn.userId, uri: turn.uri, model_id: turn.modelId, status: 'running', instance_id: turn.instanceId })
      .compile(),
)

export async function recordTurnStarted(
  db: Db,
  turn: { id: string; userId: string; uri: string; modelId: string; instanceId?: string | undefined },
): Promise<void> {
  await insertRunningTurnQuery.execute(db, { ...turn, instanceId: turn.instanceId ?? null })
}

/** The outcome of a turn still running (compiled once: every turn writes one). */
export const finishTurnQuery = preparedQuery(
  ['id', 'status', 'finishReason', 'errorCode', 'errorMessage', 'counters', 'usage'],
  (
    db,
    outcome: {
      id: string
      status: 'done' | 'failed' | 'cancelled'
      finishReason: string | null
      errorCode: string | null
      errorMessage: string | null
      counters: string | null
      usage: string | null
    },
  ) =>
    db
      .updateTable('turns')
      .set({
        status: outcome.status,
        finish_reason: outcome.finishReason,
        error_code: outcome.errorCode,
        error_message: outcome.errorMessage,
        counters: outcome.counters,
        usage: outcome.usage,
        finished_at: sql<Date>`now()`,
      })
      .where('id', '=', outcome.id)
      .where('status', '=', 'running')
      .compile(),
)

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
  const result = await finishTurnQuery.execute(db, {
    id,
    status,
    finishReason: finishReason ?? null,
    errorCode: error?.code ?? null,
    errorMessage: error?.message?.slice(0, 2000) ?? null,
    counters: counters === undefined ? null : JSON.stringify(counters),
    usage: usage === undefined ? null : JSON.stringify(usage),
  })
  return Number(result.numAffectedRows) === 1
}

export async function findTurn(db: Db, id: string) {
  return db.selectFrom('turns').selectAll().where('id', '=', id).executeTakeFirst()
}

const interrupted = () =>
  ({
    status: 'failed',
    error_code: TURN_INTERRUPTED,
    error_message: INTERRUPTED_MESSAGE,
    finished_at: sql<Date>`now()`,
  }) as const

const INTERRUPTED_MESSAGE = 'the server running this turn stopped (or lost its lease) before the turn finished'

/**
 * The advisory-lock class every server instance locks its `instances.lock_key` under (session
 * level, on a connection of its own): the lock is held exactly as long as the process lives.
 */
export const INSTANCE_LOCK_CLASS = 1802399607

/**
 * Ids of the registered instances that are alive: their lock is held (their process and its
 * connection live) and their heartbeat is younger than their own lease (a frozen or cut-off host
 * whose connection PostgreSQL still believes in counts as dead once its lease runs out).
 */
export const liveInstanceIds = sql`(
  select i.id from instances i
    join pg_locks l on l.locktype = 'advisory' and l.granted and l.objsubid = 2
     and l.classid = ${sql.lit(INSTANCE_LOCK_CLASS)}::oid and l.objid = i.lock_key::oid
     and l.database = (select oid from pg_database where datname = current_database())
   where i.heartbeat_at > now() - make_interval(secs => i.lease_seconds))`

/**
 * Closes as failed (`turn.interrupted`) the running turns of every instance but `self` that is
 * dead, each with its terminal event stored (code `turn.interrupted`, the partial text of its last
 * step) and announced, so a client following it from another instance gets that one terminal;
 * then forgets those instances. All in one transaction. Turns recorded without an instance
 * (embedded use of `runTurn`) are closed once they are an hour old.
 */
export async function failTurnsOfDeadInstances(
  db: Kysely<DB>,
  { self, onClosed }: { self: string | undefined; /** The closed turns' model ids, once committed (metrics). */ onClosed?: ((modelIds: ReadonlyArray<string>) => void) | undefined },
): Promise<number> {
  const closedModels: string[] = []
  const count = await db.transaction().execute(async (trx) => {
    const closed = await trx
      .updateTable('turns')
      .set(interrupted())
      .where('status', '=', 'running')
      .where((eb) =>
        eb.or([
          eb.and([
            eb('instance_id', 'is not', null),
            ...(self ? [eb('instance_id', '!=', self)] : []),
            sql<boolean>`instance_id not in ${liveInstanceIds}`,
          ]),
          eb.and([eb('instance_id', 'is', null), eb('created_at', '<', sql<Date>`now() - interval '1 hour'`)]),
        ]),
      )
      .returning(['id', 'model_id'])
      .execute()
    closedModels.push(...closed.map((row) => row.model_id))
    if (closed.length > 0) await storeTerminals(trx, { turnIds: closed.map((row) => row.id), code: TURN_INTERRUPTED, message: INTERRUPTED_MESSAGE })
    await trx
      .deleteFrom('instances')
      .where(sql<boolean>`id not in ${liveInstanceIds}`)
      .$if(self !== undefined, (q) => q.where('id', '!=', self!))
      .execute()
    return closed.length
  })
  if (closedModels.length > 0) onClosed?.(closedModels)
  return count
}
