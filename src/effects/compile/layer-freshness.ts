// The compiled layers of a folder (SPEC §8; docs/compile.md): L0 `.abstract.md` says whether the
// folder matters, L1 `.overview.md` where to look, L2 are the sources; `summaries/` holds a page
// per source. Each generated page records what it was built from (`layer_sources`: the source's
// node, its version and its path at publishing). A page is **stale** once a source it was built
// from has a newer version, has moved or been renamed, or is gone; an overview or abstract is also
// stale when a person's file was added to its folder after it was written. Read here, by the
// agent's tools, the preview and the task center alike: one rule.
import { sql } from 'kysely'
import type { Db, GeneratedKind, Owner } from '../db/schema.ts'
import { formatKbUri, pathToSegments } from '../workspace/uri.ts'

export type LayerChange =
  | { readonly change: 'changed'; readonly uri: string }
  | { readonly change: 'moved'; readonly uri: string; readonly from: string }
  | { readonly change: 'deleted'; readonly uri: string }
  | { readonly change: 'added'; readonly uri: string }

export interface PageFreshness {
  readonly pageId: string
  readonly kind: GeneratedKind
  /** When the page's current version was written (the folder's last compile, for an overview or abstract). */
  readonly writtenAt: Date
  /** What changed since, in its sources and (for an overview or abstract) its folder; empty when fresh. */
  readonly changes: ReadonlyArray<LayerChange>
  /** Whether the page recorded its sources (pages written before this was kept did not: never called stale). */
  readonly tracked: boolean
}

export const isStale = (freshness: Pick<PageFreshness, 'changes'>): boolean => freshness.changes.length > 0

/** At most this many changes are listed per page (the count beyond is still reported). */
export const MAX_LISTED_CHANGES = 20

/**
 * Records what a page was built from, replacing what it recorded before: each source node with the
 * version and path it has now. Call in the publishing transaction, after the page is written.
 */
export async function recordLayerSources(trx: Db, { pageId, sourceIds }: { pageId: string; sourceIds: ReadonlyArray<string> }): Promise<void> {
  await trx.deleteFrom('layer_sources').where('page_id', '=', pageId).execute()
  const ids = [...new Set(sourceIds)]
  if (ids.length === 0) return
  await sql`
    insert into layer_sources (page_id, source_id, source_version_id, source_path)
    select ${pageId}::uuid, n.id, n.current_version_id, n.path from nodes n where n.id = any(${ids}::uuid[])`.execute(trx)
}

/** The source node ids recorded for these pages (e.g. every summary of a folder, for its overview). */
export async function recordedSourcesOf(db: Db, pageIds: ReadonlyArray<string>): Promise<string[]> {
  if (pageIds.length === 0) return []
  const rows = await db.selectFrom('layer_sources').select('source_id').distinct().where('page_id', 'in', pageIds).execute()
  return rows.map((row) => row.source_id)
}

interface PageRow {
  readonly id: string
  readonly parent_id: string | null
  readonly generated: GeneratedKind | null
  readonly written_at: Date
}

/**
 * The freshness of generated pages (ids of `owner`'s nodes; other ids and people's own files are
 * left out of the answer). A few statements whatever the number of pages.
 */
export async function pagesFreshness(db: Db, owner: Owner, pageIds: ReadonlyArray<string>): Promise<Map<string, PageFreshness>> {
  const answer = new Map<string, PageFreshness>()
  if (pageIds.length === 0) return answer
  const pages = (await db
    .selectFrom('nodes')
    .leftJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['nodes.id', 'nodes.parent_id', 'nodes.generated', 'file_versions.created_at as written_at'])
    .where('nodes.owner_id', '=', owner.id)
    .where('nodes.id', 'in', [...new Set(pageIds)])
    .where('nodes.generated', 'is not', null)
    .execute()) as PageRow[]
  if (pages.length === 0) return answer
  const uriOf = (path: string) => formatKbUri({ login: owner.login, segments: pathToSegments(path), directory: false })
  const recorded = await sql<{ page_id: string; source_id: string; source_version_id: string | null; source_path: string; path: string | null; current_version_id: string | null }>`
    select s.page_id, s.source_id, s.source_version_id, s.source_path, n.path, n.current_version_id
      from layer_sources s left join nodes n on n.id = s.source_id and n.owner_id = ${owner.id}
     where s.page_id = any(${pages.map((page) => page.id)}::uuid[])`.execute(db)
  const byPage = new Map<string, typeof recorded.rows>()
  for (const row of recorded.rows) byPage.set(row.page_id, [...(byPage.get(row.page_id) ?? []), row])
  // A person's files added to a folder after its overview or abstract was written.
  const folderPages = pages.filter((page) => page.generated !== 'summary' && page.parent_id !== null)
  const added = new Map<string, Array<{ id: string; path: string; created_at: Date }>>()
  if (folderPages.length > 0) {
    const rows = await db
      .selectFrom('nodes')
      .select(['id', 'parent_id', 'path', 'created_at'])
      .where('owner_id', '=', owner.id)
      .where('parent_id', 'in', [...new Set(folderPages.map((page) => page.parent_id!))])
      .where('kind', '=', 'file')
      .where('generated', 'is', null)
      .execute()
    for (const row of rows) added.set(row.parent_id!, [...(added.get(row.parent_id!) ?? []), { id: row.id, path: row.path, created_at: new Date(row.created_at) }])
  }
  for (const page of pages) {
    const sources = byPage.get(page.id) ?? []
    const writtenAt = new Date(page.written_at)
    const changes: LayerChange[] = []
    for (const source of sources) {
      if (source.path === null) changes.push({ change: 'deleted', uri: uriOf(source.source_path) })
      else if (source.path !== source.source_path) changes.push({ change: 'moved', uri: uriOf(source.path), from: uriOf(source.source_path) })
      else if (source.current_version_id !== source.source_version_id) changes.push({ change: 'changed', uri: uriOf(source.path) })
    }
    if (page.generated !== 'summary' && page.parent_id !== null && sources.length > 0) {
      const known = new Set(sources.map((source) => source.source_id))
      for (const file of added.get(page.parent_id) ?? []) {
        if (!known.has(file.id) && file.created_at > writtenAt) changes.push({ change: 'added', uri: uriOf(file.path) })
      }
    }
    answer.set(page.id, { pageId: page.id, kind: page.generated!, writtenAt, changes, tracked: sources.length > 0 })
  }
  return answer
}

/** A folder's compiled layers as they are now: its abstract and overview (when it has them) and their freshness. */
export interface FolderLayers {
  readonly abstract?: { readonly id: string; readonly uri: string; readonly freshness: PageFreshness | undefined } | undefined
  readonly overview?: { readonly id: string; readonly uri: string; readonly freshness: PageFreshness | undefined } | undefined
}

export async function folderLayers(db: Db, owner: Owner, folderId: string): Promise<FolderLayers> {
  const rows = await db
    .selectFrom('nodes')
    .select(['id', 'path', 'generated'])
    .where('owner_id', '=', owner.id)
    .where('parent_id', '=', folderId)
    .where('kind', '=', 'file')
    .where('generated', 'in', ['overview', 'abstract'])
    .execute()
  if (rows.length === 0) return {}
  const freshness = await pagesFreshness(db, owner, rows.map((row) => row.id))
  const layer = (kind: GeneratedKind) => {
    const row = rows.find((candidate) => candidate.generated === kind)
    return row ? { id: row.id, uri: formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: false }), freshness: freshness.get(row.id) } : undefined
  }
  return { abstract: layer('abstract'), overview: layer('overview') }
}

/** "changed: kb://…/a.md; deleted: kb://…/b.md" — at most MAX_LISTED_CHANGES, then how many more. */
export function describeChanges(changes: ReadonlyArray<LayerChange>): string {
  const listed = changes.slice(0, MAX_LISTED_CHANGES).map((change) => (change.change === 'moved' ? `moved: ${change.from} → ${change.uri}` : `${change.change}: ${change.uri}`))
  return changes.length > MAX_LISTED_CHANGES ? `${listed.join('; ')}; and ${changes.length - MAX_LISTED_CHANGES} more` : listed.join('; ')
}

/** What a generated page is, as the preview says it: what it was compiled from and whether that changed since. */
export interface GeneratedPageInfo {
  readonly kind: GeneratedKind
  /** A summary's source where it is now; null when it is gone; undefined for an overview or abstract, or a summary written before sources were kept. */
  readonly source?: { readonly uri: string; readonly name: string } | null | undefined
  /**
   * The folder whose compile writes the page again: an overview's or abstract's own folder, a
   * summary's source's folder; undefined when there is none (the source is gone).
   */
  readonly folderUri: string | undefined
  readonly freshness: PageFreshness | undefined
}

/** The page `pageId` of `owner`'s as a generated page; undefined for a person's own file. */
export async function generatedPage(db: Db, owner: Owner, pageId: string): Promise<GeneratedPageInfo | undefined> {
  const page = await db
    .selectFrom('nodes as page')
    .leftJoin('nodes as folder', 'folder.id', 'page.parent_id')
    .leftJoin('nodes as source', (join) => join.onRef('source.id', '=', 'page.generated_from').on('source.owner_id', '=', owner.id))
    .leftJoin('nodes as source_folder', 'source_folder.id', 'source.parent_id')
    .select(['page.generated', 'page.generated_from', 'folder.path as folder_path', 'source.path as source_path', 'source.name as source_name', 'source_folder.path as source_folder_path'])
    .where('page.owner_id', '=', owner.id)
    .where('page.id', '=', pageId)
    .executeTakeFirst()
  if (!page || page.generated === null) return undefined
  const folderUri = (path: string | null) => (path === null ? undefined : formatKbUri({ login: owner.login, segments: pathToSegments(path), directory: true }))
  const freshness = (await pagesFreshness(db, owner, [pageId])).get(pageId)
  if (page.generated !== 'summary') return { kind: page.generated, folderUri: folderUri(page.folder_path), freshness }
  if (page.generated_from === null) return { kind: 'summary', source: undefined, folderUri: undefined, freshness }
  if (page.source_path === null) return { kind: 'summary', source: null, folderUri: undefined, freshness }
  return {
    kind: 'summary',
    source: { uri: formatKbUri({ login: owner.login, segments: pathToSegments(page.source_path), directory: false }), name: page.source_name! },
    folderUri: folderUri(page.source_folder_path),
    freshness,
  }
}
