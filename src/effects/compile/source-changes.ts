// What a change to a person's files does to the pages compiled from them (docs/compile.md), inside
// the transaction of the change (manage.ts, trash.ts, under the owner's tree lock held alone):
// - a deleted source's summary goes to the Trash with it, wherever it lives (its text must not
//   outlive the file, nor stay searchable; restored, it comes back with it);
// - a renamed or moved source's summary is renamed to match (summaryNameCandidates) and gets a new
//   version naming the source where it is now; what it records of its source follows the move
//   (a summary of an older version of its source stays stale for that).
// Overviews and abstracts are left as they are: layer-freshness.ts reports them stale ('deleted',
// 'moved') until the folder is compiled again.
import { sql, type Transaction } from 'kysely'
import type { DB, Db, Owner } from '../db/schema.ts'
import { assertNameable, putFileInTransaction } from '../workspace/store.ts'
import { checkNodeName, formatKbUri, linkableKbUri, pathToSegments, segmentsToPath } from '../workspace/uri.ts'
import { summaryFileName, summaryNameCandidates } from './compile-artifacts.ts'

/** At most this many names are tried for a followed summary before it keeps the one it has. */
const MAX_NAME_TRIES = 200

/** The files at or below `path` (a file, or a folder's files at any depth). */
const filesAtOrBelow = (ownerId: string, path: string) => sql`
  select id from nodes where owner_id = ${ownerId} and kind = 'file' and (path = ${path} or starts_with(path, ${path + '/'}))`

/** Not at or below `path` (a page inside a deleted folder goes with the folder anyway). */
const outside = (column: string, path: string) => sql`not (${sql.ref(column)} = ${path} or starts_with(${sql.ref(column)}, ${path + '/'}))`

export interface DeleteConsequences {
  /** Summaries of the deleted files kept outside what is deleted (they go to the Trash with them). */
  readonly summaries: ReadonlyArray<string>
  /** Folders outside what is deleted whose overview or abstract was built from a deleted file (they become stale). */
  readonly outdatedFolders: ReadonlyArray<string>
}

/** What deleting the node at `path` does to compiled pages elsewhere (what the delete dialog says). */
export async function deleteConsequences(db: Db, owner: Owner, { path }: { path: string }): Promise<DeleteConsequences> {
  const summaries = await sql<{ path: string }>`
    select s.path from nodes s
     where s.owner_id = ${owner.id} and s.generated = 'summary' and s.generated_from in (${filesAtOrBelow(owner.id, path)})
       and ${outside('s.path', path)}
     order by s.path collate "C"`.execute(db)
  const folders = await sql<{ path: string }>`
    select f.path from layer_sources l
      join nodes p on p.id = l.page_id
      join nodes f on f.id = p.parent_id
     where p.owner_id = ${owner.id} and p.generated in ('overview', 'abstract') and l.source_id in (${filesAtOrBelow(owner.id, path)})
       and ${outside('p.path', path)}
     group by f.path order by f.path collate "C"`.execute(db)
  return {
    summaries: summaries.rows.map((row) => formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: false })),
    outdatedFolders: folders.rows.map((row) => formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: true })),
  }
}

/**
 * Moves the summaries of the files at or below `path` that live elsewhere into the trash item
 * `trashId`, each detached from its folder (restored, it is put back where it was); how many. Call
 * before the node itself goes (its files are found among the live nodes).
 */
export async function trashSummariesOf(trx: Db, owner: Owner, { path, trashId }: { path: string; trashId: string }): Promise<number> {
  const trashed = await sql<{ id: string }>`
    update all_nodes s set trash_id = ${trashId}, parent_id = null
     where s.owner_id = ${owner.id} and s.trash_id is null and s.generated = 'summary' and s.generated_from in (${filesAtOrBelow(owner.id, path)})
       and ${outside('s.path', path)}
    returning s.id`.execute(trx)
  return trashed.rows.length
}

/** Whether `name` is one of the names a summary of `sourceName` may have (then a move keeps it). */
export function isSummaryNameOf(name: string, sourceName: string): boolean {
  if (name === summaryFileName(sourceName) || name === `${sourceName}.summary.md`) return true
  const numbered = name.startsWith(`${sourceName}.`) && name.endsWith('.summary.md') ? name.slice(sourceName.length + 1, -'.summary.md'.length) : ''
  return /^[1-9]\d*$/.test(numbered) && Number(numbered) >= 2
}

/** A summary page's text naming its source anew: its title and its "Source:" line. */
export function citeSourceAnew(text: string, { name, uri }: { name: string; uri: string }): string {
  return text.replace(/^# Summary: .*$/m, () => `# Summary: ${name}`).replace(/^Source: \S+$/m, () => `Source: ${linkableKbUri(uri)}`)
}

interface FollowedSummary {
  readonly id: string
  readonly name: string
  readonly path: string
  readonly parent_id: string
  readonly source_id: string
  readonly source_name: string
  readonly source_path: string
  readonly body: string | null
}

/**
 * After the node now at `path` moved or was renamed: each summary of a file at or below it is
 * renamed to match its source where needed, gets a new version citing the source's new URI, and
 * records the source's new path. How many summaries followed.
 */
export async function followSummariesOf(trx: Transaction<DB>, owner: Owner, { path }: { path: string }): Promise<number> {
  const summaries = (
    await sql<FollowedSummary>`
      select s.id, s.name, s.path, s.parent_id, src.id as source_id, src.name as source_name, src.path as source_path, v.body
        from nodes src
        join nodes s on s.owner_id = src.owner_id and s.generated = 'summary' and s.generated_from = src.id
        left join file_versions v on v.id = s.current_version_id
       where src.id in (${filesAtOrBelow(owner.id, path)})
       order by s.path collate "C"`.execute(trx)
  ).rows
  for (const summary of summaries) {
    const name = isSummaryNameOf(summary.name, summary.source_name) ? summary.name : await freeSummaryName(trx, owner, summary)
    const segments = [...pathToSegments(summary.path).slice(0, -1), name]
    const newPath = segmentsToPath(segments)
    if (newPath !== summary.path) {
      await trx.updateTable('nodes').set({ name, path: newPath, updated_at: sql`now()` }).where('id', '=', summary.id).execute()
      const uri = formatKbUri({ login: owner.login, segments, directory: false })
      await trx.updateTable('jobs').set({ uri, updated_at: sql`now()` }).where('owner_id', '=', owner.id).where('node_id', '=', summary.id).execute()
    }
    const sourceUri = formatKbUri({ login: owner.login, segments: pathToSegments(summary.source_path), directory: false })
    const text = summary.body === null ? null : citeSourceAnew(summary.body, { name: summary.source_name, uri: sourceUri })
    if (text !== null && text !== summary.body) {
      await putFileInTransaction(trx, { owner, segments, bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: 'text/markdown', text }, origin: 'compile' })
      await trx.updateTable('nodes').set({ generated: 'summary', generated_from: summary.source_id }).where('id', '=', summary.id).execute()
    }
    await trx.updateTable('layer_sources').set({ source_path: summary.source_path }).where('page_id', '=', summary.id).where('source_id', '=', summary.source_id).execute()
  }
  return summaries.length
}

/** The first summary name for the source that no other node of the summary's folder has and a URI can name; its own name when none is. */
async function freeSummaryName(trx: Db, owner: Owner, summary: FollowedSummary): Promise<string> {
  const siblings = await trx.selectFrom('nodes').select('name').where('owner_id', '=', owner.id).where('parent_id', '=', summary.parent_id).where('id', '<>', summary.id).execute()
  const taken = new Set(siblings.map((row) => row.name))
  const folder = pathToSegments(summary.path).slice(0, -1)
  let tries = 0
  for (const name of summaryNameCandidates(summary.source_name)) {
    if (++tries > MAX_NAME_TRIES) break
    if (taken.has(name)) continue
    if (!checkNodeName(name).ok) break // a longer name will not do either
    try {
      assertNameable(owner, [...folder, name], false)
      return name
    } catch {
      break // a longer name will not fit either
    }
  }
  return summary.name
}
