// The one way parsed files enter the workspace: an upload, `knowagent import` (and with it the
// demo corpus) and a compile job's re-parse all come here. Each file's bytes are parsed first, in
// the parser's processes, with no transaction held and the caller's signal able to stop it; then
// a batch is stored in ONE transaction under the owner's shared tree lock (tree-lock.ts): the
// folder it goes to, a version per changed file, the `parse` job recording each outcome. So a
// batch is stored whole or not at all, and an abort before its commit leaves nothing.
import * as Data from 'effect/Data'
import type { Kysely, Transaction } from 'kysely'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { DB, Owner } from '../db/schema.ts'
import type { DocumentParser } from './parse/document-parser.ts'
import { makeDirectories, type ParsedBody, type PutFileOutcome, putFileInTransaction, recordParse, type WorkspaceNode } from './store.ts'
import { checkStorageLimits, type StorageLimits } from './storage-limits.ts'
import { shareTree } from './tree-lock.ts'
import { formatKbUri, pathToSegments } from './uri.ts'

/**
 * A file to ingest: its bytes, or a private file on disk (an upload's spool) that the parser reads
 * and the store reads again; `folders` puts it in folders below the batch's (a zip import's entries).
 */
export type IngestSource =
  | { readonly name: string; readonly bytes: Uint8Array; readonly mime?: string | undefined; readonly folders?: ReadonlyArray<string> | undefined }
  | { readonly name: string; readonly path: string; readonly mime?: string | undefined; readonly folders?: ReadonlyArray<string> | undefined }

/** Where a batch goes. */
export interface IngestFolder {
  readonly segments: ReadonlyArray<string>
  /**
   * The folder as found before parsing began. Moved or renamed meanwhile, the files follow it;
   * deleted, the batch is refused with FolderGone (nothing stored, no folder made again at its
   * old path) unless `create` asks for it.
   */
  readonly nodeId?: string | undefined
  /** Make the folder, and those above it, when missing. */
  readonly create: boolean
}

export interface IngestBatch {
  readonly owner: Owner
  readonly folder: IngestFolder
  readonly files: ReadonlyArray<IngestSource>
  /** Folders below the batch's to make in the same transaction, even when empty (a zip import's directory entries). */
  readonly directories?: ReadonlyArray<ReadonlyArray<string>> | undefined
  readonly parser: DocumentParser
  /** Stops the parse under way and stores nothing; the batch fails with the signal's reason. */
  readonly signal?: AbortSignal | undefined
  /** A private folder for the parsed texts until the transaction (memory then holds one at a time); in memory without it. */
  readonly spool?: string | undefined
  /** A person's storage and upload-rate limits (an upload); none for what the operator imports. */
  readonly limits?: StorageLimits | undefined
  /** How the versions came, shown in a file's history: `upload` (the default) or `import` (`knowagent import`, a zip). */
  readonly origin?: 'upload' | 'import' | undefined
}

/** How one file was stored. */
export interface IngestedFile {
  readonly node: WorkspaceNode
  /** added: a new file; updated: a new version; unchanged: the bytes of the current version (no new version). */
  readonly outcome: PutFileOutcome
  /** Set when the file is stored without its text (its raw bytes kept): why. */
  readonly withoutText: string | undefined
}

export interface IngestedBatch {
  /** The folder the files went to, where it is now. */
  readonly folderUri: string
  readonly files: ReadonlyArray<IngestedFile>
}

/** The folder of a batch was deleted while its files were parsed. HTTP 404. */
export class FolderGone extends Data.TaggedError('FolderGone')<{ readonly uri: string }> {
  readonly code = 'not_found'
  readonly status = 404
  override get message() {
    return `${this.uri} was deleted while the upload was read; nothing was stored`
  }
}

/** A parse outcome, its text in memory or in the spool until the transaction reads it. */
type Parsed = { readonly ok: true; readonly mime: string; readonly text: string } | { readonly ok: true; readonly mime: string; readonly textPath: string } | { readonly ok: false; readonly mime: string; readonly error: string }

async function parseSource({ parser, file, signal, textPath }: { parser: DocumentParser; file: IngestSource; signal: AbortSignal | undefined; textPath: string | undefined }): Promise<Parsed> {
  const outcome = await parser.parse({ name: file.name, mime: file.mime, signal, ...('path' in file ? { path: file.path } : { bytes: file.bytes }) })
  signal?.throwIfAborted()
  // Cancelled without our signal (the parser is shutting down): not a fact about the file, so never stored as one.
  if (!outcome.ok && outcome.code === 'aborted') throw new Error(`${file.name}: ${outcome.error}; nothing was stored`)
  if (!outcome.ok) return { ok: false, mime: outcome.mime, error: outcome.error }
  if (textPath === undefined) return { ok: true, mime: outcome.mime, text: outcome.text }
  await writeFile(textPath, outcome.text, { mode: 0o600 })
  return { ok: true, mime: outcome.mime, textPath }
}

const bodyOf = async (parsed: Parsed): Promise<ParsedBody> => ('textPath' in parsed ? { ok: true, mime: parsed.mime, text: await readFile(parsed.textPath, 'utf8') } : parsed)

/** The batch's folder as it is now, under the shared tree lock: no move or delete runs until the transaction ends. */
async function folderNow(trx: Transaction<DB>, owner: Owner, folder: IngestFolder): Promise<{ uri: string; segments: ReadonlyArray<string> }> {
  await shareTree(trx, owner.id)
  const uri = formatKbUri({ login: owner.login, segments: folder.segments, directory: true })
  if (folder.nodeId !== undefined) {
    const row = await trx.selectFrom('nodes').select(['path', 'kind']).where('id', '=', folder.nodeId).where('owner_id', '=', owner.id).executeTakeFirst()
    if (row?.kind === 'directory') {
      const segments = pathToSegments(row.path)
      return { uri: formatKbUri({ login: owner.login, segments, directory: true }), segments }
    }
    if (!folder.create) throw new FolderGone({ uri })
  }
  await makeDirectories(trx, owner, folder.segments) // with the files, or not at all
  return { uri, segments: folder.segments }
}

/**
 * Parses each file (one at a time), then stores them all in one transaction: all or none. An
 * empty batch makes the folder. Fails with the store's typed errors (InvalidUri, NodeConflict),
 * FolderGone, StorageQuotaExceeded or UploadRateLimited (with `limits`), or the signal's reason.
 */
export async function ingestFiles(db: Kysely<DB>, { owner, folder, files, directories = [], parser, signal, spool, limits, origin = 'upload' }: IngestBatch): Promise<IngestedBatch> {
  const parsed: Parsed[] = []
  for (const [index, file] of files.entries()) {
    parsed.push(await parseSource({ parser, file, signal, textPath: spool === undefined ? undefined : join(spool, `${index}.txt`) }))
  }
  signal?.throwIfAborted()
  return db.transaction().execute(async (trx) => {
    const where = await folderNow(trx, owner, folder)
    for (const below of directories) await makeDirectories(trx, owner, [...where.segments, ...below])
    const stored: IngestedFile[] = []
    for (const [index, file] of files.entries()) {
      const bytes = 'path' in file ? new Uint8Array(await readFile(file.path)) : file.bytes
      const segments = [...where.segments, ...(file.folders ?? []), file.name]
      const { outcome, node, parseError } = await putFileInTransaction(trx, { owner, segments, bytes, parsed: await bodyOf(parsed[index]!), origin })
      stored.push({ node, outcome, withoutText: parseError })
    }
    // Over a limit with the versions just written counted: rolled back, nothing stored.
    if (limits !== undefined && stored.some((file) => file.outcome !== 'unchanged')) await checkStorageLimits(trx, { ownerId: owner.id, limits })
    signal?.throwIfAborted() // the caller left while the batch was written: it is rolled back
    return { folderUri: where.uri, files: stored }
  })
}

/** The text of a file's current version, or why it has none. */
export type CurrentText =
  | { readonly _tag: 'Text'; readonly text: string }
  | { readonly _tag: 'WithoutText'; readonly reason: string }
  | { readonly _tag: 'NoContent' }

/**
 * The text of a file's current version. One stored without its text is parsed again when a parser
 * is given (the parser improved, a limit was raised, a parser process crashed), and that parse is
 * recorded on the version like any other: its text and search passages, or its reason, and a
 * `parse` job. A version no longer current when the parse ends is left as it is.
 */
export async function currentText(
  db: Kysely<DB>,
  { owner, node, parser, signal }: { owner: Owner; node: WorkspaceNode; parser: DocumentParser | undefined; signal?: AbortSignal | undefined },
): Promise<CurrentText> {
  const version = await db
    .selectFrom('nodes')
    .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
    .select(['file_versions.id', 'file_versions.body', 'file_versions.parse_status', 'file_versions.parse_error', 'file_versions.mime'])
    .where('nodes.id', '=', node.id)
    .where('nodes.owner_id', '=', owner.id)
    .executeTakeFirst()
  if (!version) return { _tag: 'NoContent' }
  if (version.parse_status === 'parsed' && version.body !== null) return { _tag: 'Text', text: version.body }
  if (!parser) return { _tag: 'WithoutText', reason: version.parse_error ?? 'no text body' }
  const raw = await db.selectFrom('file_versions').select('raw').where('id', '=', version.id).executeTakeFirst()
  if (!raw) return { _tag: 'NoContent' }
  const parsed = await parseSource({ parser, file: { name: node.name, bytes: raw.raw, mime: version.mime }, signal, textPath: undefined })
  const body = await bodyOf(parsed)
  await db.transaction().execute((trx) => recordParse(trx, { ownerId: owner.id, nodeId: node.id, versionId: version.id, uri: node.uri, parsed: body }))
  return body.ok ? { _tag: 'Text', text: body.text ?? '' } : { _tag: 'WithoutText', reason: body.error ?? 'unknown parse error' }
}
