// The hot queries as named prepared statements. A query sent with no name is parsed, analysed and
// planned by its PostgreSQL backend every time; for the token lookup and the node at a path the
// planning alone was ~0.3 ms of the ~0.35 ms each cost the database (pg_stat_statements during
// `npm run bench`, docs/performance.md "fifth pass"), on a machine whose cores the server and its
// streams need. Named, a statement is parsed once per connection and its plan is cached by the
// backend (PostgreSQL re-plans by itself after a schema change).
//
// Only the SQL texts registered here are named — the queries compiled once by preparedQuery —
// so the set of statements a connection keeps is small and fixed. Anything else goes as before.
// A named statement can fail where an unnamed one would not: "cached plan must not change result
// type" when another process changed a table a `select *` reads while this one ran. That statement
// is then sent unnamed from then on (the answer is the same); the query is sent again unnamed at
// once, except inside a transaction, which the failure has aborted: there the original error is
// what the caller gets (and its rollback; the next attempt goes unnamed).
import { createHash } from 'node:crypto'
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'
import { traced, tracingOn } from '../observability/tracing.ts'

/** SQL text → statement name; a statement that failed named once is removed (unnamed from then on). */
const names = new Map<string, string>()

/** Registers `sql` as a named statement (the same text always gets the same name). */
export function registerNamedStatement(sql: string): void {
  if (!names.has(sql)) names.set(sql, `knowagent_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`)
}

/** The name `sql` is sent under, or undefined when it goes unnamed. */
export function namedStatementFor(sql: string): string | undefined {
  return names.get(sql)
}

const sqlState = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined)

/** PostgreSQL's refusal to run a cached plan whose result type changed (feature_not_supported). */
function isStalePlan(error: unknown): boolean {
  return sqlState(error) === '0A000' && String((error as { message?: unknown }).message).includes('cached plan must not change result type')
}

/** in_failed_sql_transaction: the statement ran inside a transaction an earlier error aborted. */
const inAbortedTransaction = (error: unknown): boolean => sqlState(error) === '25P02'

function adapt(client: pg.PoolClient): PostgresPoolClient {
  const traceable = (sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>): unknown =>
    // one span a statement when tracing is on: its text (parameters are never in it), not its values
    tracingOn() && typeof sqlOrCursor === 'string'
      ? traced('db.query', { 'db.system.name': 'postgresql', 'db.query.text': sqlOrCursor.slice(0, 500) }, () => query(sqlOrCursor, parameters) as Promise<unknown>)
      : query(sqlOrCursor, parameters)
  const query = (sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>): unknown => {
    if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as pg.Submittable)
    const name = namedStatementFor(sqlOrCursor)
    if (name === undefined) return client.query(sqlOrCursor, parameters as unknown[])
    return client.query({ name, text: sqlOrCursor, values: parameters as unknown[] }).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error
      names.delete(sqlOrCursor)
      return client.query(sqlOrCursor, parameters as unknown[]).catch((retryError: unknown) => {
        throw inAbortedTransaction(retryError) ? error : retryError
      })
    })
  }
  return {
    query: traceable as PostgresPoolClient['query'],
    release: (destroy) => client.release(destroy),
  }
}

/** `pool` as kysely's PostgresDialect takes it, sending the registered statements named. */
export function namedStatementPool(pool: pg.Pool): PostgresPool {
  // One adapter per pooled client: kysely keeps its connection object per client.
  const adapters = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  return {
    // kysely opens its query-cancelling connection with the pool's client class (pg-pool sets it).
    Client: (pool as unknown as { readonly Client: PostgresPool['Client'] }).Client,
    options: pool.options,
    connect: async () => {
      const client = await pool.connect()
      let adapter = adapters.get(client)
      if (adapter === undefined) {
        adapter = adapt(client)
        adapters.set(client, adapter)
      }
      return adapter
    },
    end: () => pool.end(),
  }
}
