// File management (issue 14): new folder, rename, move — each one transaction, scoped to the
// owner (a delete moves to the Trash: trash.ts). A move or rename rewrites `nodes.path` of the whole subtree in the transaction that
// moves the node, holding the owner's tree lock alone (tree-lock.ts), so no reader sees half a
// move, and a concurrent upload, new folder or compile job's pages below it either land before
// the move (and move with it) or after it (under the new path). Moves and deletes of one owner
// run one at a time. Jobs keep pointing at their nodes (by id); their `uri` follows the move.
import { type Kysely, sql } from 'kysely'
import { randomUUID } from 'node:crypto'
import { followSummariesOf } from '../compile/source-changes.ts'
import type { DB, NodeRow } from '../db/schema.ts'
import { assertNameable, getNode, skipTakenPath, type WorkspaceNode } from './store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { holdTree, shareTree } from './tree-lock.ts'
import { checkNodeName, formatKbUri, MAX_DEPTH, MAX_URI_LENGTH, pathToSegments, segmentsToPath } from './uri.ts'
import { InvalidName, NodeConflict, NodeNotFound } from './workspace-errors.ts'

const UNIQUE_VIOLATION = '23505'
const JOB_URI_BATCH = 500

export interface SubtreeCounts {
  /** Files at or below the node (a file counts itself). */
  readonly files: number
  /** Folders below the node (not counting itself). */
  readonly directories: number
}

export const uriOf = (owner: Owner, row: Pick<NodeRow, 'path' | 'kind'>): string =>
  formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: row.kind === 'directory' })

const below = (path: string) => sql<boolean>`starts_with(path, ${path + '/'})`

/** How many files and folders a delete of `node` takes with it (what the confirmation names). */
export async function subtreeCounts(db: Db, owner: Owner, node: Pick<WorkspaceNode, 'kind' | 'path'>): Promise<SubtreeCounts> {
  if (node.kind === 'file') return { files: 1, directories: 0 }
  let query = db
    .selectFrom('nodes')
    .select([sql<string>`count(*) filter (where kind = 'file')`.as('files'), sql<string>`count(*) filter (where kind = 'directory')`.as('directories')])
    .where('owner_id', '=', owner.id)
  query = node.path === '' ? query.where('path', '<>', '') : query.where(below(node.path))
  const row = await query.executeTakeFirstOrThrow()
  return { files: Number(row.files), directories: Number(row.directories) }
}

function checkedName(name: string): string {
  const checked = checkNodeName(name)
  if (!checked.ok) throw new InvalidName({ name, reason: checked.reason })
  return checked.name
}

const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === UNIQUE_VIOLATION

/** A new, empty folder `name` in the folder `parent`. A name already taken there is a conflict. */
export async function createDirectory(db: Kysely<DB>, { owner, parent, name }: { owner: Owner; parent: WorkspaceNode; name: string }): Promise<WorkspaceNode> {
  const stored = checkedName(name)
  const segments = [...pathToSegments(parent.path), stored]
  const uri = formatKbUri({ login: owner.login, segments, directory: true })
  return db.transaction().execute(async (trx) => {
    await shareTree(trx, owner.id) // no move of a folder above it runs until this one is in
    const locked = await trx.selectFrom('nodes').selectAll().where('owner_id', '=', owner.id).where('id', '=', parent.id).forShare().executeTakeFirst()
    if (!locked) throw new NodeNotFound({ uri: parent.uri })
    if (locked.kind !== 'directory') throw new NodeConflict({ uri: parent.uri, reason: 'a folder can only be created in a folder' })
    assertNameable(owner, [...pathToSegments(locked.path), stored], true)
    const path = segmentsToPath([...pathToSegments(locked.path), stored])
    const inserted = await trx
      .insertInto('nodes')
      .values({ id: randomUUID(), owner_id: owner.id, parent_id: locked.id, name: stored, path, kind: 'directory' })
      .onConflict(skipTakenPath)
      .returning('id')
      .executeTakeFirst()
    if (!inserted) throw new NodeConflict({ uri, reason: 'a file or folder with this name already exists here' })
    return getNode(trx, owner, pathToSegments(path))
  })
}

export interface MoveResult {
  /** The node at its new place. */
  readonly node: WorkspaceNode
  /** Its URI before the move. */
  readonly from: string
  /** Nodes whose path changed (the node and everything below it); 0 for a move to where it already is. */
  readonly moved: number
  /** Summaries of the moved files that followed them (renamed to match, a new version citing the new URI). */
  readonly summaries: number
}

/**
 * Refuses a move after which a node of the subtree would be deeper than MAX_DEPTH or have a URI
 * longer than MAX_URI_LENGTH: such a node could no longer be named by any URI (uploads and new
 * folders are held to the same limits, store.ts). Measured in SQL over the subtree's paths as
 * they would be: the canonical URI escapes `%`, `?` and `#` as three characters each. `trashId`:
 * the subtree is in that trash item (a restore under a new name, trash.ts).
 */
export async function refuseTooDeepOrLong(
  trx: Db,
  { owner, current, path, newUri, trashId }: { owner: Owner; current: Pick<NodeRow, 'id' | 'path'>; path: string; newUri: string; trashId?: string | undefined },
): Promise<void> {
  const moved = sql<string>`${path} || substr(path, length(${current.path}) + 1)`
  const rows = trashId === undefined ? sql`nodes where true` : sql`all_nodes where trash_id = ${trashId}`
  const {
    rows: [row],
  } = await sql<{ longest: number | null; depth: number | null }>`
    select max(length(${moved}) + 2 * (length(${moved}) - length(translate(${moved}, '%?#', ''))) + case when kind = 'directory' then 1 else 0 end) as longest,
           max(length(${moved}) - length(replace(${moved}, '/', '')) + 1) as depth
      from ${rows} and owner_id = ${owner.id} and (id = ${current.id} or ${below(current.path)})`.execute(trx)
  const prefix = formatKbUri({ login: owner.login, segments: [], directory: true }).length
  if (Number(row?.depth) > MAX_DEPTH) {
    throw new NodeConflict({ uri: newUri, reason: `the move would put files or folders deeper than ${MAX_DEPTH} levels` })
  }
  if (prefix + Number(row?.longest) > MAX_URI_LENGTH) {
    throw new NodeConflict({ uri: newUri, reason: `the move would give a file or folder a URI longer than ${MAX_URI_LENGTH} characters` })
  }
}

/**
 * Moves `node` into the folder `destination` under `name` (its own name by default); a rename is
 * a move into its own parent. Refused: the root, a destination that is not a folder, the node
 * itself or anything below it as the destination, a name that breaks the name rule or is taken.
 */
export async function moveNode(
  db: Kysely<DB>,
  { owner, node, destination, name }: { owner: Owner; node: WorkspaceNode; destination: WorkspaceNode; name?: string | undefined },
): Promise<MoveResult> {
  if (node.path === '') throw new NodeConflict({ uri: node.uri, reason: 'the root folder cannot be moved or renamed' })
  const stored = checkedName(name ?? node.name)
  return db.transaction().execute(async (trx) => {
    // The owner's tree alone (tree-lock.ts): every node added before is in, none is being added.
    await holdTree(trx, owner.id)
    // Both rows locked and re-read.
    const rows = await trx
      .selectFrom('nodes')
      .selectAll()
      .where('owner_id', '=', owner.id)
      .where('id', 'in', [...new Set([node.id, destination.id])])
      .orderBy('id')
      .forUpdate()
      .execute()
    const current = rows.find((row) => row.id === node.id)
    const target = rows.find((row) => row.id === destination.id)
    if (!current) throw new NodeNotFound({ uri: node.uri })
    if (!target) throw new NodeNotFound({ uri: destination.uri })
    const from = uriOf(owner, current)
    if (target.kind !== 'directory') throw new NodeConflict({ uri: uriOf(owner, target), reason: 'a move goes into a folder' })
    if (target.id === current.id || target.path.startsWith(current.path + '/')) {
      throw new NodeConflict({ uri: uriOf(owner, target), reason: `${from} cannot be moved into itself or below itself` })
    }
    const path = segmentsToPath([...pathToSegments(target.path), stored])
    if (path === current.path) return { node: await getNode(trx, owner, pathToSegments(path)), from, moved: 0, summaries: 0 }
    const newUri = formatKbUri({ login: owner.login, segments: pathToSegments(path), directory: current.kind === 'directory' })
    const taken = () => new NodeConflict({ uri: newUri, reason: 'a file or folder with this name already exists there' })
    const existing = await trx.selectFrom('nodes').select('id').where('owner_id', '=', owner.id).where('path', '=', path).executeTakeFirst()
    if (existing && existing.id !== current.id) throw taken()
    await refuseTooDeepOrLong(trx, { owner, current, path, newUri })
    let moved = 0
    try {
      if (current.kind === 'directory') {
        const result = await trx
          .updateTable('nodes')
          .set({ path: sql`${path} || substr(path, length(${current.path}) + 1)` })
          .where('owner_id', '=', owner.id)
          .where(below(current.path))
          .executeTakeFirst()
        moved += Number(result.numUpdatedRows)
      }
      await trx
        .updateTable('nodes')
        .set({ parent_id: target.id, name: stored, path, updated_at: sql`now()` })
        .where('id', '=', current.id)
        .execute()
      moved += 1
    } catch (error) {
      if (isUniqueViolation(error)) throw taken()
      throw error
    }
    await followJobs(trx, { owner, path })
    const summaries = await followSummariesOf(trx, owner, { path }) // renamed to match, citing the new URI (source-changes.ts)
    return { summaries, node: await getNode(trx, owner, pathToSegments(path)), from, moved }
  })
}

/**
 * Jobs of the moved nodes name them by their new URIs (the job rows keep their node ids): parse
 * jobs, and the file lists of compile jobs.
 */
export async function followJobs(trx: Kysely<DB>, { owner, path }: { owner: Owner; path: string }): Promise<void> {
  const nodes = await trx
    .selectFrom('nodes')
    .select(['id', 'path', 'kind'])
    .where('owner_id', '=', owner.id)
    .where((eb) => eb.or([eb('path', '=', path), below(path)]))
    .where((eb) =>
      eb.or([
        eb.exists(eb.selectFrom('jobs').select('jobs.id').whereRef('jobs.node_id', '=', 'nodes.id')),
        eb.exists(eb.selectFrom('compile_job_files').select('compile_job_files.job_id').whereRef('compile_job_files.node_id', '=', 'nodes.id')),
      ]),
    )
    .execute()
  for (let i = 0; i < nodes.length; i += JOB_URI_BATCH) {
    const batch = nodes.slice(i, i + JOB_URI_BATCH)
    const values = sql.join(batch.map((row) => sql`(${row.id}::uuid, ${uriOf(owner, row)})`))
    await sql`update jobs set uri = moved.uri, updated_at = now() from (values ${values}) as moved(id, uri) where jobs.node_id = moved.id and jobs.owner_id = ${owner.id}`.execute(trx)
    await sql`update compile_job_files set uri = moved.uri from (values ${values}) as moved(id, uri) where compile_job_files.node_id = moved.id and compile_job_files.owner_id = ${owner.id}`.execute(trx)
  }
}

export interface MoveDestination {
  readonly uri: string
  /** Folders above it (0 for the root). */
  readonly depth: number
  readonly name: string
}

/** The caller's folders outside `exclude`'s subtree, by path (a move's destinations), at most `limit`. */
export async function listMoveDestinations(
  db: Db,
  { owner, exclude, limit }: { owner: Owner; exclude: Pick<WorkspaceNode, 'kind' | 'path'>; limit: number },
): Promise<{ folders: ReadonlyArray<MoveDestination>; truncated: boolean }> {
  let query = db.selectFrom('nodes').select(['path', 'kind']).where('owner_id', '=', owner.id).where('kind', '=', 'directory')
  if (exclude.kind === 'directory') query = query.where('path', '<>', exclude.path).where(sql<boolean>`not starts_with(path, ${exclude.path + '/'})`)
  const rows = await query.orderBy(sql`path collate "C"`).limit(limit + 1).execute()
  const folders = rows.slice(0, limit).map((row) => {
    const segments = pathToSegments(row.path)
    return { uri: uriOf(owner, row), depth: segments.length, name: segments.at(-1) ?? '' }
  })
  return { folders, truncated: rows.length > limit }
}
