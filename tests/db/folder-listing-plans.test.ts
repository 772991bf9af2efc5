// A folder's page is read from the children-order index, in its order, whatever the size of the
// folder or of the table: in the plans PostgreSQL makes for the listing statements (their generic
// plans, which named statements end up running) the page is neither sorted nor a full scan. Before the index, the one-statement
// `ls` scanned every owner's nodes for a folder it resolved in the same statement (a 5-file folder
// cost ~8 ms with 20,000 nodes elsewhere), and a page of a big folder sorted all its children.
// The pages themselves: listing order, totals at the boundaries, positions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sql } from 'kysely'
import { createUser } from '../../src/effects/auth/users.ts'
import type { Owner } from '../../src/effects/db/schema.ts'
import { childPosition, childrenPageQuery, listChildren, listingAtPath, listingAtPathQuery } from '../../src/effects/workspace/folder-listing.ts'
import { findNode, type WorkspaceNode } from '../../src/effects/workspace/store.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { fillFolder, putText } from '../support/text-file.ts'

const BIG = 20_000

interface PlanNode {
  readonly 'Node Type': string
  readonly 'Relation Name'?: string
  readonly 'Index Name'?: string
  readonly 'Subplan Name'?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** The node and every node below it. */
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

describe('folder listings', () => {
  let database: TestDatabase
  let owner: Owner
  let big: WorkspaceNode
  let small: WorkspaceNode

  beforeAll(async () => {
    database = await openTestDatabase()
    owner = await createUser(database.db, { login: 'lena', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
    for (const name of ['b.md', 'a.md', 'B.md']) await putText(database.db, { owner, segments: ['small', name], text: name })
    await putText(database.db, { owner, segments: ['small', 'zdir', 'inner.md'], text: 'inner' })
    // nodes under few folders: the table's statistics give a folder a third of it
    await fillFolder(database.db, { owner, folder: ['big'], count: BIG })
    big = (await findNode(database.db, owner, ['big']))!
    small = (await findNode(database.db, owner, ['small']))!
    await sql`analyze`.execute(database.db)
  }, 60_000)
  afterAll(async () => {
    await database?.close()
  })

  it('reads a page of children in their order from the children-order index, in the plan a named statement ends up with', async () => {
    const statements = {
      ls: listingAtPathQuery.compile(database.db, { ownerId: owner.id, path: 'small', offset: 0, limit: 50 }),
      page: childrenPageQuery.compile(database.db, { ownerId: owner.id, parentId: small.id, offset: 0, limit: 50 }),
    }
    for (const [name, compiled] of Object.entries(statements)) {
      // the generic plan, as after a few runs of the named statement (PREPARE: PostgreSQL 14 on)
      const plan = await database.db.connection().execute(async (connection) => {
        await sql`set plan_cache_mode = force_generic_plan`.execute(connection)
        try {
          await sql`prepare listing_plan as ${sql.raw(compiled.sql)}`.execute(connection)
          const { rows } = await sql<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>`explain (format json) execute listing_plan(${sql.join(compiled.parameters.map((value) => sql.lit(value)))})`.execute(connection)
          return rows[0]!['QUERY PLAN'][0]!.Plan
        } finally {
          await sql`deallocate all`.execute(connection)
          await sql`reset plan_cache_mode`.execute(connection)
        }
      })
      const page = nodesOf(plan).find((node) => node['Subplan Name'] === 'CTE page_rows')
      expect(page, name).toBeDefined()
      const steps = nodesOf(page!)
      expect(steps.map((step) => [step['Node Type'], step['Index Name']]), name).toContainEqual(['Index Scan', 'all_nodes_children_order'])
      expect(steps.filter((step) => /Sort|Seq Scan/.test(step['Node Type'])), name).toEqual([]) // the order is the index's: nothing sorted, nothing scanned whole
    }
  })

  it('lists folders first, then names in byte order, with the total at every boundary', async () => {
    const names = async (offset: number, limit: number) => {
      const page = await listChildren(database.db, { owner, parent: small, offset, limit })
      return { names: page.entries.map((entry) => entry.name), total: page.total }
    }
    expect(await names(0, 10)).toEqual({ names: ['zdir', 'B.md', 'a.md', 'b.md'], total: 4 })
    expect(await names(0, 4)).toEqual({ names: ['zdir', 'B.md', 'a.md', 'b.md'], total: 4 }) // a full page counts them all
    expect(await names(0, 3)).toEqual({ names: ['zdir', 'B.md', 'a.md'], total: 4 })
    expect(await names(3, 3)).toEqual({ names: ['b.md'], total: 4 }) // a short page: the offset and its rows
    expect(await names(4, 3)).toEqual({ names: [], total: 4 }) // past the end: counted apart
    const listing = await listingAtPath(database.db, { owner, segments: ['small'], offset: 1, limit: 2 })
    expect({ names: listing?.page.entries.map((entry) => entry.name), total: listing?.page.total, node: listing?.node.id }).toEqual({ names: ['B.md', 'a.md'], total: 4, node: small.id })
    const past = await listingAtPath(database.db, { owner, segments: ['small'], offset: 9, limit: 2 })
    expect({ names: past?.page.entries, total: past?.page.total }).toEqual({ names: [], total: 4 })
    for (const [child, position] of [[{ kind: 'directory', name: 'zdir' }, 0], [{ kind: 'file', name: 'B.md' }, 1], [{ kind: 'file', name: 'b.md' }, 3]] as const) {
      expect(await childPosition(database.db, { owner, parent: small, child })).toBe(position)
    }
  })

  it('pages a folder of 20,000 files with its size and total', async () => {
    const last = await listingAtPath(database.db, { owner, segments: ['big'], offset: BIG - 2, limit: 50 })
    expect(last?.page.entries.map((entry) => [entry.name, entry.size])).toEqual([['g019999.md', 4], ['seed.md', 4]])
    expect(last?.page.total).toBe(BIG)
    const first = await listChildren(database.db, { owner, parent: big, offset: 0, limit: 2 })
    expect({ names: first.entries.map((entry) => entry.name), total: first.total }).toEqual({ names: ['g000001.md', 'g000002.md'], total: BIG })
  })
})
