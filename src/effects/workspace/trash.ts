// The Trash (issue 37): a deleted file or folder is not gone at once. Its nodes stay in
// `all_nodes`, marked with their trash item, and leave `nodes` — the view every other query reads
// (migrations/20261208100000_trash.ts) — so nothing sees them: no listing, read, search, tool,
// export or compile job. The summaries of its files kept elsewhere go with it. It can be restored
// where it was (the folders above made again; under "name (restored)" when the name is taken
// there now), deleted for good, or left until `purge_at` (`trash.retentionDays` after the delete),
// when the retention job deletes it for good (trash-retention.ts). Deleting for good deletes the
// node rows as the delete did before the Trash: their versions, search passages and layer rows go
// with them by the foreign keys, and job rows stay as history with no node.
//
// Trashed bytes still count towards the owner's storage quota (storage-limits.ts): emptying the
// Trash is what frees the space.
//
// Each change runs in one transaction. Moving to the Trash and restoring change the tree's shape,
// so they hold the owner's tree lock alone (tree-lock.ts): an upload into a folder being deleted
// lands before (and goes to the Trash with it) or after (and finds the folder gone); a file
// uploaded under the name a restore puts back is either there first (the restore takes another
// name) or after (it becomes the restored file's newest version). The item's row is locked by
// whoever restores or deletes it, so each item is restored or deleted once.
import { randomUUID } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import { followSummariesOf, trashSummariesOf } from '../compile/source-changes.ts'
import type { DB, Db, NodeKind, Owner } from '../db/schema.ts'
import { followJobs, refuseTooDeepOrLong, type SubtreeCounts, subtreeCounts, uriOf } from './manage.ts'
import { assertNameable, ensureRoot, makeDirectories, type WorkspaceNode } from './store.ts'
import { holdTree } from './tree-lock.ts'
import { checkNodeName, formatKbUri, pathToSegments, segmentsToPath } from './uri.ts'
import { NodeConflict, NodeNotFound, TrashItemNotFound } from './workspace-errors.ts'

/** `trash.retentionDays` when the config does not say. */
export const DEFAULT_TRASH_RETENTION_DAYS = 30
/** At most this many names are tried for a restore whose name is taken ("a (restored 2).md", …). */
const MAX_RESTORED_NAMES = 100
export const TRASH_PAGE = 100
export const TRASH_MAX_LIMIT = 500
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface DeleteResult extends SubtreeCounts {
  /** Its URI before the delete. */
  readonly uri: string
  /** Summaries of its files that lived elsewhere, moved to the Trash with it. */
  readonly summaries: number
  /** The trash item it is now, and when it will be deleted for good unless restored. */
  readonly trash: { readonly id: string; readonly purgeAt: Date }
}

/**
 * Moves `node` and everything below it to the owner's Trash, with the summaries of its files kept
 * elsewhere, for `retentionDays`. One transaction: a reader sees the whole subtree or none of it.
 */
export async function moveToTrash(
  db: Kysely<DB>,
  { owner, node, retentionDays = DEFAULT_TRASH_RETENTION_DAYS }: { owner: Owner; node: Pick<WorkspaceNode, 'id' | 'uri' | 'path'>; retentionDays?: number | undefined },
): Promise<DeleteResult> {
  if (node.path === '') throw new NodeConflict({ uri: node.uri, reason: 'the root folder cannot be deleted' })
  return db.transaction().execute(async (trx) => {
    await holdTree(trx, owner.id) // nothing is being added below it while it goes
    const current = await trx.selectFrom('nodes').selectAll().where('owner_id', '=', owner.id).where('id', '=', node.id).forUpdate().executeTakeFirst()
    if (!current) throw new NodeNotFound({ uri: node.uri })
    const counts = await subtreeCounts(trx, owner, current)
    const id = randomUUID()
    const item = await trx
      .insertInto('trash_items')
      .values({
        id,
        owner_id: owner.id,
        node_id: current.id,
        name: current.name,
        kind: current.kind,
        path: current.path,
        files: counts.files,
        directories: counts.directories,
        purge_at: sql<Date>`now() + make_interval(days => ${retentionDays})`,
      })
      .returning('purge_at')
      .executeTakeFirstOrThrow()
    const summaries = await trashSummariesOf(trx, owner, { path: current.path, trashId: id }) // found among the live nodes: first
    await trx
      .updateTable('all_nodes')
      .set({ trash_id: id })
      .where('owner_id', '=', owner.id)
      .where('trash_id', 'is', null)
      .where((eb) => eb.or([eb('id', '=', current.id), ...(current.kind === 'directory' ? [sql<boolean>`starts_with(path, ${current.path + '/'})`] : [])]))
      .execute()
    // Detached from its folder: deleting that folder for good later must not take this item with it.
    await trx.updateTable('all_nodes').set({ parent_id: null }).where('id', '=', current.id).execute()
    await sql`
      update trash_items set summaries = ${summaries},
             bytes = (select coalesce(sum(v.size), 0) from file_versions v join all_nodes n on n.id = v.node_id where n.trash_id = ${id})
       where id = ${id}`.execute(trx)
    return { uri: uriOf(owner, current), ...counts, summaries, trash: { id, purgeAt: new Date(item.purge_at) } }
  })
}

export interface TrashEntry {
  readonly id: string
  readonly name: string
  readonly kind: NodeKind
  /** Where it was when it was deleted. */
  readonly uri: string
  /** The folder it was in. */
  readonly folderUri: string
  readonly files: number
  readonly directories: number
  /** Summaries of its files kept elsewhere, deleted with it (and restored with it). */
  readonly summaries: number
  /** Every version of every file in it: what deleting it for good frees. */
  readonly bytes: number
  readonly deletedAt: Date
  readonly purgeAt: Date
}

export interface TrashPage {
  readonly items: ReadonlyArray<TrashEntry>
  /** Items in the Trash, and the bytes of all of them. */
  readonly total: number
  readonly bytes: number
  readonly offset: number
}

type TrashRow = { id: string; name: string; kind: NodeKind; path: string; files: number; directories: number; summaries: number; bytes: string | number; deleted_at: Date; purge_at: Date }

function toEntry(owner: Owner, row: TrashRow): TrashEntry {
  const segments = pathToSegments(row.path)
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    uri: formatKbUri({ login: owner.login, segments, directory: row.kind === 'directory' }),
    folderUri: formatKbUri({ login: owner.login, segments: segments.slice(0, -1), directory: true }),
    files: row.files,
    directories: row.directories,
    summaries: row.summaries,
    bytes: Number(row.bytes),
    deletedAt: new Date(row.deleted_at),
    purgeAt: new Date(row.purge_at),
  }
}

const trashColumns = ['id', 'name', 'kind', 'path', 'files', 'directories', 'summaries', 'bytes', 'deleted_at', 'purge_at'] as const

/** The owner's Trash, most recently deleted first, one page; with how many items and bytes it holds in all. */
export async function listTrash(db: Db, { owner, offset = 0, limit = TRASH_PAGE }: { owner: Owner; offset?: number; limit?: number }): Promise<TrashPage> {
  const [rows, totals] = await Promise.all([
    db.selectFrom('trash_items').select(trashColumns).where('owner_id', '=', owner.id).orderBy('deleted_at', 'desc').orderBy('id').offset(offset).limit(limit).execute(),
    db
      .selectFrom('trash_items')
      .select([sql<string>`count(*)`.as('total'), sql<string>`coalesce(sum(bytes), 0)`.as('bytes')])
      .where('owner_id', '=', owner.id)
      .executeTakeFirstOrThrow(),
  ])
  return { items: rows.map((row) => toEntry(owner, row)), total: Number(totals.total), bytes: Number(totals.bytes), offset }
}

/** One item of the owner's Trash; TrashItemNotFound for an id that is not one (another person's included). */
export async function findTrashItem(db: Db, { owner, id }: { owner: Owner; id: string }): Promise<TrashEntry> {
  if (!UUID.test(id)) throw new TrashItemNotFound({ id })
  const row = await db.selectFrom('trash_items').select(trashColumns).where('owner_id', '=', owner.id).where('id', '=', id).executeTakeFirst()
  if (!row) throw new TrashItemNotFound({ id })
  return toEntry(owner, row)
}

/** The item most recently deleted from `segments` (the CLI's `trash restore <kb-uri>`), if any. */
export async function findTrashItemAt(db: Db, { owner, segments }: { owner: Owner; segments: ReadonlyArray<string> }): Promise<TrashEntry | undefined> {
  const row = await db
    .selectFrom('trash_items')
    .select(trashColumns)
    .where('owner_id', '=', owner.id)
    .where('path', '=', segmentsToPath(segments))
    .orderBy('deleted_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  return row ? toEntry(owner, row) : undefined
}

/** "report.md" → "report (restored).md", then "report (restored 2).md"; a folder: "notes (restored)". */
export function restoredNames(name: string, kind: NodeKind): string[] {
  const dot = kind === 'file' ? name.lastIndexOf('.') : -1
  const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, '']
  return Array.from({ length: MAX_RESTORED_NAMES }, (_, i) => `${stem} (restored${i === 0 ? '' : ` ${i + 1}`})${extension}`)
}

/** Its own name when no live node of the folder has it, else the first free "… (restored)" name. */
async function freeName(trx: Db, owner: Owner, { folder, name, kind }: { folder: WorkspaceNode; name: string; kind: NodeKind }): Promise<string> {
  const taken = async (candidate: string) =>
    (await trx.selectFrom('nodes').select('id').where('owner_id', '=', owner.id).where('path', '=', segmentsToPath([...pathToSegments(folder.path), candidate])).executeTakeFirst()) !== undefined
  if (!(await taken(name))) return name
  for (const candidate of restoredNames(name, kind)) {
    if (!checkNodeName(candidate).ok) break // longer ones will not pass either
    if (!(await taken(candidate))) return candidate
  }
  throw new NodeConflict({ uri: uriOf(owner, { path: segmentsToPath([...pathToSegments(folder.path), name]), kind }), reason: 'the name is taken there and no "(restored)" name is free; rename what is in the way and restore again' })
}

interface TopNode {
  readonly id: string
  readonly name: string
  readonly path: string
  readonly kind: NodeKind
}

/** Puts one detached node of the item (and what is below it) back in its folder, made again when missing; its path now. */
async function putBack(trx: Db, owner: Owner, { trashId, top }: { trashId: string; top: TopNode }): Promise<string> {
  const folderSegments = pathToSegments(top.path).slice(0, -1)
  // The folders above, made again where missing.
  const folder = folderSegments.length === 0 ? await ensureRoot(trx, owner) : await makeDirectories(trx, owner, folderSegments).catch((error: unknown) => {
    if (!(error instanceof NodeConflict)) throw error
    const uri = uriOf(owner, top)
    throw new NodeConflict({ uri, reason: `it cannot go back: ${error.uri} is a file now, where a folder is needed; rename or move that file and restore again` })
  })
  const name = await freeName(trx, owner, { folder, name: top.name, kind: top.kind })
  const segments = [...folderSegments, name]
  const path = segmentsToPath(segments)
  if (path !== top.path) {
    assertNameable(owner, segments, top.kind === 'directory')
    const newUri = formatKbUri({ login: owner.login, segments, directory: top.kind === 'directory' })
    await refuseTooDeepOrLong(trx, { owner, current: top, path, newUri, trashId })
    await sql`
      update all_nodes set path = ${path} || substr(path, length(${top.path}) + 1)
       where trash_id = ${trashId} and starts_with(path, ${top.path + '/'})`.execute(trx)
  }
  // It comes into its folder now: an overview written meanwhile without it is stale ('added', layer-freshness.ts).
  await trx.updateTable('all_nodes').set({ parent_id: folder.id, name, path, created_at: sql<Date>`now()` }).where('id', '=', top.id).execute()
  return path
}

export interface RestoreResult {
  /** Where it is now. */
  readonly uri: string
  /** Where it was when it was deleted. */
  readonly from: string
  readonly name: string
  readonly kind: NodeKind
  /** Put back under another name: its own was taken there. */
  readonly renamed: boolean
  /** Summaries of its files restored with it. */
  readonly summaries: number
}

/**
 * Puts the item back where it was, with its versions and the summaries that went with it: the
 * folders above made again where missing, a taken name replaced by "name (restored)". One
 * transaction; the item leaves the Trash.
 */
export async function restoreFromTrash(db: Kysely<DB>, { owner, id }: { owner: Owner; id: string }): Promise<RestoreResult> {
  if (!UUID.test(id)) throw new TrashItemNotFound({ id })
  return db.transaction().execute(async (trx) => {
    await holdTree(trx, owner.id)
    const item = await trx.selectFrom('trash_items').select(['id', 'node_id', 'name', 'kind', 'path']).where('owner_id', '=', owner.id).where('id', '=', id).forUpdate().executeTakeFirst()
    if (!item) throw new TrashItemNotFound({ id })
    // The deleted node first, then the summaries that went with it (each was detached from its folder).
    const tops = await trx
      .selectFrom('all_nodes')
      .select(['id', 'name', 'path', 'kind'])
      .where('trash_id', '=', item.id)
      .where('parent_id', 'is', null)
      .orderBy(sql`id = ${item.node_id}`, 'desc')
      .orderBy(sql`path collate "C"`)
      .execute()
    const moved: string[] = []
    let path = item.path
    for (const top of tops) {
      const now = await putBack(trx, owner, { trashId: item.id, top })
      if (top.id === item.node_id) path = now
      if (now !== top.path) moved.push(now)
    }
    await trx.updateTable('all_nodes').set({ trash_id: null }).where('trash_id', '=', item.id).execute()
    await trx.deleteFrom('trash_items').where('id', '=', item.id).execute()
    for (const now of moved) await followJobs(trx, { owner, path: now })
    // Summaries follow a source put back under another name (renamed to match, citing where it is now).
    if (path !== item.path) await followSummariesOf(trx, owner, { path })
    const segments = pathToSegments(path)
    return {
      uri: formatKbUri({ login: owner.login, segments, directory: item.kind === 'directory' }),
      from: formatKbUri({ login: owner.login, segments: pathToSegments(item.path), directory: item.kind === 'directory' }),
      name: segments.at(-1) ?? item.name,
      kind: item.kind,
      renamed: path !== item.path,
      summaries: tops.length - 1,
    }
  })
}

export interface PurgeResult {
  readonly items: number
  readonly bytes: number
}

const itemsQuery = (db: Db) => db.selectFrom('trash_items').select(['id', 'bytes'])
type ItemsQuery = ReturnType<typeof itemsQuery>

/**
 * Deletes trash items for good, with their nodes: the delete as it was before the Trash (the
 * versions, search passages and layer rows go with the nodes by the foreign keys; job rows stay,
 * with no node). Each item's row is locked first, as a restore locks it: `skipLocked` leaves one
 * being restored or purged to that (the retention job), else this waits for it.
 */
async function purgeItems(trx: Db, { which, skipLocked }: { which: (query: ItemsQuery) => ItemsQuery; skipLocked: boolean }): Promise<PurgeResult> {
  const locked = which(itemsQuery(trx)).forUpdate()
  const items = await (skipLocked ? locked.skipLocked() : locked).execute()
  if (items.length === 0) return { items: 0, bytes: 0 }
  const ids = items.map((item) => item.id)
  await trx.deleteFrom('all_nodes').where('trash_id', 'in', ids).execute()
  await trx.deleteFrom('trash_items').where('id', 'in', ids).execute() // gone already with their nodes (node_id cascades); said for the reader
  return { items: items.length, bytes: items.reduce((sum, item) => sum + Number(item.bytes), 0) }
}

/** Deletes one item of the owner's Trash for good. */
export async function deleteFromTrash(db: Kysely<DB>, { owner, id }: { owner: Owner; id: string }): Promise<TrashEntry> {
  return db.transaction().execute(async (trx) => {
    const item = await findTrashItem(trx, { owner, id })
    const purged = await purgeItems(trx, { which: (query) => query.where('owner_id', '=', owner.id).where('id', '=', id), skipLocked: false })
    if (purged.items === 0) throw new TrashItemNotFound({ id }) // restored or deleted meanwhile
    return item
  })
}

/** Deletes everything in the owner's Trash for good: how many items and bytes. */
export async function emptyTrash(db: Kysely<DB>, { owner }: { owner: Owner }): Promise<PurgeResult> {
  return db.transaction().execute((trx) => purgeItems(trx, { which: (query) => query.where('owner_id', '=', owner.id), skipLocked: false }))
}

/**
 * The retention job's work: deletes for good every item past its `purge_at`, of every owner, in
 * batches of `batch` items (one transaction each, so no delete holds its locks for long).
 */
export async function purgeExpiredTrash(db: Kysely<DB>, { batch = 100 }: { batch?: number } = {}): Promise<PurgeResult> {
  let total = { items: 0, bytes: 0 }
  for (;;) {
    const purged = await db.transaction().execute((trx) =>
      purgeItems(trx, { which: (query) => query.where('purge_at', '<=', sql<Date>`now()`).orderBy('purge_at').limit(batch), skipLocked: true }),
    )
    total = { items: total.items + purged.items, bytes: total.bytes + purged.bytes }
    if (purged.items < batch) return total
  }
}
