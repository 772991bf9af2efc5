// A turn's stored events read back (a resume, a follower on another instance), the terminal a
// survivor stores for a dead instance's turns, and the retention that prunes them. The writer that
// stores them is turn-event-store.ts.
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'
import { notifyPayloads, TURN_EVENTS_CHANNEL } from './turn-event-store.ts'
import { INTERRUPTED_TERMINAL_SEQ, type NumberedEvent, numberedEvent, parseStoredEvents, partialTextOf, terminalJson } from './turn-events.ts'

/**
 * Stores an `error` terminal event for turns that ended without their instance (it died), numbered
 * past anything that instance may have sent (INTERRUPTED_TERMINAL_SEQ), with the partial text of
 * the last step stored, and NOTIFYs them. A turn that has its terminal already keeps it. Run in the
 * transaction that closed their rows.
 */
export async function storeTerminals(db: Db, { turnIds, code, message }: { turnIds: ReadonlyArray<string>; code: string; message: string }): Promise<void> {
  const stored = await db.selectFrom('turn_event_batches').select(['turn_id', 'first_seq', 'events', 'terminal']).where('turn_id', 'in', turnIds).orderBy('turn_id').orderBy('first_seq').execute()
  const byTurn = new Map<string, NumberedEvent[]>(turnIds.map((id) => [id, []]))
  const ended = new Set(stored.filter((row) => row.terminal).map((row) => row.turn_id))
  for (const row of stored) byTurn.get(row.turn_id)!.push(...parseStoredEvents(row.events))
  const rows = [...byTurn]
    .filter(([turnId]) => !ended.has(turnId))
    .map(([turnId, events]) => {
      const partial = partialTextOf(events)
      const json = terminalJson({ type: 'error', code, message, ...(partial === '' ? {} : { partial }), turn_id: turnId })
      const seq = INTERRUPTED_TERMINAL_SEQ // past anything its dead instance may have sent
      const text = numberedEvent({ seq, name: 'error', json }).frame
      return { turn_id: turnId, first_seq: seq, last_seq: seq, events: text, bytes: Buffer.byteLength(text), terminal: true }
    })
  if (rows.length === 0) return
  await db.insertInto('turn_event_batches').values(rows).onConflict((oc) => oc.doNothing()).execute()
  await sql`select pg_notify(${TURN_EVENTS_CHANNEL}, p) from unnest(${notifyPayloads(rows.map((row) => row.turn_id))}::text[]) p`.execute(db)
}

/** Stored events of a turn numbered above `after`, in order. */
export async function readTurnEvents(db: Db, { turnId, after }: { turnId: string; after: number }): Promise<NumberedEvent[]> {
  const rows = await db
    .selectFrom('turn_event_batches')
    .select('events')
    .where('turn_id', '=', turnId)
    .where('last_seq', '>', after)
    .orderBy('first_seq')
    .execute()
  return rows.flatMap((row) => parseStoredEvents(row.events)).filter((event) => event.seq > after)
}

/** The first event number still stored for the turn and the terminal's, if stored (undefined: nothing stored). */
export async function storedRange(db: Db, turnId: string): Promise<{ first: number; terminal: number | undefined } | undefined> {
  const row = await db
    .selectFrom('turn_event_batches')
    .select((eb) => [eb.fn.min('first_seq').as('first'), eb.fn.max(sql<number | null>`case when terminal then last_seq end`).as('terminal')])
    .where('turn_id', '=', turnId)
    .executeTakeFirst()
  if (row?.first === null || row?.first === undefined) return undefined
  return { first: Number(row.first), terminal: row.terminal === null || row.terminal === undefined ? undefined : Number(row.terminal) }
}

/**
 * Removes the events of turns that ended more than `retentionSeconds` ago, then, while the events
 * of ended turns take more than `maxBytes`, those of the turns that ended first. A running turn's
 * events are never removed. Resolves to the number of turns whose events went.
 */
export async function pruneTurnEvents(db: Db, { retentionSeconds, maxBytes }: { retentionSeconds: number; maxBytes: number }): Promise<number> {
  const expired = await db
    .deleteFrom('turn_event_batches')
    .where('turn_id', 'in', (eb) =>
      eb.selectFrom('turn_event_batches').select('turn_id').where('terminal', '=', true).where('created_at', '<', sql<Date>`now() - make_interval(secs => ${retentionSeconds})`),
    )
    .returning('turn_id')
    .execute()
  const { rows } = await sql<{ turn_id: string }>`
    delete from turn_event_batches where turn_id in (
      select turn_id from (
        select turn_id, sum(sum(bytes)) over (order by max(created_at) filter (where terminal) desc, turn_id) as newer_bytes
        from turn_event_batches
        where turn_id in (select turn_id from turn_event_batches where terminal)
        group by turn_id
      ) ended where newer_bytes > ${maxBytes})
    returning turn_id`.execute(db)
  return new Set([...expired, ...rows].map((row) => row.turn_id)).size
}
