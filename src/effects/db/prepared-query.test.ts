import { DummyDriver, Kysely, type CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely'
import { describe, expect, test } from 'vitest'
import { liveTokenQuery } from '../auth/users.ts'
import { takeSlotQuery } from '../limits/rate-limiter.ts'
import { admitTurnQuery } from '../turn/turn-admission.ts'
import { finishTurnQuery, insertRunningTurnQuery } from '../turn/turn-records.ts'
import { findNodeQuery } from '../workspace/store.ts'
import { childrenPageQuery } from '../workspace/folder-listing.ts'
import type { DB } from './schema.ts'
import { preparedQuery } from './prepared-query.ts'

// Compiling needs the dialect, not a server: the same compiler as the pg dialect, no driver.
const db = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
})

const sqlAndParameters = ({ sql: text, parameters }: { sql: string; parameters: ReadonlyArray<unknown> }) => ({ sql: text, parameters })

describe('preparedQuery', () => {
  test('puts each value where its placeholder was, repeated ones included, and keeps the constants', () => {
    const query = preparedQuery(['owner', 'since'], (kysely, p: { owner: string; since: Date }) =>
      sql<{ n: number }>`select count(*) as n from nodes where owner_id = ${p.owner} and kind = ${'file'} and updated_at > ${p.since} and created_at > ${p.since}`.compile(kysely),
    )
    const since = new Date('2026-01-02T03:04:05Z')
    const first = query.compile(db, { owner: 'u1', since })
    expect(first.sql).toBe('select count(*) as n from nodes where owner_id = $1 and kind = $2 and updated_at > $3 and created_at > $4')
    expect(first.parameters).toEqual(['u1', 'file', since, since])
    const later = new Date('2026-05-06T00:00:00Z')
    expect(query.compile(db, { owner: 'u2', since: later }).parameters).toEqual(['u2', 'file', later, later])
  })

  test('gives every run its own query id (result plugins tell runs apart by it)', () => {
    const a = findNodeQuery.compile(db, { ownerId: 'u', path: '' })
    const b = findNodeQuery.compile(db, { ownerId: 'u', path: '' })
    expect(a.queryId).not.toBe(b.queryId)
  })

  test('shows each run to the plugins of its db, and builds anew for a plugin that rewrites the query', () => {
    const seen: string[] = []
    const watching = db.withPlugin({ transformQuery: ({ node }) => (seen.push(node.kind), node), transformResult: async ({ result }) => result })
    const watched = findNodeQuery.compile(watching, { ownerId: 'o', path: 'a' })
    expect(seen).toEqual(['SelectQueryNode'])
    expect(watched.sql).toBe(findNodeQuery.compile(db, { ownerId: 'o', path: 'a' }).sql)
    // A plugin returning a new tree (here: one more where clause) gets exactly the query it rewrote.
    const rewriting = db.withPlugin({
      transformQuery: ({ node }) =>
        node.kind === 'SelectQueryNode' ? { ...node, limit: { kind: 'LimitNode', limit: { kind: 'ValueNode', value: 1 } } } : node,
      transformResult: async ({ result }) => result,
    } as Parameters<typeof db.withPlugin>[0])
    const rewritten = findNodeQuery.compile(rewriting, { ownerId: 'o', path: 'a' })
    expect(rewritten.sql).toMatch(/ limit \$3$/)
    expect(rewritten.parameters).toEqual(['o', 'a', 1])
  })

  test('refuses a parameter that does not reach the SQL as a bound value', () => {
    const inlined = preparedQuery(['login', 'limit'], (kysely, p: { login: string; limit: number }) =>
      kysely.selectFrom('users').select('id').where('login', '=', p.login).limit(sql.lit(10)).compile(),
    )
    expect(() => inlined.compile(db, { login: 'a', limit: 3 })).toThrow(/limit did not reach the SQL as bound parameters/)
  })

  // The hot queries of a turn: what each prepared query runs is exactly what kysely builds anew.
  type Both = () => readonly [CompiledQuery<unknown>, CompiledQuery<unknown>]
  const cases: ReadonlyArray<readonly [string, Both]> = [
    ['the node at a path', () => [findNodeQuery.compile(db, { ownerId: 'o-1', path: 'notes/a.md' }), findNodeQuery.build(db, { ownerId: 'o-1', path: 'notes/a.md' })]],
    [
      'a page of children',
      () => {
        const page = { ownerId: 'o-1', parentId: 'n-1', offset: 50, limit: 25 }
        return [childrenPageQuery.compile(db, page), childrenPageQuery.build(db, page)]
      },
    ],
    ['a live API token', () => [liveTokenQuery.compile(db, { tokenHash: 'h1' }), liveTokenQuery.build(db, { tokenHash: 'h1' })]],
    [
      'a running turn',
      () => {
        const turn = { id: 't-1', userId: 'u-1', uri: 'kb://a/', modelId: 'local', instanceId: null }
        return [insertRunningTurnQuery.compile(db, turn), insertRunningTurnQuery.build(db, turn)]
      },
    ],
    [
      'a finished turn',
      () => {
        const outcome = { id: 't-1', status: 'failed', finishReason: null, errorCode: 'x', errorMessage: 'y', counters: '{"a":1}', usage: null } as const
        return [finishTurnQuery.compile(db, outcome), finishTurnQuery.build(db, outcome)]
      },
    ],
    [
      'a rate-limit slot',
      () => {
        const slot = { key: 'stream:u', at: new Date(2_000_000), since: new Date(1_000_000), limit: 30 }
        return [takeSlotQuery.compile(db, slot), takeSlotQuery.build(db, slot)]
      },
    ],
    [
      "a turn's admission",
      () => {
        const admission = {
          ownerId: 'u-1', path: 'docs/a.md', key: 'stream:u-1', at: new Date(2_000_000), since: new Date(1_940_000), limit: 30,
          turnId: 't-1', uri: 'kb://me/docs/a.md', modelId: 'local', instanceId: 'i-1', tokenHash: 'h-1',
        }
        return [admitTurnQuery.compile(db, admission), admitTurnQuery.build(db, admission)]
      },
    ],
  ]

  test.each(cases)('%s: the same SQL and parameters as a fresh build', (_name, compileBoth) => {
    const [prepared, fresh] = compileBoth()
    expect(sqlAndParameters(prepared)).toEqual(sqlAndParameters(fresh))
    expect(prepared.parameters.some((value) => typeof value === 'symbol')).toBe(false)
  })
})
