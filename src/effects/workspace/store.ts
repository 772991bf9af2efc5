// The workspace store (SPEC §1): users' trees of directories and files, file versions with an
// atomic switch of the current version. Repositories are plain functions over `db | trx`.
import { createHash, randomUUID } from 'node:crypto'
import { type Kysely, type OnConflictBuilder, type Transaction, sql } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { DB, Db, GeneratedKind, NodeKind, NodeRow, Owner, VersionOrigin } from '../db/schema.ts'
import { checkNodeName, formatKbUri, MAX_DEPTH, MAX_URI_LENGTH, pathToSegments, segmentsToPath } from './uri.ts'
import { InvalidUri, NodeConflict, NodeNotFound } from './workspace-errors.ts'
import { indexVersionText } from './search-index.ts'
import { shareTree } from './tree-lock.ts'


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
  /** A page a compile job wrote (`nodes.generated`), null for a person's own file; undefined where the row did not say. */
  readonly generated?: GeneratedKind | null | undefined
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
    generated: row.generated,
  }
}

/**
 * ON CONFLICT of an insert into `nodes`: a live node already has the path (names are unique among
 * an owner's live nodes; a trashed one keeps its path, migrations/20261208100000_trash.ts).
 */
export const skipTakenPath = (oc: OnConflictBuilder<DB, 'nodes'>) => oc.columns(['owner_id', 'path']).where('trash_id', 'is', null).doNothing()

export function nodeQuery(db: Db) {
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
    .onConflict(skipTakenPath)
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
      .onConflict(skipTakenPath)
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
 * (same hash) makes no new version; when that version was stored without its text, this parse
 * is recorded on it (`recordParse`). Records a `parse` job for the body and indexes its text for
 * the workspace-wide search (search-index.ts). Parsed files come through ingest.ts.
 */
export function putFile(db: Kysely<DB>, file: NewFileVersion): Promise<PutFileResult> {
  return db.transaction().execute((trx) => putFileInTransaction(trx, file))
}

export interface NewFileVersion {
  readonly owner: Owner
  readonly segments: ReadonlyArray<string>
  readonly bytes: Uint8Array
  readonly parsed: ParsedBody
  /** How the version came to be, shown in its history; absent: not recorded (the history says "—"). */
  readonly origin?: VersionOrigin | undefined
}
export interface PutFileResult {
  readonly outcome: PutFileOutcome
  readonly node: WorkspaceNode
  /** Why the current version is stored without its text (raw bytes kept); undefined when it has its text. */
  readonly parseError: string | undefined
}

/** `putFile` inside a caller's transaction, so several files can be stored all or nothing. */
export async function putFileInTransaction(trx: Transaction<DB>, { owner, segments: rawSegments, bytes, parsed, origin }: NewFileVersion): Promise<PutFileResult> {
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
    .onConflict(skipTakenPath)
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
        .select(['id', 'content_hash', 'parse_status'])
        .where('id', '=', node.current_version_id)
        .executeTakeFirst()
    : undefined
  if (current && current.content_hash === hash) {
    if (current.parse_status === 'parsed') return { outcome: 'unchanged', node: await getNode(trx, owner, segments), parseError: undefined }
    // The same bytes, stored without their text: this parse is the newer word on them.
    await recordParse(trx, { ownerId: owner.id, nodeId: node.id, versionId: current.id, uri, parsed })
    return { outcome: 'unchanged', node: await getNode(trx, owner, segments), parseError: parseErrorOf(parsed) }
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
      parse_error: parseErrorOf(parsed) ?? null,
      origin: origin ?? null,
    })
    .execute()
  await trx
    .updateTable('nodes')
    // a new version by anyone but a compile job (which marks its pages again) is the person's own file
    .set({ current_version_id: versionId, updated_at: sql`now()`, generated: null, generated_from: null })
    .where('id', '=', node.id)
    .execute()
  await indexVersionText(trx, { ownerId: owner.id, nodeId: node.id, versionId, body: parsed.ok ? (parsed.text ?? '') : null })
  await insertParseJob(trx, { ownerId: owner.id, nodeId: node.id, versionId, uri, parsed })
  return { outcome: current ? 'updated' : 'added', node: await getNode(trx, owner, segments), parseError: parseErrorOf(parsed) }
}

const parseErrorOf = (parsed: ParsedBody): string | undefined => (parsed.ok ? undefined : (parsed.error ?? 'unknown parse error'))

interface ParseRecord {
  readonly ownerId: string
  readonly nodeId: string
  readonly versionId: string
  readonly uri: string
  readonly parsed: ParsedBody
}

/** The `parse` job that records how a version's bytes were parsed. */
async function insertParseJob(trx: Transaction<DB>, { ownerId, nodeId, versionId, uri, parsed }: ParseRecord): Promise<void> {
  await trx
    .insertInto('jobs')
    .values({
      id: randomUUID(),
      owner_id: ownerId,
      node_id: nodeId,
      version_id: versionId,
      uri,
      kind: 'parse',
      status: parsed.ok ? 'succeeded' : 'failed',
      error: parseErrorOf(parsed) ?? null,
      started_at: sql<Date>`now()`,
      finished_at: sql<Date>`now()`,
    })
    .execute()
}

/**
 * Records a new parse of a stored version's bytes on that version: its text (and search
 * passages), or the new reason it has none; and the `parse` job. Only while it is the file's
 * current version (the node row locked, as a new version would lock it); false, and nothing
 * written, when it no longer is (a newer version, or the file deleted).
 */
export async function recordParse(trx: Transaction<DB>, record: ParseRecord): Promise<boolean> {
  const { ownerId, nodeId, versionId, parsed } = record
  const node = await trx.selectFrom('nodes').select('current_version_id').where('id', '=', nodeId).where('owner_id', '=', ownerId).forUpdate().executeTakeFirst()
  if (node?.current_version_id !== versionId) return false
  const text = parsed.ok ? (parsed.text ?? '') : null
  await trx
    .updateTable('file_versions')
    .set(text !== null ? { body: text, parse_status: 'parsed', parse_error: null } : { parse_error: parseErrorOf(parsed) ?? null })
    .where('id', '=', versionId)
    .execute()
  if (text !== null) await indexVersionText(trx, { ownerId, nodeId, versionId, body: text })
  await insertParseJob(trx, record)
  return true
}

/** Deletes a node and everything below it. */
export async function deleteNode(db: Db, owner: Owner, node: WorkspaceNode): Promise<void> {
  if (node.path === '') throw new NodeConflict({ uri: node.uri, reason: 'the root cannot be deleted' })
  await db.deleteFrom('nodes').where('owner_id', '=', owner.id).where('id', '=', node.id).execute()
}
