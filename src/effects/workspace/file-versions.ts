// A file's history (issue 37): every version it has had, newest first, any one of them read or
// downloaded, and one restored as the newest version. A version's bytes never change, so an old
// one is read by its number like the current one by the node's pointer.
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { DB, Db, Owner, VersionOrigin } from '../db/schema.ts'
import { type FileContent, findRawVersion, type RawVersion, readFileVersion } from './file-contents.ts'
import { getNode, putFileInTransaction, type WorkspaceNode } from './store.ts'
import { checkStorageLimits, type StorageLimits } from './storage-limits.ts'
import { shareTree } from './tree-lock.ts'
import { pathToSegments } from './uri.ts'
import { NodeConflict, NodeNotFound, VersionNotFound } from './workspace-errors.ts'

export const VERSIONS_PAGE = 50
export const VERSIONS_MAX_LIMIT = 200

export interface VersionSummary {
  readonly versionNo: number
  readonly createdAt: Date
  readonly size: number
  readonly mime: string
  /** null: written before origins were recorded, or by a writer that does not say. */
  readonly origin: VersionOrigin | null
  readonly current: boolean
}

export interface VersionsPage {
  readonly versions: ReadonlyArray<VersionSummary>
  /** Versions the file has in all; the newest is `latest`. */
  readonly total: number
  readonly currentNo: number
  readonly offset: number
}

function assertFile(node: WorkspaceNode): void {
  if (node.kind !== 'file') throw new NodeConflict({ uri: node.uri, reason: 'only files have versions' })
}

/** One page of a file's versions, newest first, each row with the count of all of them. */
export async function listVersions(db: Db, { owner, node, offset = 0, limit = VERSIONS_PAGE }: { owner: Owner; node: WorkspaceNode; offset?: number; limit?: number }): Promise<VersionsPage> {
  assertFile(node)
  const rows = await db
    .selectFrom('file_versions')
    .innerJoin('nodes', 'nodes.id', 'file_versions.node_id')
    .select([
      'file_versions.version_no',
      'file_versions.created_at',
      'file_versions.size',
      'file_versions.mime',
      'file_versions.origin',
      sql<boolean>`file_versions.id = nodes.current_version_id`.as('current'),
      sql<string>`count(*) over ()`.as('total'),
      sql<number>`(select v.version_no from file_versions v where v.id = nodes.current_version_id)`.as('current_no'),
    ])
    .where('nodes.id', '=', node.id)
    .where('nodes.owner_id', '=', owner.id)
    .orderBy('file_versions.version_no', 'desc')
    .offset(offset)
    .limit(limit)
    .execute()
  if (rows.length === 0) {
    // Past the end, or no file: count them to tell which.
    const counted = await db
      .selectFrom('file_versions')
      .innerJoin('nodes', 'nodes.id', 'file_versions.node_id')
      .select([sql<string>`count(*)`.as('total'), sql<number | null>`max(case when file_versions.id = nodes.current_version_id then file_versions.version_no end)`.as('current_no')])
      .where('nodes.id', '=', node.id)
      .where('nodes.owner_id', '=', owner.id)
      .executeTakeFirst()
    if (!counted || Number(counted.total) === 0) throw new NodeNotFound({ uri: node.uri })
    return { versions: [], total: Number(counted.total), currentNo: Number(counted.current_no), offset }
  }
  return {
    versions: rows.map((row) => ({
      versionNo: row.version_no,
      createdAt: new Date(row.created_at),
      size: Number(row.size),
      mime: row.mime,
      origin: row.origin,
      current: row.current,
    })),
    total: Number(rows[0]!.total),
    currentNo: Number(rows[0]!.current_no),
    offset,
  }
}

/** A version by its number, with its text (not its bytes); VersionNotFound when the file never had it. */
export function readVersion(db: Db, { owner, node, versionNo }: { owner: Owner; node: WorkspaceNode; versionNo: number }): Promise<FileContent & { readonly createdAt: Date }> {
  assertFile(node)
  return readFileVersion(db, { owner, node, versionNo })
}

/** `findRawVersion` for a version by its number: what its download needs first. */
export function findRawVersionNo(db: Db, { owner, node, versionNo }: { owner: Owner; node: WorkspaceNode; versionNo: number }): Promise<RawVersion> {
  assertFile(node)
  return findRawVersion(db, owner, node, versionNo)
}

export type RestoreOutcome =
  /** A new version, the old one's bytes and text, is now the current one. */
  | { readonly _tag: 'restored'; readonly node: WorkspaceNode; readonly from: number; readonly versionNo: number }
  /** Nothing written: the version asked for is the current one, or has the same bytes. */
  | { readonly _tag: 'current'; readonly node: WorkspaceNode; readonly from: number; readonly versionNo: number }

/**
 * Restores `versionNo` as the file's newest version (origin "restore"): its bytes, its parsed text
 * (or its parse failure) and its type, in one transaction under the owner's tree lock, so no move
 * or delete of the file runs meanwhile. The current version, or one with the current bytes, is a
 * no-op that says so. The copy counts towards the owner's storage limits like an upload's bytes.
 */
export function restoreVersion(
  db: Kysely<DB>,
  { owner, node, versionNo, limits }: { owner: Owner; node: WorkspaceNode; versionNo: number; limits: StorageLimits },
): Promise<RestoreOutcome> {
  assertFile(node)
  return db.transaction().execute(async (trx) => {
    await shareTree(trx, owner.id) // first, before any row lock (tree-lock.ts)
    // The node row locked, as a new version locks it: which version is current cannot change until this ends.
    const locked = await trx.selectFrom('nodes').select('id').where('id', '=', node.id).where('owner_id', '=', owner.id).forUpdate().executeTakeFirst()
    if (!locked) throw new NodeNotFound({ uri: node.uri })
    const row = await trx
      .selectFrom('file_versions')
      .innerJoin('nodes', 'nodes.id', 'file_versions.node_id')
      .select(['nodes.path', 'nodes.current_version_id', 'file_versions.id', 'file_versions.raw', 'file_versions.body', 'file_versions.mime', 'file_versions.parse_status', 'file_versions.parse_error'])
      .where('nodes.id', '=', node.id)
      .where('nodes.owner_id', '=', owner.id)
      .where('file_versions.version_no', '=', versionNo)
      .executeTakeFirst()
    if (!row) throw new VersionNotFound({ uri: node.uri, version: versionNo })
    const segments = pathToSegments(row.path)
    if (row.id === row.current_version_id) return { _tag: 'current', node: await getNode(trx, owner, segments), from: versionNo, versionNo }
    const stored = await putFileInTransaction(trx, {
      owner,
      segments,
      bytes: row.raw,
      parsed: row.parse_status === 'parsed' ? { ok: true, mime: row.mime, text: row.body ?? '' } : { ok: false, mime: row.mime, error: row.parse_error ?? undefined },
      origin: 'restore',
    })
    if (stored.outcome !== 'unchanged') await checkStorageLimits(trx, { ownerId: owner.id, limits })
    const current = await trx.selectFrom('file_versions').select('version_no').where('id', '=', stored.node.currentVersionId!).executeTakeFirstOrThrow()
    return { _tag: stored.outcome === 'unchanged' ? 'current' : 'restored', node: stored.node, from: versionNo, versionNo: current.version_no }
  })
}
