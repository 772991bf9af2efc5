// Decompression bombs, built in memory in a few milliseconds (never committed): a small file
// whose compressed data unpacks to `inflatedBytes` copies of one byte.
import { constants, crc32, deflateRawSync } from 'node:zlib'

const MiB = 1024 * 1024

const flushedBlock = (length: number, byte: number): Buffer =>
  // A sync flush ends the block on a byte boundary without marking it final, so copies of it
  // can be concatenated: each starts with a literal and then copies from one byte back.
  deflateRawSync(Buffer.alloc(length, byte), { level: 9, finishFlush: constants.Z_SYNC_FLUSH })

const FINAL_EMPTY_BLOCK = Buffer.from([0x03, 0x00])

export interface BombShape {
  /** How many copies of `byte` follow the prefix. */
  readonly inflatedBytes: number
  readonly byte?: number
  readonly prefix?: Uint8Array
  readonly suffix?: Uint8Array
}

/** Raw deflate data (no header) that inflates to `prefix`, `inflatedBytes` bytes of `byte`, `suffix`. */
export const deflateBomb = ({ inflatedBytes, byte = 0x20, prefix, suffix }: BombShape): Buffer => {
  const whole = Math.floor(inflatedBytes / MiB)
  const rest = inflatedBytes % MiB
  const block = whole > 0 ? flushedBlock(MiB, byte) : Buffer.alloc(0)
  const parts: Buffer[] = new Array<Buffer>(whole).fill(block)
  if (prefix !== undefined && prefix.length > 0) parts.unshift(deflateRawSync(prefix, { finishFlush: constants.Z_SYNC_FLUSH }))
  if (rest > 0) parts.push(flushedBlock(rest, byte))
  if (suffix !== undefined && suffix.length > 0) parts.push(deflateRawSync(suffix, { finishFlush: constants.Z_SYNC_FLUSH }))
  parts.push(FINAL_EMPTY_BLOCK)
  return Buffer.concat(parts)
}

const adler32 = ({ inflatedBytes, byte = 0x20, prefix = new Uint8Array(), suffix = new Uint8Array() }: BombShape): number => {
  let a = 1n
  let b = 0n
  const add = (bytes: Uint8Array): void => {
    for (const value of bytes) {
      a = (a + BigInt(value)) % 65521n
      b = (b + a) % 65521n
    }
  }
  add(prefix)
  // Then `n` copies of `c`, in closed form.
  const n = BigInt(inflatedBytes)
  const c = BigInt(byte)
  b = (b + n * a + (c * n * (n + 1n)) / 2n) % 65521n
  a = (a + n * c) % 65521n
  add(suffix)
  return Number((b << 16n) | a)
}

/** The same as a zlib stream (header and Adler-32), as PDF's FlateDecode expects. */
export const zlibBomb = (shape: BombShape): Buffer => {
  const trailer = Buffer.alloc(4)
  trailer.writeUInt32BE(adler32(shape))
  return Buffer.concat([Buffer.from([0x78, 0xda]), deflateBomb(shape), trailer])
}

const crc32Of = ({ inflatedBytes, byte = 0x20, prefix = new Uint8Array(), suffix = new Uint8Array() }: BombShape): number => {
  const chunk = Buffer.alloc(Math.min(inflatedBytes, MiB), byte)
  let crc = crc32(prefix)
  for (let done = 0; done < inflatedBytes; done += chunk.length) crc = crc32(chunk.subarray(0, Math.min(chunk.length, inflatedBytes - done)), crc)
  return crc32(suffix, crc)
}

/** A one-page PDF whose content stream (FlateDecode) inflates to `inflatedBytes`. */
export const pdfBomb = ({ inflatedBytes }: { inflatedBytes: number }): Buffer => {
  // The page shows one word; the rest of the stream is spaces (whitespace between operators).
  const content = zlibBomb({ inflatedBytes, byte: 0x20, prefix: Buffer.from('BT /F1 11 Tf 72 700 Td (bomb) Tj ET\n', 'latin1') })
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')]
  let length = chunks[0]!.length
  const offsets: number[] = []
  const push = (chunk: Buffer): void => {
    chunks.push(chunk)
    length += chunk.length
  }
  objects.forEach((body, i) => {
    offsets.push(length)
    push(Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`, 'latin1'))
  })
  offsets.push(length)
  push(Buffer.from(`5 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'))
  push(content)
  push(Buffer.from('\nendstream\nendobj\n', 'latin1'))
  const xref = ['xref', '0 6', '0000000000 65535 f ', ...offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n `)].join('\n')
  push(Buffer.from(`${xref}\ntrailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1'))
  return Buffer.concat(chunks)
}

export interface BombEntry {
  readonly name: string
  /** Stored text, or a deflated bomb whose size the archive states as `declaredBytes` (default: the truth). */
  readonly data: string | (BombShape & { readonly declaredBytes?: number })
}

/** A zip whose deflated entries may lie about their size (the central directory declares `declaredBytes`). */
export const zipWithBombs = (entries: ReadonlyArray<BombEntry>): Buffer => {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8')
    const bomb = typeof entry.data === 'string' ? undefined : entry.data
    const body = bomb === undefined ? Buffer.from(entry.data as string, 'utf8') : deflateBomb(bomb)
    const trueSize = bomb === undefined ? body.length : (bomb.prefix?.length ?? 0) + bomb.inflatedBytes + (bomb.suffix?.length ?? 0)
    const size = bomb?.declaredBytes ?? trueSize
    const crc = bomb === undefined ? crc32(body) : crc32Of(bomb)
    const method = bomb === undefined ? 0 : 8
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6)
    local.writeUInt16LE(method, 8)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(method, 10)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(body.length, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, body)
    centrals.push(central, name)
    offset += local.length + name.length + body.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}

const W_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main'

/** A DOCX (just the parts mammoth needs) whose main document part is a bomb: one word, then spaces. */
export const docxBomb = ({ inflatedBytes, declaredBytes }: { inflatedBytes: number; declaredBytes?: number }): Buffer =>
  zipWithBombs([
    {
      name: '[Content_Types].xml',
      data:
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    },
    {
      name: '_rels/.rels',
      data:
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    },
    {
      name: 'word/document.xml',
      data: {
        prefix: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="${W_NS}"><w:body><w:p><w:r><w:t>bomb</w:t></w:r></w:p>`),
        inflatedBytes,
        suffix: Buffer.from('</w:body></w:document>'),
        ...(declaredBytes === undefined ? {} : { declaredBytes }),
      },
    },
  ])
