// The workspace store (SPEC §1): users' trees of directories and files, file versions with an
// atomic switch of the current version. Repositories are plain functions over `db | trx`.
import { createHash, randomUUID } from 'node:crypto'
import { type Kysely, type Transaction, sql } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { DB, NodeKind, NodeRow } from '../db/schema.ts'
import { checkNodeName, formatKbUri, MAX_DEPTH, MAX_URI_LENGTH, pathToSegments, segmentsToPath } from './uri.ts'
import { InvalidUri, NodeConflict, NodeNotFound } from './workspace-errors.ts'
import { indexVersionText } from './search-index.ts'
import { shareTree } from './tree-lock.ts'

export type Db = Kysely<DB> | Transaction<DB>

export interface Owner {
  readonly id: string
  readonly login: string
}

export interface WorkspaceNode {
  readonly id: string
  readonly ownerId: string
  readonly parentId: string | null
  readonly name: string
  readonly path: string
  readonly kind: NodeKind
  readonly uri: string
  readonly size: number
  readonly mime: string | null
  readonly updatedAt: Date
  readonly currentVersionId: string | null
}

/** A node as the store returns it, from a row of `nodeAtPath` (or any row of `nodes` with its version's size and mime). */
export function toNode(owner: Owner, row: NodeRow & { size?: unknown; mime?: string | null }): WorkspaceNode {
  return {
    id: row.id,
    ownerId: row.owner_id,
    parentId: row.parent_id,
    name: row.name,
    path: row.path,
    kind: row.kind,
    uri: formatKbUri({ login: owner.login, segments: pathToSegments(row.path), directory: row.kind === 'directory' }),
    size: row.size === null || row.size === undefined ? 0 : Number(row.size),
    mime: row.mime ?? null,
    updatedAt: new Date(row.updated_at),
    currentVersionId: row.current_version_id,
  }
}

function nodeQuery(db: Db) {
  return db
    .selectFrom('nodes')
    .leftJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .selectAll('nodes')
    .select(['file_versions.size as size', 'file_versions.mime as mime'])
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** The user's root directory, created on first use (one query when it exists, as it nearly always does). */
export async function ensureRoot(db: Db, owner: Owner): Promise<WorkspaceNode> {
  const existing = await findNode(db, owner, [])
  if (existing) return existing
  await db
    .insertInto('nodes')
    .values({ id: randomUUID(), owner_id: owner.id, parent_id: null, name: '', path: '', kind: 'directory' })
    .onConflict((oc) => oc.columns(['owner_id', 'path']).doNothing())
    .execute()
  const row = await nodeQuery(db).where('nodes.owner_id', '=', owner.id).where('nodes.path', '=', '').executeTakeFirstOrThrow()
  return toNode(owner, row)
}

/** The node at a path: the query of every URI resolution (each turn's scope, each tool call), compiled once. */
export const findNodeQuery = preparedQuery(['ownerId', 'path'], (db, { ownerId, path }: { ownerId: string; path: string }) =>
  nodeAtPath(db, { ownerId, path }).compile(),
)

/** The select of the node at `path` (one row or none), also embedded in the turn's admission statement. */
export function nodeAtPath(db: Db, { ownerId, path }: { ownerId: string; path: string }) {
  return nodeQuery(db).where('nodes.owner_id', '=', ownerId).where('nodes.path', '=', path)
}

export async function findNode(db: Db, owner: Owner, segments: ReadonlyArray<string>): Promise<WorkspaceNode | undefined> {
  const { rows } = await findNodeQuery.execute(db, { ownerId: owner.id, path: segmentsToPath(segments) })
  const row = rows[0]
  return row ? toNode(owner, row) : undefined
}

export async function getNode(db: Db, owner: Owner, segments: ReadonlyArray<string>): Promise<WorkspaceNode> {
  if (segments.length === 0) return ensureRoot(db, owner)
  const node = await findNode(db, owner, segments)
  if (!node) throw new NodeNotFound({ uri: formatKbUri({ login: owner.login, segments, directory: false }) })
  return node
}

/** `segments` as stored: each name checked by the one name rule and put in NFC; InvalidUri otherwise. */
function storedSegments(owner: Owner, segments: ReadonlyArray<string>, directory: boolean): string[] {
  if (segments.length > MAX_DEPTH) {
    throw new InvalidUri({ uri: formatKbUri({ login: owner.login, segments: segments.slice(0, MAX_DEPTH + 1), directory }), reason: `deeper than ${MAX_DEPTH} levels` })
  }
  const stored = segments.map((segment, i) => {
    const checked = checkNodeName(segment)
    if (!checked.ok) throw new InvalidUri({ uri: formatKbUri({ login: owner.login, segments: segments.slice(0, i + 1), directory: directory || i < segments.length - 1 }), reason: checked.reason })
    return checked.name
  })
  assertNameable(owner, stored, directory)
  return stored
}

/**
 * A node may only be made where a kb:// URI can name it: at most MAX_DEPTH levels deep, its URI
 * at most MAX_URI_LENGTH characters (the limits every URI is parsed with). InvalidUri otherwise.
 */
export function assertNameable(owner: Owner, segments: ReadonlyArray<string>, directory: boolean): void {
  if (segments.length > MAX_DEPTH) {
    throw new InvalidUri({ uri: formatKbUri({ login: owner.login, segments: segments.slice(0, MAX_DEPTH + 1), directory }), reason: `deeper than ${MAX_DEPTH} levels` })
  }
  const uri = formatKbUri({ login: owner.login, segments, directory })
  if (uri.length > MAX_URI_LENGTH) throw new InvalidUri({ uri: `${uri.slice(0, 200)}…`, reason: `its URI would be longer than ${MAX_URI_LENGTH} characters` })
}

/**
 * The directory at `path` under `parent`, created when missing, with a share lock on its row: a
 * move or delete of it (FOR UPDATE, manage.ts) waits for this transaction, or has happened before
 * the lock was granted — then the directory is made again here — so no child ever lands under a
 * directory whose path has changed.
 */
async function directoryAt(db: Db, owner: Owner, { parent, path, name }: { parent: WorkspaceNode; path: string; name: string }): Promise<WorkspaceNode> {
  for (let attempt = 0; ; attempt++) {
    await db
      .insertInto('nodes')
      .values({ id: randomUUID(), owner_id: owner.id, parent_id: parent.id, name, path, kind: 'directory' })
      .onConflict((oc) => oc.columns(['owner_id', 'path']).doNothing())
      .execute()
    const locked = await db.selectFrom('nodes').select('id').where('owner_id', '=', owner.id).where('path', '=', path).forShare().executeTakeFirst()
    if (locked || attempt >= 2) break
  }
  const node = await getNode(db, owner, pathToSegments(path))
  if (node.kind !== 'directory') throw new NodeConflict({ uri: node.uri, reason: 'a file is in the way of a directory' })
  return node
}

/** Creates every missing directory along `segments`; a file in the way is a conflict. */
export async function makeDirectories(db: Db, owner: Owner, rawSegments: ReadonlyArray<string>): Promise<WorkspaceNode> {
  const segments = storedSegments(owner, rawSegments, true)
  await shareTree(db, owner.id) // no move or delete of a folder on the way runs until this transaction ends
  let parent = await ensureRoot(db, owner)
  for (let depth = 1; depth <= segments.length; depth++) {
    const here = segments.slice(0, depth)
    parent = await directoryAt(db, owner, { parent, path: segmentsToPath(here), name: here[depth - 1]! })
  }
  return parent
}

export interface ParsedBody {
  readonly ok: boolean
  readonly mime: string
  readonly text?: string | undefined
  readonly error?: string | undefined
}

export type PutFileOutcome = 'added' | 'updated' | 'unchanged'

/**
 * Stores a file's bytes and parsed body as a new version and switches the current version in
 * one transaction, so readers see the old or the new version, never a mix. Identical content
 * (same hash) makes no new version. Records a `parse` job for the body and indexes its text for
 * the workspace-wide search (search-index.ts).
 */
export function putFile(db: Kysely<DB>, file: NewFileVersion): Promise<PutFileResult> {
  return db.transaction().execute((trx) => putFileInTransaction(trx, file))
}

export interface NewFileVersion {
  readonly owner: Owner
  readonly segments: ReadonlyArray<string>
  readonly bytes: Uint8Array
  readonly parsed: ParsedBody
}
export interface PutFileResult {
  readonly outcome: PutFileOutcome
  readonly node: WorkspaceNode
}

/** `putFile` inside a caller's transaction, so several files can be stored all or nothing. */
export async function putFileInTransaction(trx: Transaction<DB>, { owner, segments: rawSegments, bytes, parsed }: NewFileVersion): Promise<PutFileResult> {
  if (rawSegments.length === 0) throw new NodeConflict({ uri: formatKbUri({ login: owner.login, segments: [], directory: true }), reason: 'the root is a directory' })
  const segments = storedSegments(owner, rawSegments, false)
  const name = segments.at(-1)!
  const uri = formatKbUri({ login: owner.login, segments, directory: false })
  const hash = sha256Hex(bytes)
  const parent = await makeDirectories(trx, owner, segments.slice(0, -1))
  const path = segmentsToPath(segments)
  await trx
    .insertInto('nodes')
    .values({ id: randomUUID(), owner_id: owner.id, parent_id: parent.id, name, path, kind: 'file' })
    .onConflict((oc) => oc.columns(['owner_id', 'path']).doNothing())
    .execute()
  // Lock the node row: concurrent writers to the same file serialise here.
  const node = await trx
    .selectFrom('nodes')
    .selectAll()
    .where('owner_id', '=', owner.id)
    .where('path', '=', path)
    .forUpdate()
    .executeTakeFirstOrThrow()
  if (node.kind !== 'file') throw new NodeConflict({ uri, reason: 'a directory already has this name' })
  const current = node.current_version_id
    ? await trx
        .selectFrom('file_versions')
        .select(['content_hash', 'version_no'])
        .where('id', '=', node.current_version_id)
        .executeTakeFirst()
    : undefined
  if (current && current.content_hash === hash) {
    return { outcome: 'unchanged' as const, node: (await getNode(trx, owner, segments)) }
  }
  const latest = await trx
    .selectFrom('file_versions')
    .select((eb) => eb.fn.max('version_no').as('max'))
    .where('node_id', '=', node.id)
    .executeTakeFirst()
  const versionId = randomUUID()
  await trx
    .insertInto('file_versions')
    .values({
      id: versionId,
      node_id: node.id,
      version_no: Number(latest?.max ?? 0) + 1,
      raw: bytes,
      body: parsed.ok ? (parsed.text ?? '') : null,
      mime: parsed.mime,
      size: bytes.byteLength,
      content_hash: hash,
      parse_status: parsed.ok ? 'parsed' : 'failed',
      parse_error: parsed.ok ? null : (parsed.error ?? 'unknown parse error'),
    })
    .execute()
  await trx
    .updateTable('nodes')
    // a new version by anyone but a compile job (which marks its pages again) is the person's own file
    .set({ current_version_id: versionId, updated_at: sql`now()`, generated: null, generated_from: null })
    .where('id', '=', node.id)
    .execute()
  await indexVersionText(trx, { ownerId: owner.id, nodeId: node.id, versionId, body: parsed.ok ? (parsed.text ?? '') : null })
  await trx
    .insertInto('jobs')
    .values({
      id: randomUUID(),
      owner_id: owner.id,
      node_id: node.id,
      version_id: versionId,
      uri,
      kind: 'parse',
      status: parsed.ok ? 'succeeded' : 'failed',
      error: parsed.ok ? null : (parsed.error ?? 'unknown parse error'),
      started_at: sql<Date>`now()`,
      finished_at: sql<Date>`now()`,
    })
    .execute()
  return { outcome: current ? ('updated' as const) : ('added' as const), node: await getNode(trx, owner, segments) }
}

export interface ListPage {
  readonly entries: ReadonlyArray<WorkspaceNode>
  readonly total: number
}

/** Direct children, directories first then by name (a stable order), one page. */
/** One page of a directory's children (directories first, then by name), each row with the number of all of them. */
export const childrenPageQuery = preparedQuery(
  ['ownerId', 'parentId', 'offset', 'limit'],
  (db, { ownerId, parentId, offset, limit }: { ownerId: string; parentId: string; offset: number; limit: number }) =>
    nodeQuery(db)
      .select(sql<string>`count(*) over ()`.as('total'))
      .where('nodes.owner_id', '=', ownerId)
      .where('nodes.parent_id', '=', parentId)
      .orderBy(sql`case when nodes.kind = 'directory' then 0 else 1 end`)
      .orderBy(sql`nodes.name collate "C"`)
      .offset(offset)
      .limit(limit)
      .compile(),
)

/** Where a child stands in its folder's listing order (folders first, then by name in C order): how many come before it. */
export async function childPosition(db: Db, { owner, parent, child }: { owner: Owner; parent: WorkspaceNode; child: Pick<WorkspaceNode, 'kind' | 'name'> }): Promise<number> {
  const order = child.kind === 'directory' ? 0 : 1
  const row = await db
    .selectFrom('nodes')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('owner_id', '=', owner.id)
    .where('parent_id', '=', parent.id)
    .where(sql<boolean>`(case when kind = 'directory' then 0 else 1 end, name collate "C") < (${order}::int, ${child.name} collate "C")`)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** A page of the children and their total in one query (every `ls`, every turn on a directory); a page past the end counts apart. */
export async function listChildren(
  db: Db,
  { owner, parent, offset, limit }: { owner: Owner; parent: WorkspaceNode; offset: number; limit: number },
): Promise<ListPage> {
  const { rows } = await childrenPageQuery.execute(db, { ownerId: owner.id, parentId: parent.id, offset, limit })
  if (rows.length > 0) return { entries: rows.map((row) => toNode(owner, row)), total: Number(rows[0]!.total) }
  if (offset === 0) return { entries: [], total: 0 }
  const count = await db
    .selectFrom('nodes')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('owner_id', '=', owner.id)
    .where('parent_id', '=', parent.id)
    .executeTakeFirstOrThrow()
  return { entries: [], total: Number(count.n) }
}

/** Files at or below `scope`, ordered by path, one page (for search). */
export async function listFilesUnder(
  db: Db,
  { owner, scope, offset, limit }: { owner: Owner; scope: WorkspaceNode; offset: number; limit: number },
): Promise<ReadonlyArray<WorkspaceNode>> {
  let query = nodeQuery(db).where('nodes.owner_id', '=', owner.id).where('nodes.kind', '=', 'file')
  if (scope.kind === 'file') {
    query = query.where('nodes.id', '=', scope.id)
  } else if (scope.path !== '') {
    const prefix = scope.path.replace(/[\\%_]/g, (c) => '\\' + c) + '/%'
    query = query.where('nodes.path', 'like', prefix)
  }
  const rows = await query.orderBy(sql`nodes.path collate "C"`).offset(offset).limit(limit).execute()
  return rows.map((row) => toNode(owner, row))
}

export interface FileContent {
  readonly node: WorkspaceNode
  readonly versionId: string
  readonly versionNo: number
  readonly body: string | null
  readonly parseStatus: 'parsed' | 'failed'
  readonly parseError: string | null
  readonly mime: string
  readonly size: number
}

/** The current version of a file, read in one statement (never a mix of two versions). */
export async function readCurrent(db: Db, owner: Owner, node: WorkspaceNode): Promise<FileContent> {
  const row = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select([
      'file_versions.id as version_id',
      'file_versions.version_no',
      'file_versions.body',
      'file_versions.parse_status',
      'file_versions.parse_error',
      'file_versions.mime',
      'file_versions.size',
    ])
    .where('nodes.id', '=', node.id)
    .where('nodes.owner_id', '=', owner.id)
    .executeTakeFirst()
  if (!row) throw new NodeNotFound({ uri: node.uri })
  return {
    node,
    versionId: row.version_id,
    versionNo: row.version_no,
    body: row.body,
    parseStatus: row.parse_status,
    parseError: row.parse_error,
    mime: row.mime,
    size: Number(row.size),
  }
}

/** The current parsed bodies of several files (by node id) in one statement; null where none could be parsed. */
export async function readCurrentBodies(db: Db, owner: Owner, nodes: ReadonlyArray<Pick<WorkspaceNode, 'id'>>): Promise<Map<string, string | null>> {
  if (nodes.length === 0) return new Map()
  const rows = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['nodes.id', 'file_versions.body'])
    .where('nodes.id', 'in', nodes.map((node) => node.id))
    .where('nodes.owner_id', '=', owner.id)
    .execute()
  return new Map(rows.map((row) => [row.id, row.body]))
}

/** The size in bytes (UTF-8) of several files' current bodies, read from the values' headers (nothing is fetched); absent where none. */
export async function currentBodySizes(db: Db, owner: Owner, nodes: ReadonlyArray<Pick<WorkspaceNode, 'id'>>): Promise<Map<string, number>> {
  if (nodes.length === 0) return new Map()
  const rows = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['nodes.id', sql<string | null>`octet_length(file_versions.body)`.as('bytes')])
    .where('nodes.id', 'in', nodes.map((node) => node.id))
    .where('nodes.owner_id', '=', owner.id)
    .execute()
  return new Map(rows.flatMap((row) => (row.bytes === null ? [] : [[row.id, Number(row.bytes)] as const])))
}

/** A body over the size asked for: only its size was read. */
export interface BodyTooLarge {
  readonly tooLarge: true
  readonly bytes: number
}

/**
 * `readCurrentBodies` for small texts: a body over `maxBytes` (UTF-8) is not read at all — its size
 * comes from the value's header (`octet_length` does not fetch or decompress it) — so a caller that
 * can only use small texts never holds a large one.
 */
export async function readSmallCurrentBodies(
  db: Db,
  owner: Owner,
  nodes: ReadonlyArray<WorkspaceNode>,
  { maxBytes }: { maxBytes: number },
): Promise<Map<string, string | null | BodyTooLarge>> {
  if (nodes.length === 0) return new Map()
  const rows = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select([
      'nodes.id',
      sql<string | null>`case when octet_length(file_versions.body) <= ${maxBytes}::int then file_versions.body end`.as('body'),
      sql<string | null>`octet_length(file_versions.body)`.as('bytes'),
    ])
    .where('nodes.id', 'in', nodes.map((node) => node.id))
    .where('nodes.owner_id', '=', owner.id)
    .execute()
  return new Map(rows.map((row) => [row.id, row.bytes !== null && row.body === null ? { tooLarge: true, bytes: Number(row.bytes) } : row.body]))
}

/** What a download of a file's current version needs first: that version (immutable), its media type and byte length. */
export interface RawVersion {
  readonly versionId: string
  readonly mime: string
  readonly length: number
}

export async function findRawVersion(db: Db, owner: Owner, node: WorkspaceNode): Promise<RawVersion> {
  const row = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['file_versions.id', 'file_versions.mime', sql<string>`octet_length(file_versions.raw)`.as('length')])
    .where('nodes.id', '=', node.id)
    .where('nodes.owner_id', '=', owner.id)
    .executeTakeFirst()
  if (!row) throw new NodeNotFound({ uri: node.uri })
  return { versionId: row.id, mime: row.mime, length: Number(row.length) }
}

/**
 * `length` bytes of a version's raw content from byte `offset` (fewer at the end); undefined when
 * the version is gone (its file deleted since). The raw column is stored uncompressed (migration
 * 20261202100000), so PostgreSQL reads only the TOAST chunks of the slice: a download costs a
 * slice of memory at a time, whatever the file's size.
 */
export async function readRawSlice(db: Db, { versionId, offset, length }: { versionId: string; offset: number; length: number }): Promise<Uint8Array | undefined> {
  const row = await db
    .selectFrom('file_versions')
    .select(sql<Uint8Array>`substring(raw from ${offset + 1}::int for ${length}::int)`.as('slice'))
    .where('id', '=', versionId)
    .executeTakeFirst()
  return row?.slice
}

/** The whole raw content of a file's current version, in memory (small files and tests; a download streams it: readRawSlice). */
export async function readRaw(db: Db, owner: Owner, node: WorkspaceNode): Promise<Uint8Array> {
  const row = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select('file_versions.raw')
    .where('nodes.id', '=', node.id)
    .where('nodes.owner_id', '=', owner.id)
    .executeTakeFirst()
  if (!row) throw new NodeNotFound({ uri: node.uri })
  return row.raw
}

/** Deletes a node and everything below it. */
export async function deleteNode(db: Db, owner: Owner, node: WorkspaceNode): Promise<void> {
  if (node.path === '') throw new NodeConflict({ uri: node.uri, reason: 'the root cannot be deleted' })
  await db.deleteFrom('nodes').where('owner_id', '=', owner.id).where('id', '=', node.id).execute()
}
