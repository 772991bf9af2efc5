// A sliding-window limiter kept in PostgreSQL, so every server process sharing the database
// enforces one limit: at most `limit` hits per key in any window of `windowMs`. Each key's row holds
// the times of its hits inside the window (at most `limit` of them), in time order; taking a slot is
// one atomic upsert that drops the expired hits and appends the new one only while fewer than
// `limit` remain.
import { sql, type RawBuilder } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { Db } from '../db/schema.ts'

export interface RateLimiter {
  /** Takes one slot for `key`; resolves to how long to wait (ms) when the limit is reached, else 0. */
  readonly take: (key: string) => Promise<number>
}

/** How long until the oldest of the hits that fill the window leaves it (at least 1 ms). */
export function waitMsFor({ hits, now, limit, windowMs }: { hits: ReadonlyArray<number>; now: number; limit: number; windowMs: number }): number {
  const recent = hits.filter((at) => now - at < windowMs).sort((a, b) => a - b)
  if (recent.length < limit) return 1 // freed meanwhile: try again at once
  return Math.max(1, recent[recent.length - limit]! + windowMs - now)
}

/** Turns `synchronous_commit` off for the current transaction only (see `takeSlotQuery`); used as a CTE. */
export const ASYNC_COMMIT = sql`select set_config('synchronous_commit', 'off', true)`

/**
 * The take's upsert (see `takeSlotQuery`), for one row of `from`: a statement that takes a slot
 * only under a condition selects from a CTE that yields that row when it holds, none otherwise.
 * Returns one row (`n`) when the slot was taken.
 */
export function takeSlotUpsert({ key, at, since, limit, from }: { key: unknown; at: unknown; since: unknown; limit: unknown; from: RawBuilder<unknown> }) {
  return sql<{ n: number }>`insert into rate_limit_hits as r (key, hits) select ${key}, array[${at}::timestamptz] from ${from}
    on conflict (key) do update
      set hits = r.hits[width_bucket(${since}::timestamptz, r.hits) + 1:] || greatest(${at}::timestamptz, r.hits[cardinality(r.hits)])
      where cardinality(r.hits) - width_bucket(${since}::timestamptz, r.hits) < ${limit}
    returning 1 as n`
}

/**
 * Takes a slot: one atomic upsert; a row comes back only when the slot was taken. The log is kept
 * in time order, so the expired hits are a prefix that `width_bucket` finds by binary search (the
 * number of hits at or before `since`) and a slice drops — no unnest, no sort, whatever the log's
 * length (a sort of the whole log at every take cost 1.2 ms at 1,000 hits). A hit is recorded no
 * earlier than the latest one: a process whose clock is behind cannot put the log out of order, and
 * its hit leaves the window with the one recorded before it (never earlier than it would have).
 *
 * Its commit is not waited for on disk (`synchronous_commit` off for this statement's transaction
 * only: `set_config(…, true)` ends with it). A take holds its key's row until it commits, so one
 * user's concurrent stream starts queue on that row; waiting for each WAL flush there made 100
 * concurrent takes on one key 2–3× slower. What a crash of PostgreSQL itself can lose is the last
 * fraction of a second of hits — a limit briefly looser, never a refused stream.
 * Compiled once: every compile request runs it (a stream takes its slot inside the turn's admission
 * statement, src/effects/turn/turn-admission.ts, through `takeSlotUpsert`).
 */
export const takeSlotQuery = preparedQuery(['key', 'at', 'since', 'limit'], (db, { key, at, since, limit }: { key: string; at: Date; since: Date; limit: number }) =>
  sql<{ n: number }>`with hit_commit as (${ASYNC_COMMIT}) ${takeSlotUpsert({ key, at, since, limit, from: sql`hit_commit` })}`.compile(db),
)

/** How long `key` must wait for a slot (ms, at least 1), read after a take found the window full. */
export async function slotWaitMs(db: Db, { key, at, limit, windowMs }: { key: string; at: number; limit: number; windowMs: number }): Promise<number> {
  const row = await db.selectFrom('rate_limit_hits').select('hits').where('key', '=', key).executeTakeFirst()
  return waitMsFor({ hits: (row?.hits ?? []).map((h) => new Date(h).getTime()), now: at, limit, windowMs })
}

export function createRateLimiter({
  db,
  limit,
  windowMs,
  now = Date.now,
}: {
  db: Db
  limit: number
  windowMs: number
  now?: () => number
}): RateLimiter {
  return {
    take: async (key) => {
      const at = new Date(now())
      const since = new Date(at.getTime() - windowMs)
      const taken = await takeSlotQuery.execute(db, { key, at, since, limit })
      if (taken.rows.length > 0) return 0
      return slotWaitMs(db, { key, at: at.getTime(), limit, windowMs })
    },
  }
}
