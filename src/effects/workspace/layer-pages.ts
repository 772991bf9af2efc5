// Generated pages as a layer over a person's files (SPEC §8; docs/compile.md "How search and the
// agent treat the pages"): a compile job's summary of a file, a folder's `.overview.md` (L1) and
// `.abstract.md` (L0). Search ranks them after the sources, never counts them as files scanned,
// shows a hit in one as "summary of <source>" / "overview of <folder>", and lets a source's own
// hit win over its summary's. These are the reads that tell a page from a source.
import { sql } from 'kysely'
import type { Db, GeneratedKind, NodeKind, Owner } from '../db/schema.ts'
import { formatKbUri, pathToSegments } from './uri.ts'

/** What a generated page is a layer of: the source file a summary summarises, or the folder of an overview or abstract. */
export interface LayerOf {
  readonly kind: GeneratedKind
  /** The source file's URI (a summary; null when its source is gone or was never recorded), or the folder's URI. */
  readonly of: string | null
}

export interface LayerPage extends LayerOf {
  readonly id: string
  readonly uri: string
  /** A summary's source node, when it still exists. */
  readonly sourceId: string | null
}

/** "summary of kb://…/a.md", "overview of kb://…/team/", "abstract of kb://…/team/"; "summary of a deleted file". */
export function describeLayer({ kind, of }: LayerOf): string {
  return `${kind} of ${of ?? (kind === 'summary' ? 'a deleted file' : 'a folder')}`
}

const parentPath = (path: string): string => path.split('/').slice(0, -1).join('/')

/** The layer a node is, from its row: its kind, and its source's path (a summary) or its own path (for the folder). */
export function layerOfRow(owner: Owner, row: { readonly path: string; readonly generated: GeneratedKind; readonly source_path: string | null }): LayerOf {
  if (row.generated === 'summary') {
    return { kind: 'summary', of: row.source_path === null ? null : formatKbUri({ login: owner.login, segments: pathToSegments(row.source_path), directory: false }) }
  }
  return { kind: row.generated, of: formatKbUri({ login: owner.login, segments: pathToSegments(parentPath(row.path)), directory: true }) }
}

/** The node searched (store.ts's WorkspaceNode fits; not imported: store.ts indexes through search-index.ts, which reads this). */
interface Scope {
  readonly id: string
  readonly path: string
  readonly kind: NodeKind
}

const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => '\\' + c)

/** Rows at or below `scope` (alias `n`): the node itself for a file, everything below for a folder. */
function withinScope(scope: Scope, alias: 'n' | 'src') {
  const column = sql.ref(`${alias}.path`)
  if (scope.kind === 'file') return sql<boolean>`${sql.ref(`${alias}.id`)} = ${scope.id}`
  if (scope.path === '') return sql<boolean>`true`
  return sql<boolean>`${column} like ${escapeLike(scope.path) + '/%'}`
}

interface LayerRow {
  readonly id: string
  readonly path: string
  readonly generated: GeneratedKind
  readonly source_id: string | null
  readonly source_path: string | null
}

function toLayerPage(owner: Owner, row: LayerRow): LayerPage {
  return { id: row.id, uri: formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: false }), sourceId: row.source_id, ...layerOfRow(owner, row) }
}

/** The summaries within `scope` of these source files (a source may have more than one, in different artifact folders). */
export async function summariesOf(db: Db, { owner, scope, sourceIds }: { owner: Owner; scope: Scope; sourceIds: ReadonlyArray<string> }): Promise<LayerPage[]> {
  if (sourceIds.length === 0) return []
  const { rows } = await sql<LayerRow>`
    select n.id, n.path, n.generated, src.id as source_id, src.path as source_path
      from nodes n join nodes src on src.id = n.generated_from and src.owner_id = n.owner_id
     where n.owner_id = ${owner.id} and n.kind = 'file' and n.generated = 'summary'
       and n.generated_from = any(${[...sourceIds]}::uuid[]) and ${withinScope(scope, 'n')}
     order by n.path collate "C"`.execute(db)
  return rows.map((row) => toLayerPage(owner, row))
}

/**
 * The generated pages within `scope` that belong to no source file in it: every overview and
 * abstract, and the summaries whose source is gone or lies outside the scope. By path, at most `limit`.
 */
export async function layerPagesApart(db: Db, { owner, scope, limit }: { owner: Owner; scope: Scope; limit: number }): Promise<LayerPage[]> {
  const { rows } = await sql<LayerRow>`
    select n.id, n.path, n.generated, src.id as source_id, src.path as source_path
      from nodes n left join nodes src on src.id = n.generated_from and src.owner_id = n.owner_id
     where n.owner_id = ${owner.id} and n.kind = 'file' and n.generated is not null and ${withinScope(scope, 'n')}
       and (n.generated <> 'summary' or src.id is null or not (${withinScope(scope, 'src')}))
     order by n.path collate "C"
     limit ${limit}`.execute(db)
  return rows.map((row) => toLayerPage(owner, row))
}

/** What a node is a layer of, or undefined for a person's own file. */
export async function layerOfNode(db: Db, { owner, nodeId }: { owner: Owner; nodeId: string }): Promise<LayerOf | undefined> {
  const { rows } = await sql<{ path: string; generated: GeneratedKind | null; source_path: string | null }>`
    select n.path, n.generated, src.path as source_path
      from nodes n left join nodes src on src.id = n.generated_from and src.owner_id = n.owner_id
     where n.owner_id = ${owner.id} and n.id = ${nodeId}`.execute(db)
  const row = rows[0]
  return row === undefined || row.generated === null ? undefined : layerOfRow(owner, { ...row, generated: row.generated })
}
