// A zip unpacked into a folder (issue 37, "import such a zip back"): the inverse of export-zip.ts.
// Each entry's bytes become a file at its path below the folder, parsed like an upload and stored
// through ingestFiles in ONE transaction — all or none, storage limits included.
//
// The archive is hostile until every entry has been checked, and nothing is inflated before then:
// - the central directory is read first (parse/zip.ts, the reader DOCX uses): more than
//   `maxEntries` entries is a 413 before a single name is looked at;
// - every name is checked as given (never rewritten but to NFC): not UTF-8, NUL, a backslash, an
//   absolute path, an empty part (`a//b`), a part the one name rule refuses (`..`, bidi and other
//   invisible characters …), a symbolic link, an encrypted entry, an unknown compression method,
//   the same path twice (after NFC), a file where another entry needs a folder: a 400 naming it;
// - the sizes the archive declares are checked against `maxEntryBytes` per entry and
//   `maxTotalBytes` for the sum (413 naming the limit); then each entry is inflated with its own
//   declared size as its cap, so an entry that lies about its size is stopped one byte past its
//   claim (413) and the total can never pass the budget. One entry at a time is in memory: each is
//   written to the request's spool folder before the next is inflated.
import * as Data from 'effect/Data'
import type { Kysely } from 'kysely'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { DB, Owner } from '../db/schema.ts'
import { type IngestedBatch, type IngestFolder, type IngestSource, ingestFiles } from './ingest.ts'
import { quotedName } from './name-display.ts'
import type { DocumentParser } from './parse/document-parser.ts'
import { inflateZipEntry, MAX_ZIP_ENTRIES, readZipDirectory, type ZipDirectoryEntry } from './parse/zip.ts'
import type { StorageLimits } from './storage-limits.ts'
import { checkNodeName } from './uri.ts'

/** An entry of the zip that cannot become a file or folder; nothing is stored. HTTP 400. */
export class ZipEntryRefused extends Data.TaggedError('ZipEntryRefused')<{ readonly entry: string; readonly reason: string }> {
  readonly code = 'invalid_zip_entry'
  readonly status = 400
  override get message() {
    return `zip entry ${quotedName(this.entry)} is refused: ${this.reason}; nothing was stored`
  }
}

/** Not a zip this reader can read (no central directory, damaged, zip64). HTTP 400. */
export class ZipUnreadable extends Data.TaggedError('ZipUnreadable')<{ readonly reason: string }> {
  readonly code = 'bad_zip'
  readonly status = 400
  override get message() {
    return `the file is not a readable zip archive: ${this.reason}; nothing was stored`
  }
}

/** The zip would unpack past a limit (`limit` names it). HTTP 413. */
export class ZipTooLarge extends Data.TaggedError('ZipTooLarge')<{ readonly limit: string; readonly detail: string }> {
  readonly code = 'zip_too_large'
  readonly status = 413
  override get message() {
    return `${this.detail} (${this.limit}); nothing was stored`
  }
}

export interface ZipImportLimits {
  /** Entries in one zip (the reader's cap, 10,000). */
  readonly maxEntries?: number | undefined
  /** Bytes of one entry once inflated (`limits.maxFileBytes`, as one uploaded file). */
  readonly maxEntryBytes: number
  /** Bytes of all entries once inflated (`limits.maxZipImportBytes`). */
  readonly maxTotalBytes: number
}

/** What the zip holds, checked: each file's place below the target folder, and every folder (empty ones too). */
export interface ZipImportPlan {
  readonly files: ReadonlyArray<{ readonly entry: ZipDirectoryEntry; readonly folders: ReadonlyArray<string>; readonly name: string }>
  readonly directories: ReadonlyArray<ReadonlyArray<string>>
}

const count = (n: number): string => n.toLocaleString('en-US')

/** The entry's path below the target folder as NFC segments, or why it cannot be one. */
function entrySegments(entry: ZipDirectoryEntry): { directory: boolean; segments: string[] } {
  const refuse = (reason: string): never => {
    throw new ZipEntryRefused({ entry: entry.name, reason })
  }
  const raw = entry.name
  if (!entry.utf8) refuse('its name is not UTF-8')
  if (raw.includes('\0')) refuse('its name holds a NUL character')
  if (raw.includes('\\')) refuse('its name holds a backslash; zip paths use "/"')
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) refuse('it is an absolute path')
  if (entry.symlink) refuse('it is a symbolic link')
  if (entry.encrypted) refuse('it is encrypted')
  if (entry.method !== 0 && entry.method !== 8) refuse(`it uses compression method ${entry.method}; only stored and deflated entries are read`)
  const directory = raw.endsWith('/')
  const parts = (directory ? raw.slice(0, -1) : raw).split('/')
  const segments = parts.map((part) => {
    if (part === '') return refuse('its path has an empty part')
    const checked = checkNodeName(part)
    return checked.ok ? checked.name : refuse(checked.reason)
  })
  if (directory && entry.declaredSize !== 0) refuse('a folder entry holds data')
  return { directory, segments }
}

/** Checks every entry and the declared sizes; inflates nothing. Throws ZipEntryRefused or ZipTooLarge. */
export function planZipImport(entries: ReadonlyArray<ZipDirectoryEntry>, { maxEntryBytes, maxTotalBytes }: ZipImportLimits): ZipImportPlan {
  const kinds = new Map<string, 'file' | 'directory'>()
  const files: Array<ZipImportPlan['files'][number]> = []
  const directories: string[][] = []
  const placed: Array<{ entry: ZipDirectoryEntry; segments: string[] }> = []
  for (const entry of entries) {
    const { directory, segments } = entrySegments(entry)
    const key = segments.join('/')
    if (kinds.has(key)) throw new ZipEntryRefused({ entry: entry.name, reason: 'its path appears twice in the zip' })
    kinds.set(key, directory ? 'directory' : 'file')
    placed.push({ entry, segments })
    if (directory) directories.push(segments)
    else files.push({ entry, folders: segments.slice(0, -1), name: segments.at(-1)! })
  }
  for (const { entry, segments } of placed) {
    for (let depth = 1; depth < segments.length; depth++) {
      if (kinds.get(segments.slice(0, depth).join('/')) === 'file') {
        throw new ZipEntryRefused({ entry: entry.name, reason: `it lies inside ${quotedName(segments.slice(0, depth).join('/'))}, which is a file in the same zip` })
      }
    }
  }
  let total = 0
  for (const { entry } of files) {
    if (entry.declaredSize > maxEntryBytes) {
      throw new ZipTooLarge({ limit: `limits.maxFileBytes, ${count(maxEntryBytes)} bytes`, detail: `zip entry ${quotedName(entry.name)} unpacks to ${count(entry.declaredSize)} bytes, more than one file may hold` })
    }
    total += entry.declaredSize
  }
  if (total > maxTotalBytes) throw new ZipTooLarge({ limit: `limits.maxZipImportBytes, ${count(maxTotalBytes)} bytes`, detail: `the zip unpacks to ${count(total)} bytes, more than one import may` })
  return { files, directories }
}

/**
 * The zip at `zipPath` unpacked into `folder`: checked whole, each entry inflated to `spool` one at
 * a time, then parsed and stored by ingestFiles in one transaction. `signal` stops it at any step,
 * nothing stored. Fails with ZipUnreadable, ZipEntryRefused, ZipTooLarge, or ingestFiles' errors.
 */
export async function importZip(
  db: Kysely<DB>,
  {
    owner,
    folder,
    zipPath,
    parser,
    spool,
    signal,
    limits,
    storageLimits,
  }: {
    owner: Owner
    folder: IngestFolder
    zipPath: string
    parser: DocumentParser
    /** A private folder for the inflated entries and their texts (the upload's spool). */
    spool: string
    signal?: AbortSignal | undefined
    limits: ZipImportLimits
    storageLimits?: StorageLimits | undefined
  },
): Promise<IngestedBatch> {
  const maxEntries = limits.maxEntries ?? MAX_ZIP_ENTRIES
  const bytes = new Uint8Array(await readFile(zipPath))
  const read = readZipDirectory(bytes, { maxEntries })
  if (!read.ok) {
    if (read.problem === 'too_many_entries') throw new ZipTooLarge({ limit: `${count(maxEntries)} entries per zip`, detail: 'the zip holds too many entries' })
    throw new ZipUnreadable({ reason: read.detail })
  }
  const plan = planZipImport(read.entries, limits)
  const files: IngestSource[] = []
  for (const [index, { entry, folders, name }] of plan.files.entries()) {
    signal?.throwIfAborted()
    // Capped at its declared size: a lie is caught one byte past the claim, and the declared sizes fit the budget.
    const data = await inflateZipEntry(bytes, read.directoryOffset, entry, { cap: entry.declaredSize })
    if (!data.ok) {
      if (data.problem === 'inflated_too_large') {
        throw new ZipTooLarge({ limit: `its declared size, ${count(entry.declaredSize)} bytes`, detail: `zip entry ${quotedName(entry.name)} inflates past the size it declares (a decompression bomb)` })
      }
      if (data.problem === 'encrypted') throw new ZipEntryRefused({ entry: entry.name, reason: 'it is encrypted' })
      throw new ZipUnreadable({ reason: data.detail })
    }
    const path = join(spool, `entry-${index}`)
    await writeFile(path, data.data, { flag: 'wx', mode: 0o600 })
    files.push({ name, folders, path })
  }
  return ingestFiles(db, { owner, folder, files, directories: plan.directories, parser, signal, spool, limits: storageLimits, origin: 'import' })
}
