// A folder's page is read from the children-order index, whatever the size of the folder or of the
// table: the plans PostgreSQL makes for the listing statements (their generic plans, which named
// statements end up running) read no node table sequentially. Before the index, the one-statement
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
import { putText } from '../support/text-file.ts'

const BIG = 20_000

interface PlanNode {
  readonly 'Node Type': string
  readonly 'Relation Name'?: string
  readonly 'Index Name'?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

const scansOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(scansOf)]

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
    const seed = await putText(database.db, { owner, segments: ['big', 'seed.md'], text: 'seed' })
    big = (await findNode(database.db, owner, ['big']))!
    small = (await findNode(database.db, owner, ['small']))!
    // nodes under few folders: the table's statistics give a folder a third of it
    await sql`insert into nodes (id, owner_id, parent_id, name, path, kind, current_version_id)
      select gen_random_uuid(), ${owner.id}::uuid, ${big.id}::uuid, name, 'big/' || name, 'file', ${seed.node.currentVersionId}::uuid
      from (select 'g' || lpad(i::text, 6, '0') || '.md' as name from generate_series(1, ${BIG - 1}::int) i) names`.execute(database.db)
    await sql`analyze`.execute(database.db)
  }, 60_000)
  afterAll(async () => {
    await database?.close()
  })

  it('plans every listing statement without a sequential scan of the nodes, the page from the children-order index', async () => {
    const statements = {
      ls: listingAtPathQuery.compile(database.db, { ownerId: owner.id, path: 'small', offset: 0, limit: 50 }).sql,
      page: childrenPageQuery.compile(database.db, { ownerId: owner.id, parentId: small.id, offset: 0, limit: 50 }).sql,
    }
    for (const [name, text] of Object.entries(statements)) {
      const { rows } = await sql<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>`explain (generic_plan, format json) ${sql.raw(text)}`.execute(database.db)
      const scans = scansOf(rows[0]!['QUERY PLAN'][0]!.Plan)
      expect(scans.filter((scan) => scan['Node Type'] === 'Seq Scan' && scan['Relation Name'] === 'all_nodes'), name).toEqual([])
      expect(scans.map((scan) => scan['Index Name']), name).toContain('all_nodes_children_order')
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
    expect(await listingAtPath(database.db, { owner, segments: ['small'], offset: 9, limit: 2 })).toBeUndefined()
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
