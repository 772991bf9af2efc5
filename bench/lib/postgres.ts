// A real PostgreSQL server for `--knowagent-db postgres`. Each knowagent child creates its own database in it.
import { startEmbeddedPostgres, type ThrowawayPostgres } from '../../tests/support/embedded-postgres.ts'

export type BenchPostgres = ThrowawayPostgres

export function startPostgres(): Promise<BenchPostgres> {
  return startEmbeddedPostgres({ maxConnections: 200, prefix: 'knowagent-bench-pg-' })
}
