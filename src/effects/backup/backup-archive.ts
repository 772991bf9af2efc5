// The backup file's format: one stream, written front to back, never held in memory.
//
//   "KNOWAGENT-BACKUP\n"                       the magic line
//   record*                                    [kind: 1 byte][length: u32 big-endian][payload]
//     H  header   JSON (BackupHeader)          first
//     E  entry    JSON { name }                an entry starts (a table's COPY text, the secret)
//     D  data     a piece of the entry's gzip stream
//     Z  end      (empty)                      the entry is complete
//     M  manifest JSON (BackupManifest)        every entry's rows, bytes and sha-256
//     S  trailer  32 bytes: the sha-256 of every byte before this record
//
// A file whose last record is not a valid trailer was not finished (a backup killed mid-way, a
// copy cut short) and is refused before anything is read; a changed byte anywhere fails the
// whole file's checksum, and each entry's own sha-256 (over its uncompressed bytes) and row count
// are checked against the manifest as it is read.
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { open } from 'node:fs/promises'
import { createReadStream } from 'node:fs'
import { Transform, type Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip, createGzip } from 'node:zlib'

export const BACKUP_FORMAT = 1
const MAGIC = Buffer.from('KNOWAGENT-BACKUP\n')
const RECORD_HEADER = 5
const TRAILER_BYTES = RECORD_HEADER + 32
/** JSON records (header, entry, manifest) and data pieces are far smaller; a larger length is damage. */
const MAX_RECORD = 64 * 1024 * 1024

export interface BackupHeader {
  readonly format: number
  readonly knowagentVersion: string
  readonly createdAt: string
  /** The last migration applied to the database backed up: a restore migrates up to it. */
  readonly lastMigration: string
  readonly postgresVersion: string
  /** pg-boss's schema version (its queue's jobs in flight are an entry), or null without a queue. */
  readonly queueSchemaVersion: number | null
  /** Where the server secret came from: the data dir's file (then it is the `secret` entry) or KNOWAGENT_SECRET. */
  readonly secret: { readonly source: 'file' | 'environment'; readonly fingerprint: string }
}

export interface ManifestEntry {
  readonly name: string
  /** COPY text rows (its lines); 0 for the secret. */
  readonly rows: number
  /** Uncompressed bytes. */
  readonly bytes: number
  readonly sha256: string
  /** A table's columns, in the order of its COPY text. */
  readonly columns?: ReadonlyArray<string> | undefined
}

export interface BackupManifest {
  readonly entries: ReadonlyArray<ManifestEntry>
}

/** The file is not a complete, unchanged knowagent backup; the message says what is wrong. */
export class BackupFileError extends Error {
  override readonly name = 'BackupFileError'
}

function countLines(chunk: Buffer): number {
  let lines = 0
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++
  return lines
}

export interface ArchiveWriter {
  readonly header: (header: BackupHeader) => Promise<void>
  /** Streams `source` (never held whole) into the archive as one entry; resolves with its facts. */
  readonly entry: (name: string, source: Readable, columns?: ReadonlyArray<string>) => Promise<ManifestEntry>
  /** The manifest and the trailer; the output is then complete (the caller ends and syncs it). */
  readonly finish: () => Promise<BackupManifest>
}

export function archiveWriter(output: Writable): ArchiveWriter {
  const whole = createHash('sha256')
  const entries: ManifestEntry[] = []
  const write = async (bytes: Buffer) => {
    whole.update(bytes)
    if (!output.write(bytes)) await once(output, 'drain')
  }
  const record = async (kind: string, payload: Buffer) => {
    const head = Buffer.alloc(RECORD_HEADER)
    head.write(kind, 0, 'latin1')
    head.writeUInt32BE(payload.length, 1)
    await write(head)
    if (payload.length > 0) await write(payload)
  }
  const json = (kind: string, value: unknown) => record(kind, Buffer.from(JSON.stringify(value)))
  let started: Promise<void> | undefined
  const start = () => (started ??= write(MAGIC))
  return {
    header: async (header) => {
      await start()
      await json('H', header)
    },
    entry: async (name, source, columns) => {
      await start()
      await json('E', { name })
      const hash = createHash('sha256')
      let bytes = 0
      let rows = 0
      await pipeline(
        source,
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            hash.update(chunk)
            bytes += chunk.length
            rows += countLines(chunk)
            yield chunk
          }
        },
        createGzip({ level: 3 }),
        async (compressed: AsyncIterable<Buffer>) => {
          for await (const piece of compressed) await record('D', piece)
        },
      )
      await record('Z', Buffer.alloc(0))
      const entry: ManifestEntry = { name, rows, bytes, sha256: hash.digest('hex'), ...(columns ? { columns: [...columns] } : {}) }
      entries.push(entry)
      return entry
    },
    finish: async () => {
      await start()
      const manifest: BackupManifest = { entries }
      await json('M', manifest)
      const digest = whole.copy().digest()
      const head = Buffer.alloc(RECORD_HEADER)
      head.write('S', 0, 'latin1')
      head.writeUInt32BE(digest.length, 1)
      await write(head)
      await write(digest)
      return manifest
    },
  }
}

/** Reads exactly the bytes asked for from a stream of chunks. */
class ByteReader {
  private buffered: Buffer[] = []
  private length = 0
  offset = 0
  private readonly chunks: AsyncIterator<Buffer>
  constructor(chunks: AsyncIterator<Buffer>) {
    this.chunks = chunks
  }
  /** undefined at the end of the stream when nothing of it was read; a short read is `truncated`. */
  async read(count: number, truncated: () => BackupFileError): Promise<Buffer | undefined> {
    while (this.length < count) {
      const next = await this.chunks.next()
      if (next.done) {
        if (this.length === 0) return undefined
        throw truncated()
      }
      this.buffered.push(next.value)
      this.length += next.value.length
    }
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.length)
    const taken = all.subarray(0, count)
    const rest = all.subarray(count)
    this.buffered = rest.length ? [rest] : []
    this.length = rest.length
    this.offset += count
    return taken
  }
}

export interface ArchiveVisitor {
  readonly header?: (header: BackupHeader) => void | Promise<void>
  /**
   * An entry's uncompressed bytes, streamed: `data` must be consumed (or the read stalls). The
   * entry's checksum and lines are compared with the manifest once the manifest is read.
   */
  readonly entry?: (name: string, data: Readable) => Promise<void>
}

function parseJson<T>(payload: Buffer, what: string): T {
  try {
    return JSON.parse(payload.toString('utf8')) as T
  } catch {
    throw new BackupFileError(`damaged: the ${what} is not valid JSON`)
  }
}

/**
 * Checks the trailer and the whole file's checksum, without parsing anything: a file that was
 * not finished or was changed since is refused before a single record is trusted.
 */
export async function verifyWholeFile(file: string): Promise<{ bytes: number }> {
  const handle = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
    throw new BackupFileError(error.code === 'ENOENT' ? `no such file: ${file}` : `cannot read ${file}: ${error.message}`)
  })
  let size: number
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) throw new BackupFileError(`${file} is not a file`)
    size = stat.size
    const head = Buffer.alloc(MAGIC.length)
    await handle.read(head, 0, head.length, 0)
    if (size < MAGIC.length || !head.equals(MAGIC)) throw new BackupFileError(`${file} is not a knowagent backup (it does not start with KNOWAGENT-BACKUP)`)
    const tail = Buffer.alloc(TRAILER_BYTES)
    if (size >= MAGIC.length + TRAILER_BYTES) await handle.read(tail, 0, TRAILER_BYTES, size - TRAILER_BYTES)
    if (size < MAGIC.length + TRAILER_BYTES || tail[0] !== 0x53 || tail.readUInt32BE(1) !== 32) {
      throw new BackupFileError(`incomplete: ${file} has no end record — the backup was interrupted or the file was cut short (${size} bytes)`)
    }
    const expected = tail.subarray(RECORD_HEADER)
    const hash = createHash('sha256')
    if (size > TRAILER_BYTES) await pipeline(createReadStream(file, { start: 0, end: size - TRAILER_BYTES - 1 }), hash)
    if (!hash.digest().equals(expected)) throw new BackupFileError(`damaged: the checksum of ${file} does not match its contents — it was changed or corrupted after it was written`)
  } finally {
    await handle.close()
  }
  return { bytes: size }
}

/**
 * Reads an archive front to back: the header, each entry streamed to `visit.entry`, then the
 * manifest — each entry's sha-256, bytes and lines compared with it — and the trailer. Rejects with
 * a BackupFileError that names what is wrong.
 */
export async function readArchive(input: Readable, visit: ArchiveVisitor = {}): Promise<{ header: BackupHeader; manifest: BackupManifest }> {
  const reader = new ByteReader(input[Symbol.asyncIterator]() as AsyncIterator<Buffer>)
  const whole = createHash('sha256')
  let where = 'its header'
  const truncated = () => new BackupFileError(`truncated: the file ends inside ${where} (at byte ${reader.offset})`)
  const notBackup = () => new BackupFileError('not a knowagent backup (it does not start with KNOWAGENT-BACKUP)')
  const magic = await reader.read(MAGIC.length, notBackup)
  if (!magic?.equals(MAGIC)) throw notBackup()
  whole.update(magic)
  const nextRecord = async (): Promise<{ kind: string; payload: Buffer; head: Buffer }> => {
    const head = await reader.read(RECORD_HEADER, truncated)
    if (!head) throw new BackupFileError(`incomplete: the file ends after ${where}, before its end record`)
    const kind = String.fromCharCode(head[0]!)
    const length = head.readUInt32BE(1)
    if (!'HEDZMS'.includes(kind) || length > MAX_RECORD) throw new BackupFileError(`damaged: an unreadable record at byte ${reader.offset - RECORD_HEADER} (in ${where})`)
    const payload = length ? await reader.read(length, truncated) : Buffer.alloc(0)
    return { kind, payload: payload!, head }
  }

  let header: BackupHeader | undefined
  const seen: ManifestEntry[] = []
  for (;;) {
    const { kind, payload, head } = await nextRecord()
    if (kind === 'S') {
      throw new BackupFileError('damaged: the end record comes before the manifest')
    }
    whole.update(head)
    whole.update(payload)
    if (kind === 'H') {
      if (header) throw new BackupFileError('damaged: two headers')
      header = parseJson<BackupHeader>(payload, 'header')
      if (header.format !== BACKUP_FORMAT) throw new BackupFileError(`format ${header.format} is not one this knowagent reads (it reads format ${BACKUP_FORMAT})`)
      await visit.header?.(header)
    } else if (kind === 'E') {
      if (!header) throw new BackupFileError('damaged: an entry before the header')
      const { name } = parseJson<{ name: string }>(payload, 'entry record')
      where = `entry ${name}`
      seen.push(await readEntry({ name, nextRecord, whole, consume: visit.entry }))
    } else if (kind === 'M') {
      if (!header) throw new BackupFileError('damaged: the manifest before the header')
      where = 'the manifest'
      const manifest = parseJson<BackupManifest>(payload, 'manifest')
      checkAgainstManifest(seen, manifest)
      where = 'the end record'
      const trailer = await nextRecord()
      if (trailer.kind !== 'S' || trailer.payload.length !== 32) throw new BackupFileError('damaged: the manifest is not followed by the end record')
      if (!whole.digest().equals(trailer.payload)) throw new BackupFileError('damaged: the checksum of the file does not match its contents — it was changed or corrupted after it was written')
      const after = await reader.read(1, truncated)
      if (after !== undefined) throw new BackupFileError('damaged: bytes after the end record')
      return { header, manifest }
    } else {
      throw new BackupFileError(`damaged: a ${kind} record outside an entry (at byte ${reader.offset})`)
    }
  }
}

async function readEntry({
  name,
  nextRecord,
  whole,
  consume,
}: {
  name: string
  nextRecord: () => Promise<{ kind: string; payload: Buffer; head: Buffer }>
  whole: ReturnType<typeof createHash>
  consume: ArchiveVisitor['entry']
}): Promise<ManifestEntry> {
  const gunzip = createGunzip()
  const hash = createHash('sha256')
  let bytes = 0
  let rows = 0
  // The consumer reads what gunzip produces; the counting happens on the way.
  const counted = gunzip.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk)
        bytes += chunk.length
        rows += countLines(chunk)
        callback(null, chunk)
      },
    }),
  )
  const consumed = consume
    ? consume(name, counted)
    : (async () => {
        for await (const _ of counted); // read and dropped: only the checksums matter
      })()
  let inflateError: Error | undefined
  gunzip.on('error', (error) => {
    inflateError = error
    counted.destroy(new BackupFileError(`damaged: the data of ${name} does not decompress (${error.message})`))
  })
  // The consumer's failure must stop the feeding too, or a full gunzip would wait for ever.
  let consumerError: unknown
  const consumerDone = consumed.then(
    () => undefined,
    (error: unknown) => {
      consumerError = error
      gunzip.destroy()
    },
  )
  for (;;) {
    const { kind, payload, head } = await nextRecord()
    whole.update(head)
    whole.update(payload)
    if (kind === 'Z') break
    if (kind !== 'D') throw new BackupFileError(`damaged: a ${kind} record inside entry ${name}`)
    if (consumerError !== undefined || inflateError !== undefined) continue
    if (!gunzip.write(payload)) await drained(gunzip, consumerDone)
  }
  if (consumerError === undefined && inflateError === undefined) gunzip.end()
  await consumerDone
  if (inflateError) throw new BackupFileError(`damaged: the data of ${name} does not decompress (${inflateError.message})`)
  if (consumerError !== undefined) throw consumerError
  return { name, rows, bytes, sha256: hash.digest('hex') }
}

/** Waits for `stream` to drain, or to close, or for `unless` (a consumer that stopped reading). */
async function drained(stream: Writable, unless: Promise<unknown>): Promise<void> {
  const stop = new AbortController()
  try {
    await Promise.race([once(stream, 'drain', { signal: stop.signal }), once(stream, 'close', { signal: stop.signal }), unless])
  } catch {
    // the stream's error is recorded by its own listener
  } finally {
    stop.abort()
  }
}

function checkAgainstManifest(seen: ReadonlyArray<ManifestEntry>, manifest: BackupManifest): void {
  if (!Array.isArray(manifest.entries)) throw new BackupFileError('damaged: the manifest lists no entries')
  const listed = new Map(manifest.entries.map((entry) => [entry.name, entry]))
  for (const entry of seen) {
    const expected = listed.get(entry.name)
    if (!expected) throw new BackupFileError(`damaged: entry ${entry.name} is not in the manifest`)
    if (expected.sha256 !== entry.sha256 || expected.bytes !== entry.bytes) throw new BackupFileError(`damaged: the checksum of ${entry.name} does not match the manifest`)
    if (expected.rows !== entry.rows) throw new BackupFileError(`damaged: ${entry.name} has ${entry.rows} rows, the manifest says ${expected.rows}`)
    listed.delete(entry.name)
  }
  const missing = [...listed.keys()]
  if (missing.length) throw new BackupFileError(`damaged: the manifest lists ${missing.join(', ')}, which the file does not hold`)
}
