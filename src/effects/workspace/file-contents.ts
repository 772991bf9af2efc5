// A file's contents as the store keeps them: the current version's parsed body (whole, several at
// once, or only when small), its size, and its raw bytes (whole or a slice at a time). The tree and
// the versioning that writes them are store.ts.
import { sql } from 'kysely'
import type { WorkspaceNode } from './store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { NodeNotFound, VersionNotFound } from './workspace-errors.ts'

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

/** One version of the owner's file: `versionNo`, or the current one. */
function versionOf(db: Db, { owner, node, versionNo }: { owner: Owner; node: WorkspaceNode; versionNo?: number | undefined }) {
  const rows = db.selectFrom('file_versions').innerJoin('nodes', 'nodes.id', 'file_versions.node_id').where('nodes.id', '=', node.id).where('nodes.owner_id', '=', owner.id)
  return versionNo === undefined ? rows.whereRef('file_versions.id', '=', 'nodes.current_version_id') : rows.where('file_versions.version_no', '=', versionNo)
}

/** What a missing version is: the file's own absence (no current version), or that number's (VersionNotFound). */
const missing = (node: WorkspaceNode, versionNo: number | undefined) => (versionNo === undefined ? new NodeNotFound({ uri: node.uri }) : new VersionNotFound({ uri: node.uri, version: versionNo }))

/** A version of a file (the current one unless `versionNo`), read in one statement (never a mix of two versions). */
export async function readFileVersion(db: Db, { owner, node, versionNo }: { owner: Owner; node: WorkspaceNode; versionNo?: number | undefined }): Promise<FileContent & { readonly createdAt: Date }> {
  const row = await versionOf(db, { owner, node, versionNo })
    .select([
      'file_versions.id as version_id',
      'file_versions.version_no',
      'file_versions.body',
      'file_versions.parse_status',
      'file_versions.parse_error',
      'file_versions.mime',
      'file_versions.size',
      'file_versions.created_at',
    ])
    .executeTakeFirst()
  if (!row) throw missing(node, versionNo)
  return {
    node,
    versionId: row.version_id,
    versionNo: row.version_no,
    body: row.body,
    parseStatus: row.parse_status,
    parseError: row.parse_error,
    mime: row.mime,
    size: Number(row.size),
    createdAt: new Date(row.created_at),
  }
}

/** The current version of a file, read in one statement. */
export function readCurrent(db: Db, owner: Owner, node: WorkspaceNode): Promise<FileContent> {
  return readFileVersion(db, { owner, node })
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

/**
 * Each node's current version, as a key for what a caller derives from its text: the version id
 * and the text's byte length (a version's bytes never change; its text only by a re-parse, which
 * the length almost always tells). Reads no body.
 */
export async function currentVersionKeys(db: Db, owner: Owner, nodes: ReadonlyArray<WorkspaceNode>): Promise<Map<string, { readonly versionId: string; readonly key: string }>> {
  if (nodes.length === 0) return new Map()
  const rows = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['nodes.id', 'file_versions.id as version_id', sql<string | null>`octet_length(file_versions.body)`.as('bytes')])
    .where('nodes.id', 'in', nodes.map((node) => node.id))
    .where('nodes.owner_id', '=', owner.id)
    .execute()
  return new Map(rows.map((row) => [row.id, { versionId: String(row.version_id), key: `${row.version_id}:${row.bytes ?? 'none'}` }]))
}

/** `readSmallCurrentBodies` by version id (ids from `currentVersionKeys`, so already the owner's). */
export async function readSmallVersionBodies(db: Db, versionIds: ReadonlyArray<string>, { maxBytes }: { maxBytes: number }): Promise<Map<string, string | null | BodyTooLarge>> {
  if (versionIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('file_versions')
    .select([
      'file_versions.id',
      sql<string | null>`case when octet_length(file_versions.body) <= ${maxBytes}::int then file_versions.body end`.as('body'),
      sql<string | null>`octet_length(file_versions.body)`.as('bytes'),
    ])
    .where('file_versions.id', 'in', [...versionIds])
    .execute()
  return new Map(rows.map((row) => [String(row.id), row.bytes !== null && row.body === null ? { tooLarge: true, bytes: Number(row.bytes) } : row.body]))
}

/** What a download of a file's current version needs first: that version (immutable), its media type and byte length. */
export interface RawVersion {
  readonly versionId: string
  readonly mime: string
  readonly length: number
}

/** What a download of a version (the current one unless `versionNo`) needs first: its id, type and length. */
export async function findRawVersion(db: Db, owner: Owner, node: WorkspaceNode, versionNo?: number): Promise<RawVersion> {
  const row = await versionOf(db, { owner, node, versionNo })
    .select(['file_versions.id', 'file_versions.mime', sql<string>`octet_length(file_versions.raw)`.as('length')])
    .executeTakeFirst()
  if (!row) throw missing(node, versionNo)
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
