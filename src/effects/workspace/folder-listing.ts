// A folder's children as the tree, the listing pages, `ls` and the MCP resources read them: one
// page at a time (directories first, then by name), a child's position, the files below a folder.
import { type RawBuilder, sql } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { Db, NodeRow, Owner } from '../db/schema.ts'
import { findNode, nodeQuery, toNode, type WorkspaceNode } from './store.ts'
import { segmentsToPath } from './uri.ts'

export interface ListPage {
  readonly entries: ReadonlyArray<WorkspaceNode>
  readonly total: number
}

/**
 * The listing order of a folder's children: folders first ('directory' sorts before 'file', the
 * only two kinds), then by name in byte order, each name once per folder. It is the order of the
 * index all_nodes_children_order (migrations/20261209100000_children_order_index.ts), so a page is
 * read from the index and stops after its rows. `alias` is the nodes row's name in the query.
 */
export const childOrder = (alias: string) => sql.raw(`${alias}.kind collate "C", ${alias}.name collate "C"`)

/**
 * The children of one page, read in the listing order from the index, then their current
 * versions' size and mime (for the page's rows only), and the number of all of them (counted only
 * when the page is full: otherwise it is the offset plus the page). `parent` is a SQL expression of
 * the folder's id, `owner` the owner's id.
 */
const pageOfChildren = ({ owner, parent, offset, limit }: { owner: RawBuilder<unknown>; parent: RawBuilder<unknown>; offset: number; limit: number }) => sql`
  page_rows as (
    select c.* from nodes c where c.owner_id = ${owner} and c.parent_id = ${parent}
    order by ${childOrder('c')} offset ${offset}::bigint limit ${limit}::bigint
  ), page as (
    select page_rows.*, file_versions.size, file_versions.mime from page_rows left join file_versions on file_versions.id = page_rows.current_version_id
  ), page_count as (
    select count(*) as n from page_rows
  ), page_total as (
    select case when n < ${limit}::bigint and (n > 0 or ${offset}::bigint = 0) then ${offset}::bigint + n
      else (select count(*) from nodes c where c.owner_id = ${owner} and c.parent_id = ${parent}) end as total
    from page_count
  )`

/**
 * One page of a directory's children in the listing order (`childOrder`), each row with the number
 * of all of them; an empty page is one row of nulls with that number.
 */
export const childrenPageQuery = preparedQuery(
  ['ownerId', 'parentId', 'offset', 'limit'],
  (db, { ownerId, parentId, offset, limit }: { ownerId: string; parentId: string; offset: number; limit: number }) =>
    sql<(NodeRow & { size: unknown; mime: string | null; total: unknown }) | { id: null; total: unknown }>`
      with ${pageOfChildren({ owner: sql`${ownerId}::uuid`, parent: sql`${parentId}::uuid`, offset, limit })}
      select page.*, page_total.total from page_total left join page on true order by ${childOrder('page')}`.compile(db),
)

/**
 * The node at `path` and one page of its children in ONE statement (the `ls` tool's, every call of
 * it re-reading what it lists): the node as `findNode` reads it, its page as `listChildren` lists
 * it, and whether it holds compiled layer pages (`.overview.md`, `.abstract.md`). Three round
 * trips had been each `ls` call's share of a turn's work on the event loop.
 */
export const listingAtPathQuery = preparedQuery(
  ['ownerId', 'path', 'offset', 'limit'],
  (db, p: { ownerId: string; path: string; offset: number; limit: number }) =>
    sql<{ target: (NodeRow & { size: unknown; mime: string | null }) | null; has_layers: boolean; children: Array<NodeRow & { size: unknown; mime: string | null }>; total: unknown }>`
      with target as (
        select nodes.*, file_versions.size, file_versions.mime from nodes left join file_versions on file_versions.id = nodes.current_version_id
        where nodes.owner_id = ${p.ownerId}::uuid and nodes.path = ${p.path}::text
      ), ${pageOfChildren({ owner: sql`${p.ownerId}::uuid`, parent: sql`(select id from target)`, offset: p.offset, limit: p.limit })}
      select (select to_jsonb(target) from target) as target,
        exists (select 1 from nodes l where l.parent_id = (select id from target) and l.generated in ('overview', 'abstract')) as has_layers,
        coalesce((select jsonb_agg(page order by ${childOrder('page')}) from page), '[]'::jsonb) as children,
        (select total from page_total) as total`.compile(db),
)

export interface ListingAtPath {
  readonly node: WorkspaceNode
  readonly page: ListPage
  /** The folder holds an overview or an abstract page. */
  readonly hasLayers: boolean
}

/**
 * `findNode` and `listChildren` of what it finds, in one statement (a page past the end is empty,
 * with the total); undefined when no node is at the path (resolve it the usual way for the exact
 * error, or the root made on first use).
 */
export async function listingAtPath(db: Db, { owner, segments, offset, limit }: { owner: Owner; segments: ReadonlyArray<string>; offset: number; limit: number }): Promise<ListingAtPath | undefined> {
  const { rows } = await listingAtPathQuery.execute(db, { ownerId: owner.id, path: segmentsToPath(segments), offset, limit })
  const row = rows[0]
  if (!row?.target) return undefined
  const entries = row.children.map((child) => toNode(owner, child))
  return { node: toNode(owner, row.target), page: { entries, total: Number(row.total) }, hasLayers: row.has_layers }
}

/** Where a child stands in its folder's listing order (folders first, then by name in C order): how many come before it. */
export async function childPosition(db: Db, { owner, parent, child }: { owner: Owner; parent: WorkspaceNode; child: Pick<WorkspaceNode, 'kind' | 'name'> }): Promise<number> {
  const row = await db
    .selectFrom('nodes')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('owner_id', '=', owner.id)
    .where('parent_id', '=', parent.id)
    .where(sql<boolean>`(${childOrder('nodes')}) < (${child.kind}::text collate "C", ${child.name}::text collate "C")`)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** A page of the children and their total in one query (every `ls`, every turn on a directory), a page past the end too. */
export async function listChildren(
  db: Db,
  { owner, parent, offset, limit }: { owner: Owner; parent: WorkspaceNode; offset: number; limit: number },
): Promise<ListPage> {
  const { rows } = await childrenPageQuery.execute(db, { ownerId: owner.id, parentId: parent.id, offset, limit })
  const entries = rows.flatMap((row) => (row.id === null ? [] : [toNode(owner, row)]))
  return { entries, total: Number(rows[0]?.total ?? 0) }
}

/** Which of these subfolders of `parent` hold no file at any depth (the chat's welcome asks only about folders with files). */
export async function emptySubfolders(db: Db, { owner, parent, names }: { owner: Owner; parent: WorkspaceNode; names: ReadonlyArray<string> }): Promise<Set<string>> {
  const empty = new Set<string>()
  for (const name of names) {
    const path = parent.path === '' ? name : `${parent.path}/${name}`
    const file = await db
      .selectFrom('nodes')
      .select('id')
      .where('owner_id', '=', owner.id)
      .where('kind', '=', 'file')
      .where('path', 'like', `${path.replace(/[\\%_]/g, (c) => '\\' + c)}/%`)
      .limit(1)
      .executeTakeFirst()
    if (file === undefined) empty.add(name)
  }
  return empty
}

/** Files at or below `scope`, ordered by path, one page (for search); `sourcesOnly`: a person's own files, not compile jobs' pages. */
export async function listFilesUnder(
  db: Db,
  { owner, scope, offset, limit, sourcesOnly = false }: { owner: Owner; scope: WorkspaceNode; offset: number; limit: number; sourcesOnly?: boolean },
): Promise<ReadonlyArray<WorkspaceNode>> {
  let query = nodeQuery(db).where('nodes.owner_id', '=', owner.id).where('nodes.kind', '=', 'file')
  if (sourcesOnly) query = query.where('nodes.generated', 'is', null)
  if (scope.kind === 'file') {
    query = query.where('nodes.id', '=', scope.id)
  } else if (scope.path !== '') {
    const prefix = scope.path.replace(/[\\%_]/g, (c) => '\\' + c) + '/%'
    query = query.where('nodes.path', 'like', prefix)
  }
  const rows = await query.orderBy(sql`nodes.path collate "C"`).offset(offset).limit(limit).execute()
  return rows.map((row) => toNode(owner, row))
}

/**
 * One page of the owner's nodes below the root, in path order, after `afterPath` (keyset paging:
 * a page stays right while nodes are added or deleted before or after it). For listings of the
 * whole tree (the MCP face's resources).
 */
export async function listNodesAfter(db: Db, { owner, afterPath, limit }: { owner: Owner; afterPath: string; limit: number }): Promise<ReadonlyArray<WorkspaceNode>> {
  const rows = await nodeQuery(db).where('nodes.owner_id', '=', owner.id).where('nodes.path', '>', afterPath).orderBy('nodes.path').limit(limit).execute()
  return rows.map((row) => toNode(owner, row))
}
