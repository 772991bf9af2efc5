// Just enough of the zip format for DOCX and for importing a zip into the workspace: the central
// directory is read (`readZipDirectory`), the sizes it declares are never trusted, and every entry
// is inflated through a capped stream (`inflateZipEntry`), so a small archive cannot unpack to
// gigabytes. `readZipEntries` inflates the entries it is asked for against one running byte budget
// (DOCX); the import inflates one entry at a time to disk with its own budgets (import-zip.ts).
// `writeStoredZip` writes entries back uncompressed.
import { crc32, createInflateRaw } from 'node:zlib'

export interface ZipEntry {
  readonly name: string
  readonly data: Uint8Array
}

export type ZipProblem = 'corrupt' | 'encrypted' | 'inflated_too_large'

export type ZipRead =
  | { readonly ok: true; readonly entries: ReadonlyArray<ZipEntry> }
  | { readonly ok: false; readonly problem: ZipProblem; readonly detail: string }

/** An entry as the central directory describes it; nothing of it inflated yet. */
export interface ZipDirectoryEntry {
  /** Decoded as UTF-8 when the bytes are valid UTF-8 (flagged so or not: many tools leave the flag out); else `utf8` is false (latin1, or U+FFFD where a flagged name's bytes are not UTF-8). */
  readonly name: string
  readonly utf8: boolean
  readonly encrypted: boolean
  readonly method: number
  readonly crc: number
  readonly compressedSize: number
  /** What the archive claims; checked against the inflated bytes, never trusted before. */
  readonly declaredSize: number
  readonly localOffset: number
  /** A Unix symbolic link (the "made by" system is Unix and the mode's type is S_IFLNK). */
  readonly symlink: boolean
}

export type ZipDirectory =
  | { readonly ok: true; readonly entries: ReadonlyArray<ZipDirectoryEntry>; readonly directoryOffset: number }
  | { readonly ok: false; readonly problem: 'corrupt' | 'too_many_entries'; readonly detail: string }

const EOCD = 0x06054b50
const CENTRAL = 0x02014b50
const LOCAL = 0x04034b50
/** Entries in one archive at most (DOCX or an import): the directory alone is then a few MB. */
export const MAX_ZIP_ENTRIES = 10_000
const S_IFMT = 0o170000
const S_IFLNK = 0o120000

const corrupt = (detail: string) => ({ ok: false, problem: 'corrupt', detail }) as const

const findEndOfCentralDirectory = (view: DataView): number | undefined => {
  // 22 bytes plus a comment of up to 65535.
  for (let end = view.byteLength - 22; end >= Math.max(0, view.byteLength - 22 - 0xffff); end--) {
    if (view.getUint32(end, true) === EOCD) return end
  }
  return undefined
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
const strictUtf8Valid = (raw: Uint8Array): boolean => {
  try {
    strictUtf8.decode(raw)
    return true
  } catch {
    return false
  }
}

/** Flagged UTF-8, or bytes that happen to be valid UTF-8 (many tools write UTF-8 without the flag), or latin1. */
const decodeName = (raw: Uint8Array, flagged: boolean): { name: string; utf8: boolean } => {
  if (flagged && !strictUtf8Valid(raw)) return { name: new TextDecoder('utf-8').decode(raw), utf8: false } // flagged, but not UTF-8
  try {
    return { name: strictUtf8.decode(raw), utf8: true }
  } catch {
    return { name: new TextDecoder('latin1').decode(raw), utf8: false }
  }
}

/** The central directory: every entry's name and numbers, in archive order. Reads no entry data. */
export const readZipDirectory = (bytes: Uint8Array, { maxEntries = MAX_ZIP_ENTRIES }: { maxEntries?: number } = {}): ZipDirectory => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const end = findEndOfCentralDirectory(view)
  if (end === undefined) return corrupt('not a zip archive (no end of central directory)')
  const count = view.getUint16(end + 10, true)
  const directorySize = view.getUint32(end + 12, true)
  const directoryOffset = view.getUint32(end + 16, true)
  if (count === 0xffff || directoryOffset === 0xffffffff) return corrupt('zip64 archives are not supported')
  if (count > maxEntries) return { ok: false, problem: 'too_many_entries', detail: `more than ${maxEntries} entries` }
  if (directoryOffset + directorySize > end) return corrupt('the central directory lies outside the archive')
  const entries: ZipDirectoryEntry[] = []
  let at = directoryOffset
  for (let k = 0; k < count; k++) {
    if (at + 46 > end || view.getUint32(at, true) !== CENTRAL) return corrupt(`central directory entry ${k} is damaged`)
    const madeBy = view.getUint16(at + 4, true)
    const flags = view.getUint16(at + 8, true)
    const nameLength = view.getUint16(at + 28, true)
    const next = at + 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true)
    if (next > end) return corrupt(`central directory entry ${k} is damaged`)
    const mode = view.getUint32(at + 38, true) >>> 16
    entries.push({
      ...decodeName(bytes.subarray(at + 46, at + 46 + nameLength), (flags & 0x0800) !== 0),
      encrypted: (flags & 0x0001) !== 0,
      method: view.getUint16(at + 10, true),
      crc: view.getUint32(at + 16, true),
      compressedSize: view.getUint32(at + 20, true),
      declaredSize: view.getUint32(at + 24, true),
      localOffset: view.getUint32(at + 42, true),
      symlink: madeBy >>> 8 === 3 && (mode & S_IFMT) === S_IFLNK,
    })
    at = next
  }
  return { ok: true, entries, directoryOffset }
}

type Inflated = { readonly ok: true; readonly data: Buffer } | { readonly ok: false; readonly tooLarge: boolean; readonly detail: string }

/**
 * Inflates through a stream, counting output as it comes and stopping the inflater past `cap`.
 * Asynchronous on purpose: zlib works off this thread in 64 KB steps, so the worker's memory
 * watchdog and a termination still get their turn (the synchronous inflater took 60 s for 1 GB).
 */
const inflateCapped = (compressed: Uint8Array, cap: number): Promise<Inflated> =>
  new Promise((resolve) => {
    const inflater = createInflateRaw({ chunkSize: 64 * 1024 })
    const chunks: Buffer[] = []
    let total = 0
    let settled = false
    const settle = (result: Inflated): void => {
      if (settled) return
      settled = true
      resolve(result)
    }
    inflater.on('data', (chunk: Buffer) => {
      total += chunk.length
      if (total > cap) {
        settle({ ok: false, tooLarge: true, detail: `more than ${cap} bytes` })
        inflater.destroy()
        return
      }
      chunks.push(chunk)
    })
    inflater.on('end', () => settle({ ok: true, data: Buffer.concat(chunks, total) }))
    inflater.on('error', (error: Error) => settle({ ok: false, tooLarge: false, detail: error.message }))
    inflater.end(compressed)
  })

export type ZipEntryData = { readonly ok: true; readonly data: Uint8Array } | { readonly ok: false; readonly problem: ZipProblem; readonly detail: string }

/**
 * One entry's bytes, inflated through a stream stopped past `cap` bytes (`inflated_too_large`,
 * detail: the entry's name), then checked against the declared size and the CRC.
 */
export const inflateZipEntry = async (bytes: Uint8Array, directoryOffset: number, entry: ZipDirectoryEntry, { cap }: { cap: number }): Promise<ZipEntryData> => {
  const { name } = entry
  if (entry.encrypted) return { ok: false, problem: 'encrypted', detail: `entry ${name} is encrypted` }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const localOffset = entry.localOffset
  if (localOffset + 30 > directoryOffset || view.getUint32(localOffset, true) !== LOCAL) return corrupt(`local header of ${name} is damaged`)
  const start = localOffset + 30 + view.getUint16(localOffset + 26, true) + view.getUint16(localOffset + 28, true)
  if (start + entry.compressedSize > directoryOffset) return corrupt(`data of ${name} lies outside the archive`)
  const stored = bytes.subarray(start, start + entry.compressedSize)
  let data: Uint8Array
  if (entry.method === 0) {
    if (stored.length > cap) return { ok: false, problem: 'inflated_too_large', detail: name }
    data = stored
  } else if (entry.method === 8) {
    const inflated = await inflateCapped(stored, cap)
    if (!inflated.ok) return inflated.tooLarge ? { ok: false, problem: 'inflated_too_large', detail: name } : corrupt(`entry ${name} does not inflate: ${inflated.detail}`)
    data = inflated.data
  } else {
    return corrupt(`entry ${name} uses compression method ${entry.method}, which is not supported`)
  }
  if (data.length !== entry.declaredSize) return corrupt(`entry ${name} declares ${entry.declaredSize} bytes but holds ${data.length}`)
  if (crc32(data) !== entry.crc) return corrupt(`entry ${name} fails its CRC check`)
  return { ok: true, data }
}

/**
 * The entries whose names `include` accepts, inflated. Fails as soon as the running total of
 * inflated bytes passes `maxInflatedBytes`: the inflater is stopped at that point, so memory
 * stays bounded by the budget whatever the archive declares.
 */
export const readZipEntries = async (
  bytes: Uint8Array,
  { maxInflatedBytes, include }: { maxInflatedBytes: number; include: (name: string) => boolean },
): Promise<ZipRead> => {
  const directory = readZipDirectory(bytes)
  if (!directory.ok) return corrupt(directory.detail)
  const entries: ZipEntry[] = []
  const seen = new Set<string>()
  let inflated = 0
  for (const entry of directory.entries) {
    if (!include(entry.name)) continue
    if (entry.encrypted) return { ok: false, problem: 'encrypted', detail: `entry ${entry.name} is encrypted` }
    if (seen.has(entry.name)) return corrupt(`entry ${entry.name} appears twice`)
    seen.add(entry.name)
    const read = await inflateZipEntry(bytes, directory.directoryOffset, entry, { cap: maxInflatedBytes - inflated })
    if (!read.ok) return read
    inflated += read.data.length
    entries.push({ name: entry.name, data: read.data })
  }
  return { ok: true, entries }
}
/** An archive of stored (uncompressed) entries, UTF-8 names, a fixed MS-DOS date and time. */
export const writeStoredZip = (
  entries: ReadonlyArray<{ readonly name: string; readonly data: Uint8Array | string }>,
  { dosDate = 0, dosTime = 0 }: { dosDate?: number; dosTime?: number } = {},
): Buffer => {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8')
    const data = typeof entry.data === 'string' ? Buffer.from(entry.data, 'utf8') : Buffer.from(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength)
    const crc = crc32(data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(LOCAL, 0)
    local.writeUInt16LE(20, 4) // version needed
    local.writeUInt16LE(0x0800, 6) // UTF-8 names
    local.writeUInt16LE(0, 8) // stored
    local.writeUInt16LE(dosTime, 10)
    local.writeUInt16LE(dosDate, 12)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(data.length, 18)
    local.writeUInt32LE(data.length, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(0, 28)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(CENTRAL, 0)
    central.writeUInt16LE(20, 4) // version made by
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(0, 10)
    central.writeUInt16LE(dosTime, 12)
    central.writeUInt16LE(dosDate, 14)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(data.length, 20)
    central.writeUInt32LE(data.length, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, data)
    centrals.push(central, name)
    offset += local.length + name.length + data.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(EOCD, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}
