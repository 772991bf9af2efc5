// The workspace-wide search (the page's Ctrl+K box, `GET /api/v1/workspace/search`): PostgreSQL's
// own full-text search over passages of every current file version (a tsvector per passage with a
// GIN index, written with each version) and trigram matching of node names (pg_trgm), ranked
// together. It answers from the index, never by reading files; the agent's `search` tool and the
// `/search` command keep their scoped, paged scan. See search-text.ts for what a word is.
import { type RawBuilder, sql } from 'kysely'
import type { Db, GeneratedKind, Owner } from '../db/schema.ts'
import { layerOfRow, type LayerOf } from './layer-pages.ts'
import { formatKbUri, pathToSegments } from './uri.ts'
import { findAll, snippetAround } from './text-paging.ts'
import { highlightTerms, passagesOf, queryWords, searchableText, tsQueryOf } from './search-text.ts'

const INSERT_BATCH = 500
export const SEARCH_MAX_LIMIT = 50
export const SEARCH_MAX_OFFSET = 500
const SNIPPET_RADIUS = 90

/**
 * Indexes the text of a file's new current version and drops the passages of its earlier ones,
 * inside the transaction that switches the version (so the index follows the switch atomically).
 */
export async function indexVersionText(
  db: Db,
  { ownerId, nodeId, versionId, body }: { ownerId: string; nodeId: string; versionId: string; body: string | null },
): Promise<void> {
  await db.deleteFrom('search_passages').where('node_id', '=', nodeId).where('version_id', '<>', versionId).execute()
  if (body === null) return
  const passages = passagesOf(body)
  for (let i = 0; i < passages.length; i += INSERT_BATCH) {
    await db
      .insertInto('search_passages')
      .values(
        passages.slice(i, i + INSERT_BATCH).map((passage) => ({
          version_id: versionId,
          owner_id: ownerId,
          node_id: nodeId,
          start: passage.start,
          length: passage.length,
          words: sql<string>`to_tsvector('simple', ${searchableText(passage.text)})`,
        })),
      )
      .onConflict((oc) => oc.columns(['version_id', 'start']).doNothing())
      .execute()
  }
}

export interface WorkspaceSearchHit {
  readonly uri: string
  readonly name: string
  readonly kind: 'directory' | 'file'
  /** Which parts matched: the node's name, its text, or both. */
  readonly matched: 'name' | 'text' | 'name+text'
  /** Code-point offset of the best passage's first matching word (files whose text matched). */
  readonly offset: number | null
  readonly snippet: string | null
  readonly score: number
  /**
   * Set for a compiled page (layer-pages.ts): a summary of the source file `of`, or the overview or
   * abstract of the folder `of`. Shown as "summary of …"; ranked after every person's own node.
   */
  readonly layer?: LayerOf
}

export interface WorkspaceSearchPage {
  readonly query: string
  readonly hits: ReadonlyArray<WorkspaceSearchHit>
  readonly offset: number
  readonly next_offset: number | null
}

interface Candidate {
  readonly nodeId: string
  readonly path: string
  readonly name: string
  readonly kind: 'directory' | 'file'
  readonly layer: (LayerOf & { readonly sourceId: string | null }) | undefined
  nameScore: number
  text?: { readonly start: number; readonly text: string; readonly rank: number }
}

const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => '\\' + c)

// Both queries put a person's own nodes before compiled pages, so the pages never crowd them out of the limit.
async function nameMatches(db: Db, { owner, query, limit }: { owner: Owner; query: string; limit: number }) {
  const pattern = `%${escapeLike(query)}%`
  const rows = await db
    .selectFrom('nodes')
    .leftJoin('nodes as src', (join) => join.onRef('src.id', '=', 'nodes.generated_from').onRef('src.owner_id', '=', 'nodes.owner_id'))
    .select(['nodes.id', 'nodes.path', 'nodes.name', 'nodes.kind', 'nodes.generated', 'nodes.generated_from', 'src.path as source_path'])
    .select(sql<number>`similarity(nodes.name, ${query})`.as('similarity'))
    .select(sql<boolean>`nodes.name ilike ${pattern}`.as('contains'))
    .where('nodes.owner_id', '=', owner.id)
    .where('nodes.path', '<>', '')
    .where(sql<boolean>`(nodes.name ilike ${pattern} or nodes.name % ${query})`)
    .orderBy(sql`nodes.generated is not null`)
    .orderBy(sql`nodes.name ilike ${pattern}`, 'desc')
    .orderBy(sql`similarity(nodes.name, ${query})`, 'desc')
    .orderBy(sql`nodes.path collate "C"`)
    .limit(limit)
    .execute()
  return rows.map((row) => ({ ...row, score: (row.contains ? 1 : 0) + Number(row.similarity) }))
}

async function textMatches(db: Db, { owner, tsQuery, limit }: { owner: Owner; tsQuery: string; limit: number }) {
  const { rows } = await sql<{
    node_id: string; start: number; rank: number; text: string; path: string; name: string; kind: 'directory' | 'file'
    generated: GeneratedKind | null; generated_from: string | null; source_path: string | null
  }>`
    with query as (select to_tsquery('simple', ${tsQuery}) as q),
    best as (
      select distinct on (p.node_id) p.node_id, p.version_id, p.start, p.length, ts_rank_cd(p.words, query.q) as rank, n.path as node_path, n.generated is not null as layer
      from search_passages p
      cross join query
      join nodes n on n.id = p.node_id and n.current_version_id = p.version_id
      where p.owner_id = ${owner.id} and p.words @@ query.q
      order by p.node_id, rank desc, p.start
    ),
    top as (select * from best order by layer, rank desc, node_path collate "C" limit ${limit})
    select top.node_id, top.start, top.rank, substr(v.body, top.start + 1, top.length) as text, n.path, n.name, n.kind,
           n.generated, n.generated_from, src.path as source_path
    from top
    join file_versions v on v.id = top.version_id
    join nodes n on n.id = top.node_id
    left join nodes src on src.id = n.generated_from and src.owner_id = n.owner_id
  `.execute(db)
  return rows
}

/** Where in a passage the query shows: the phrase, else a word as typed, else an indexed word. */
function firstMatch(text: string, query: string): { at: number; length: number } {
  const candidates = [query.trim(), ...highlightTerms(query), ...queryWords(query)].filter((term) => term !== '')
  for (const term of candidates) {
    const [at] = findAll({ text, query: term, limit: 1 })
    if (at !== undefined) return { at, length: Array.from(term).length }
  }
  return { at: 0, length: 0 }
}

/**
 * At most one result per source: a summary is dropped when its source matched itself, and of
 * several summaries of one source (different artifact folders) the best is kept.
 */
function oneResultPerSource(candidates: ReadonlyArray<Candidate>): Candidate[] {
  const score = (candidate: Candidate) => candidate.nameScore + (candidate.text?.rank ?? 0)
  const best = new Map<string, Candidate>()
  for (const candidate of candidates) {
    const source = candidate.layer?.kind === 'summary' ? candidate.layer.sourceId : null
    if (source === null || candidates.some((other) => other.nodeId === source)) continue
    const kept = best.get(source)
    if (kept === undefined || score(candidate) > score(kept)) best.set(source, candidate)
  }
  return candidates.filter((candidate) => {
    const source = candidate.layer?.kind === 'summary' ? candidate.layer.sourceId : null
    return source === null || best.get(source) === candidate
  })
}

/**
 * One page of the caller's nodes that match `query` by name or text, best first — a person's own
 * nodes before compiled pages (docs/compile.md): a name that
 * contains the query counts most, then trigram similarity of names and the full-text rank of the
 * best passage. Each node appears once.
 */
export async function searchWorkspace(
  db: Db,
  { owner, query, offset = 0, limit = 20 }: { owner: Owner; query: string; offset?: number; limit?: number },
): Promise<WorkspaceSearchPage> {
  const trimmed = query.trim().normalize('NFC')
  const start = Math.min(Math.max(0, offset), SEARCH_MAX_OFFSET)
  const size = Math.min(Math.max(1, limit), SEARCH_MAX_LIMIT)
  if (trimmed === '') return { query, hits: [], offset: start, next_offset: null }
  const wanted = start + size + 1
  const tsQuery = tsQueryOf(trimmed)
  const [names, texts] = await Promise.all([
    nameMatches(db, { owner, query: trimmed, limit: wanted }),
    tsQuery === undefined ? Promise.resolve([]) : textMatches(db, { owner, tsQuery, limit: wanted }),
  ])
  const layerOf = (row: { path: string; generated: GeneratedKind | null; generated_from: string | null; source_path: string | null }) =>
    row.generated === null ? undefined : { ...layerOfRow(owner, { ...row, generated: row.generated }), sourceId: row.source_path === null ? null : row.generated_from }
  const candidates = new Map<string, Candidate>()
  for (const row of names) candidates.set(row.id, { nodeId: row.id, path: row.path, name: row.name, kind: row.kind, layer: layerOf(row), nameScore: row.score })
  for (const row of texts) {
    const found = candidates.get(row.node_id) ?? { nodeId: row.node_id, path: row.path, name: row.name, kind: row.kind, layer: layerOf(row), nameScore: 0 }
    found.text = { start: row.start, text: row.text, rank: Number(row.rank) }
    candidates.set(row.node_id, found)
  }
  // Ties go by path, as in both queries, so every page is cut from the same order.
  const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
  const hits = oneResultPerSource([...candidates.values()])
    .sort((a, b) => byPath(a.path, b.path))
    .map((candidate): WorkspaceSearchHit => {
      const segments = pathToSegments(candidate.path)
      const uri = formatKbUri({ login: owner.login, segments, directory: candidate.kind === 'directory' })
      const matched = candidate.text ? (candidate.nameScore > 0 ? 'name+text' : 'text') : 'name'
      const score = candidate.nameScore + (candidate.text?.rank ?? 0)
      const layer = candidate.layer === undefined ? {} : { layer: { kind: candidate.layer.kind, of: candidate.layer.of } }
      if (!candidate.text) return { uri, name: candidate.name, kind: candidate.kind, matched, offset: null, snippet: null, score, ...layer }
      const { at, length } = firstMatch(candidate.text.text, trimmed)
      const snippet = snippetAround({ text: candidate.text.text, offset: at, length, radius: SNIPPET_RADIUS }).replace(/\s+/g, ' ').trim()
      return { uri, name: candidate.name, kind: candidate.kind, matched, offset: candidate.text.start + at, snippet, score, ...layer }
    })
    // Sources first, then the compiled pages; each best first (stable: equal scores keep the path order).
    .sort((a, b) => Number(a.layer !== undefined) - Number(b.layer !== undefined) || b.score - a.score)
  const page = hits.slice(start, start + size)
  return { query, hits: page, offset: start, next_offset: hits.length > start + size ? start + size : null }
}

/**
 * For the agent's `search` when its bounded scan stopped short of the scope: the next person's own
 * files at or after `fromOffset` in that tool's order (the scope's files by path, compiled pages
 * aside) that the index says hold every word of `query` in one passage, each with its offset in
 * that order — where a further call with that offset scans it. A hint, not a hit: the scan
 * confirms it (and finds files that match a word only, which the index does not list here).
 * PostgreSQL numbers the scope's files in that order for it: ~23 ms for a scope of 30,000 files.
 */
export async function indexedMatchesAhead(
  db: Db,
  { owner, scope, query, fromOffset, limit }: { owner: Owner; scope: { readonly path: string }; query: string; fromOffset: number; limit: number },
): Promise<Array<{ readonly uri: string; readonly offset: number }>> {
  // a one-character word would be a prefix of most of the index: left to the scan
  const tsQuery = tsQueryOf(query.trim().normalize('NFC'), { minChars: 2 })
  if (tsQuery === undefined) return []
  const under = scope.path === '' ? sql<boolean>`true` : sql<boolean>`n.path like ${escapeLike(scope.path) + '/%'}`
  const rows = await db
    .transaction()
    .execute(async (trx) => {
      // a hint is worth little time: past it the search answers without one
      await sql`set local statement_timeout = ${sql.lit(AHEAD_TIMEOUT_MS)}`.execute(trx)
      return (await aheadQuery(trx, { owner, under, tsQuery, fromOffset, limit })).rows
    })
    .catch((error: unknown) => {
      if ((error as { code?: unknown } | null)?.code === '57014') return [] // query_canceled: the timeout
      throw error
    })
  return rows.map((row) => ({ uri: formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: false }), offset: Number(row.position) }))
}

/** How long the hint's statement may run (ms). */
const AHEAD_TIMEOUT_MS = 2000

function aheadQuery(db: Db, { owner, under, tsQuery, fromOffset, limit }: { owner: Owner; under: RawBuilder<boolean>; tsQuery: string; fromOffset: number; limit: number }) {
  return sql<{ path: string; position: string }>`
    with query as (select to_tsquery('simple', ${tsQuery}) as q),
    scoped as (
      select n.id, n.path, n.current_version_id, row_number() over (order by n.path collate "C") - 1 as position
      from nodes n
      where n.owner_id = ${owner.id} and n.kind = 'file' and n.generated is null and ${under}
    )
    select s.path, s.position
    from scoped s
    where s.position >= ${fromOffset}
      and (s.id, s.current_version_id) in (
        select p.node_id, p.version_id from search_passages p, query where p.owner_id = ${owner.id} and p.words @@ query.q
      )
    order by s.position
    limit ${limit}
  `.execute(db)
}
