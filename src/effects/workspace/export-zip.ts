// A folder (or the whole workspace) as a zip of its files' original bytes, written to any stream
// (issue 37, Export): the HTTP download and `knowagent export` are two faces of this one use case.
//
// - Each file's current version, as uploaded; generated pages (a compile job's) are files too.
// - Entry names are relative to the exported folder (`a.md`, `sub/b.md`), UTF-8 and flagged so
//   (yazl always sets the flag); every folder below it is a directory entry, so empty ones survive.
// - Bounded memory whatever the folder's size: the tree is listed a page at a time and each file is
//   read a slice at a time when its turn comes (readRawSlice, as a raw download), each slice written
//   before the next is read. What grows with the folder is the zip's central directory — a name and
//   a few numbers per entry, which the format writes at the end.
// - Stopped by `signal` (a client that went away): no slice is read after it, and no connection is
//   held between slices. A file deleted mid-way fails the export (never a zip missing it silently).
import type { Writable } from 'node:stream'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { sql } from 'kysely'
import { ZipFile } from 'yazl'
import type { Db, Owner } from '../db/schema.ts'
import { readRawSlice } from './file-contents.ts'
import { isTextMime } from './mime.ts'
import type { WorkspaceNode } from './store.ts'
import { formatKbUri, pathToSegments } from './uri.ts'
import { NodeConflict, NodeNotFound } from './workspace-errors.ts'

export const EXPORT_SLICE_BYTES = 1 << 20
const LISTING_PAGE = 1000

/** One node below the exported folder, as the zip names it. */
export interface ExportEntry {
  readonly kind: 'file' | 'directory'
  /** The node's store path (its URI's segments joined by "/"). */
  readonly path: string
  /** The name inside the zip, relative to the exported folder; a directory's ends with "/". */
  readonly entryName: string
  readonly versionId: string | null
  readonly mime: string | null
  readonly length: number
  readonly modifiedAt: Date
}

export interface ExportTotals {
  readonly files: number
  readonly directories: number
  /** The files' original bytes, summed (not the zip's size). */
  readonly bytes: number
}

/** A folder to export: the root or any directory; a file is refused (its raw download is the way). */
export function exportableFolder(node: WorkspaceNode): WorkspaceNode {
  if (node.kind !== 'directory') throw new NodeConflict({ uri: node.uri, reason: 'only a folder is exported as a zip; download a file as it is' })
  return node
}

/** The zip's file name: the folder's name, or the login for the whole workspace. */
export function exportFileName({ owner, folder }: { owner: Owner; folder: WorkspaceNode }): string {
  return `${folder.path === '' ? owner.login : folder.name}.zip`
}

/** The nodes below `folder`, in path order, `pageSize` at a time (keyset pages: each one short query). */
export async function* listExportEntries(
  db: Db,
  { owner, folder, pageSize = LISTING_PAGE }: { owner: Owner; folder: WorkspaceNode; pageSize?: number },
): AsyncGenerator<ExportEntry> {
  const prefix = folder.path === '' ? '' : `${folder.path}/`
  let after: string | undefined
  for (;;) {
    let query = db
      .selectFrom('nodes')
      .leftJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
      .select([
        'nodes.path',
        'nodes.kind',
        'nodes.updated_at',
        'file_versions.id as version_id',
        'file_versions.mime',
        'file_versions.created_at as version_at',
        sql<string | null>`octet_length(file_versions.raw)`.as('length'),
      ])
      .where('nodes.owner_id', '=', owner.id)
      .where('nodes.path', '!=', '')
    if (prefix !== '') query = query.where('nodes.path', 'like', `${prefix.replace(/[\\%_]/g, (c) => '\\' + c)}%`)
    if (after !== undefined) query = query.where(sql<boolean>`nodes.path collate "C" > ${after} collate "C"`)
    const rows = await query.orderBy(sql`nodes.path collate "C"`).limit(pageSize).execute()
    for (const row of rows) {
      const relative = row.path.slice(prefix.length)
      yield {
        kind: row.kind,
        path: row.path,
        entryName: row.kind === 'directory' ? `${relative}/` : relative,
        versionId: row.version_id,
        mime: row.mime,
        length: Number(row.length ?? 0),
        modifiedAt: new Date(row.version_at ?? row.updated_at),
      }
    }
    if (rows.length < pageSize) return
    after = rows.at(-1)!.path
  }
}

/**
 * A version's bytes as a stream that reads a slice when the zip asks for more: one short query per
 * slice, none ahead. NodeNotFound (`uri`) when the version is gone (its file deleted since).
 */
function versionBytes(
  db: Db,
  { versionId, length, uri, sliceBytes, readSlice }: { versionId: string; length: number; uri: string; sliceBytes: number; readSlice: typeof readRawSlice },
): Readable {
  let offset = 0
  return new Readable({
    highWaterMark: sliceBytes,
    read() {
      if (offset >= length) {
        this.push(null)
        return
      }
      const wanted = Math.min(sliceBytes, length - offset)
      readSlice(db, { versionId, offset, length: wanted }).then(
        (slice) => {
          if (this.destroyed) return
          if (slice === undefined || slice.byteLength !== wanted) {
            this.destroy(new NodeNotFound({ uri }))
            return
          }
          offset += wanted
          this.push(slice)
        },
        (error: unknown) => this.destroy(error instanceof Error ? error : new Error(String(error))),
      )
    },
  })
}

/**
 * Writes `folder` as a zip to `output` and ends it; resolves with what went in once the last byte
 * is written. Rejects — `output` destroyed, no further slice read — when `signal` aborts, a file
 * vanishes mid-way, the database fails or `output` fails.
 */
export async function writeFolderZip(
  db: Db,
  {
    owner,
    folder,
    output,
    signal,
    sliceBytes = EXPORT_SLICE_BYTES,
    readSlice = readRawSlice,
    pageSize,
  }: {
    owner: Owner
    folder: WorkspaceNode
    output: Writable
    signal?: AbortSignal | undefined
    sliceBytes?: number
    /** How a slice is read (tests hold the export between two slices). */
    readSlice?: typeof readRawSlice
    pageSize?: number
  },
): Promise<ExportTotals> {
  signal?.throwIfAborted()
  const zip = new ZipFile()
  const reading = new Set<Readable>()
  let failure: unknown
  const fail = (error: unknown): void => {
    failure ??= error
    for (const stream of reading) stream.destroy()
    ;(zip.outputStream as Readable).destroy(error instanceof Error ? error : new Error(String(error)))
  }
  const onAbort = (): void => fail(signal!.reason)
  signal?.addEventListener('abort', onAbort, { once: true })
  zip.on('error', fail) // yazl's own (a size that does not match)
  const written = pipeline(zip.outputStream as Readable, output)
  written.catch(fail) // the output failed or closed (a client gone): stop listing and reading at once
  try {
    let files = 0
    let directories = 0
    let bytes = 0
    for await (const entry of listExportEntries(db, { owner, folder, pageSize })) {
      if (failure !== undefined) break
      if (entry.kind === 'directory') {
        zip.addEmptyDirectory(entry.entryName, { mtime: entry.modifiedAt })
        directories += 1
        continue
      }
      if (entry.versionId === null) continue // a file without a version is never committed; nothing to send
      const versionId = entry.versionId
      const uri = formatKbUri({ login: owner.login, segments: pathToSegments(entry.path), directory: false })
      zip.addReadStreamLazy(
        entry.entryName,
        { size: entry.length, mtime: entry.modifiedAt, compress: entry.mime !== null && isTextMime(entry.mime) }, // PDFs, images, office files are compressed already
        (ready) => {
          const stream = versionBytes(db, { versionId, length: entry.length, uri, sliceBytes, readSlice })
          reading.add(stream)
          stream.once('close', () => reading.delete(stream))
          stream.on('error', fail) // yazl pipes it without listening: a vanished version or a failed query stops the zip here
          if (failure !== undefined) stream.destroy()
          ready(null, stream)
        },
      )
      files += 1
      bytes += entry.length
    }
    if (failure === undefined) zip.end()
    await written
    if (failure !== undefined) throw failure
    return { files, directories, bytes }
  } catch (error) {
    fail(error)
    output.destroy()
    throw failure
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}
