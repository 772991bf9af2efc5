// A sliding-window limiter kept in PostgreSQL, so every server process sharing the database
// enforces one limit: at most `limit` hits per key in any window of `windowMs`. Each key's row holds
// the times of its hits inside the window (at most `limit` of them); taking a slot is one atomic
// upsert that drops expired hits and appends the new one only while fewer than `limit` remain.
import { sql } from 'kysely'
import type { Db } from '../workspace/store.ts'

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
      const taken = await sql<{ n: number }>`
        insert into rate_limit_hits as r (key, hits) values (${key}, array[${at}::timestamptz])
        on conflict (key) do update
          set hits = array(select h from unnest(r.hits) h where h > ${since}::timestamptz order by h) || ${at}::timestamptz
          where cardinality(array(select h from unnest(r.hits) h where h > ${since}::timestamptz)) < ${limit}
        returning 1 as n`.execute(db)
      if (taken.rows.length > 0) return 0
      const row = await db.selectFrom('rate_limit_hits').select('hits').where('key', '=', key).executeTakeFirst()
      return waitMsFor({ hits: (row?.hits ?? []).map((h) => new Date(h).getTime()), now: at.getTime(), limit, windowMs })
    },
  }
}
