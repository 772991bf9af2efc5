// Queries compiled once. Building a query with kysely and compiling it (immutable operation-node
// trees, then a visitor over them) costs ~0.2 ms of event loop per query, which every turn paid
// for each of its hot queries (docs/performance.md, "fourth pass"). A prepared query is built
// once, with a placeholder standing for each parameter; every run reuses its SQL and puts the
// real values where the placeholders were. The SQL is exactly what kysely builds (tests compare).
import { createQueryId, type CompiledQuery, type QueryResult } from 'kysely'
import type { Db } from './schema.ts'
import { registerNamedStatement } from './named-statements.ts'

/** A parameter's place in the compiled SQL: a named value of the call, or a constant of the query. */
type Slot = { readonly name: string } | { readonly constant: unknown }

export interface PreparedQuery<Params extends Record<string, unknown>, Row> {
  /** The compiled query for these values, as kysely would compile `build(db, params)`. */
  readonly compile: (db: Db, params: Params) => CompiledQuery<Row>
  readonly execute: (db: Db, params: Params) => Promise<QueryResult<Row>>
  /** The query built and compiled anew with these values (what `compile` must equal; for tests). */
  readonly build: (db: Db, params: Params) => CompiledQuery<Row>
}

/**
 * `build` receives a placeholder for each of `names` (typed as the parameter, never read) and
 * returns the compiled query. Every named parameter must reach the SQL as a bound value (`$n`),
 * never inlined, and the query's shape must not depend on the values — no arrays spread into
 * `in (…)`, no branches on a parameter: one shape, one SQL text. Both are checked at first use.
 * Plugins of the `db` a run uses see its query (their `transformQuery` gets the template's
 * operation tree, whose values are the placeholders); one that returns another tree gets what it
 * asked for: that run is built and compiled anew, as kysely would.
 */
export function preparedQuery<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Db, params: Params) => CompiledQuery<Row>,
): PreparedQuery<Params, Row> {
  let template: { readonly compiled: CompiledQuery<Row>; readonly slots: ReadonlyArray<Slot> } | undefined
  const prepare = (db: Db) => {
    const placeholders = new Map<unknown, string>(names.map((name) => [Symbol(name), name]))
    const compiled = build(db, Object.fromEntries([...placeholders].map(([symbol, name]) => [name, symbol])) as Params)
    const slots: Slot[] = compiled.parameters.map((value) => {
      const name = placeholders.get(value)
      return name === undefined ? { constant: value } : { name }
    })
    const unused = names.filter((name) => !slots.some((slot) => 'name' in slot && slot.name === name))
    if (unused.length > 0) throw new Error(`prepared query: ${unused.join(', ')} did not reach the SQL as bound parameters: ${compiled.sql}`)
    registerNamedStatement(compiled.sql) // one SQL text for every run: a named statement (named-statements.ts)
    return { compiled, slots }
  }
  const compile = (db: Db, params: Params): CompiledQuery<Row> => {
    template ??= prepare(db.withoutPlugins()) // the query itself; the plugins of each run see it below
    const queryId = createQueryId()
    const executor = db.getExecutor()
    if (executor.plugins.length > 0 && executor.transformQuery(template.compiled.query, queryId) !== template.compiled.query) return build(db, params)
    const parameters = template.slots.map((slot) => ('name' in slot ? params[slot.name] : slot.constant))
    return { ...template.compiled, queryId, parameters }
  }
  return { compile, execute: (db, params) => db.executeQuery(compile(db, params)), build }
}
