// What Admin → Status shows: the turns of the last hour by outcome and the last errors (every
// instance: read from the database), the jobs queued and running, and this instance's open streams
// and time to first delta (its metrics). Codes, times and ids only — never a message body, a URI
// or anything a user wrote.
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'
import type { ServiceMetrics } from './metrics.ts'

export interface ServiceStatus {
  readonly openStreams: number
  readonly metricsOn: boolean
  readonly turnsLastHour: ReadonlyArray<{ readonly status: string; readonly turns: number }>
  /** This instance's time to first delta over the last hour, in ms; undefined without samples. */
  readonly firstDeltaMs: { readonly p50: number; readonly p95: number; readonly samples: number } | undefined
  readonly jobs: { readonly queued: number; readonly running: number }
  readonly recentErrors: ReadonlyArray<{ readonly kind: 'turn' | 'job'; readonly id: string; readonly code: string; readonly at: Date }>
}

export const RECENT_ERRORS = 20

/** The nearest-rank percentile of samples (seconds in, ms out). */
function percentileMs(sorted: ReadonlyArray<number>, p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return Math.round(sorted[rank - 1]! * 1000)
}

export async function readServiceStatus(db: Db, metrics: ServiceMetrics): Promise<ServiceStatus> {
  const [turns, jobs, errors] = await Promise.all([
    sql<{ status: string; turns: number }>`
      select status, count(*)::int as turns from turns where created_at > now() - interval '1 hour' group by status order by status`.execute(db),
    sql<{ status: string; jobs: number }>`
      select status, count(*)::int as jobs from jobs where status in ('queued', 'running') group by status`.execute(db),
    sql<{ kind: 'turn' | 'job'; id: string; code: string; at: Date }>`
      (select 'turn' as kind, id::text, coalesce(error_code, 'unknown') as code, finished_at as at
         from turns where status = 'failed' and finished_at is not null order by finished_at desc limit ${RECENT_ERRORS})
      union all
      (select 'job' as kind, id::text, coalesce(failure->>'code', 'unknown') as code, finished_at as at
         from jobs where status = 'failed' and finished_at is not null order by finished_at desc limit ${RECENT_ERRORS})
      order by at desc limit ${RECENT_ERRORS}`.execute(db),
  ])
  const samples = [...metrics.recentFirstDeltas()].sort((a, b) => a - b)
  return {
    openStreams: metrics.openStreams(),
    metricsOn: metrics.enabled,
    turnsLastHour: turns.rows,
    firstDeltaMs: samples.length === 0 ? undefined : { p50: percentileMs(samples, 50), p95: percentileMs(samples, 95), samples: samples.length },
    jobs: { queued: jobs.rows.find((row) => row.status === 'queued')?.jobs ?? 0, running: jobs.rows.find((row) => row.status === 'running')?.jobs ?? 0 },
    recentErrors: errors.rows,
  }
}
