// Gauges read from the database when /metrics is scraped: the pool of this process, and what every
// instance shares — the compile queue (jobs by status, the oldest queued job's age, failures by
// code) and the retrieval catalogs (failing ones, the oldest fetch). Three small queries a scrape;
// nothing is counted between scrapes.
import { sql } from 'kysely'
import type { DatabaseHandle } from '../db/database.ts'
import type { MetricsCollector } from './metrics.ts'

export function databaseGauges(database: Pick<DatabaseHandle, 'db' | 'poolStats'>): MetricsCollector {
  return async () => {
    const pool = database.poolStats()
    const [jobs, failures, catalogs] = await Promise.all([
      sql<{ status: string; jobs: number; oldest_queued: number | null; attempts: number }>`
        select status, count(*)::int as jobs, extract(epoch from now() - min(created_at))::float8 as oldest_queued, coalesce(sum(attempts), 0)::int as attempts
        from jobs where kind = 'compile' group by status`.execute(database.db),
      sql<{ code: string; jobs: number }>`
        select coalesce(failure->>'code', 'unknown') as code, count(*)::int as jobs
        from jobs where kind = 'compile' and status = 'failed' group by 1`.execute(database.db),
      sql<{ total: number; failing: number; oldest: number | null }>`
        select count(*)::int as total,
               count(*) filter (where last_error_at is not null and (fetched_at is null or last_error_at > fetched_at))::int as failing,
               extract(epoch from now() - min(fetched_at))::float8 as oldest
        from retrieval_catalogs`.execute(database.db),
    ])
    const queued = jobs.rows.find((row) => row.status === 'queued')
    const catalog = catalogs.rows[0]
    return [
      { name: 'knowagent_db_pool_connections', help: 'Database connections of this process, by state (in_use, idle, waiting: queries waiting for one; max: the pool size)', value: pool.total - pool.idle, labels: { state: 'in_use' } },
      { name: 'knowagent_db_pool_connections', help: '', value: pool.idle, labels: { state: 'idle' } },
      { name: 'knowagent_db_pool_connections', help: '', value: pool.waiting, labels: { state: 'waiting' } },
      { name: 'knowagent_db_pool_connections', help: '', value: pool.max, labels: { state: 'max' } },
      ...['queued', 'running', 'succeeded', 'failed', 'cancelled'].map((status) => ({
        name: 'knowagent_compile_jobs',
        help: 'Compile jobs by status (every instance: read from the database)',
        value: jobs.rows.find((row) => row.status === status)?.jobs ?? 0,
        labels: { status },
      })),
      { name: 'knowagent_compile_queue_depth', help: 'Compile jobs waiting for a worker', value: queued?.jobs ?? 0 },
      { name: 'knowagent_compile_oldest_queued_seconds', help: 'Age of the oldest compile job waiting for a worker (0 when none)', value: queued?.oldest_queued ?? 0 },
      { name: 'knowagent_compile_attempts', help: 'Attempts recorded on the compile jobs kept', value: jobs.rows.reduce((sum, row) => sum + row.attempts, 0) },
      ...failures.rows.map((row) => ({ name: 'knowagent_compile_jobs_failed', help: 'Failed compile jobs kept, by the failure code (cli.exit, cli.timeout, provider.http …)', value: row.jobs, labels: { code: row.code } })),
      { name: 'knowagent_retrieval_catalogs', help: 'Retrieval catalogs, by state (failing: the last refresh failed)', value: (catalog?.total ?? 0) - (catalog?.failing ?? 0), labels: { state: 'fresh' } },
      { name: 'knowagent_retrieval_catalogs', help: '', value: catalog?.failing ?? 0, labels: { state: 'failing' } },
      { name: 'knowagent_retrieval_catalog_oldest_fetch_seconds', help: 'Age of the oldest successful catalog fetch (0 when none)', value: catalog?.oldest ?? 0 },
    ]
  }
}
