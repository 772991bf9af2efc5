// A writer of small, valid PDFs (one Helvetica text object per page, optional RC4 encryption),
// byte for byte reproducible: the fixtures and the sample PDF are built with it.
import { createHash } from 'node:crypto'


export interface PdfPage {
  /** Lines of text, top to bottom; '' is a blank line. Characters must be in WinAnsiEncoding. */
  readonly lines: ReadonlyArray<string>
}

export interface PdfOptions {
  readonly title?: string
  /** Encrypt with the standard security handler (RC4 40-bit, revision 2) and this user password. */
  readonly userPassword?: string
  readonly ownerPassword?: string
}

// WinAnsiEncoding bytes for the non-ASCII characters the samples use.
const WIN_ANSI: Readonly<Record<string, number>> = {
  '’': 0x92, '‘': 0x91, '“': 0x93, '”': 0x94, '–': 0x96, '—': 0x97, '•': 0x95, '…': 0x85,
  'é': 0xe9, 'è': 0xe8, 'ï': 0xef, 'ü': 0xfc, 'ö': 0xf6, 'ä': 0xe4, 'ç': 0xe7, '×': 0xd7, '§': 0xa7,
}

const winAnsiBytes = (text: string): number[] =>
  Array.from(text, (ch) => {
    const code = ch.codePointAt(0) ?? 0
    if (code >= 0x20 && code < 0x7f) return code
    const mapped = WIN_ANSI[ch]
    if (mapped === undefined) throw new Error(`character ${JSON.stringify(ch)} is not in the PDF sample encoding`)
    return mapped
  })

/** A PDF literal string body: parentheses and backslashes escaped, non-ASCII as octal. */
const pdfLiteral = (bytes: ReadonlyArray<number>): string =>
  bytes
    .map((b) =>
      b === 0x28 || b === 0x29 || b === 0x5c
        ? `\\${String.fromCharCode(b)}`
        : b >= 0x20 && b < 0x7f
          ? String.fromCharCode(b)
          : `\\${b.toString(8).padStart(3, '0')}`,
    )
    .join('')

const PAGE_WIDTH = 612
const PAGE_HEIGHT = 792
const FONT_SIZE = 11
const LEADING = 15

const contentStream = (page: PdfPage): string => {
  const ops = [`BT /F1 ${FONT_SIZE} Tf ${LEADING} TL 72 ${PAGE_HEIGHT - 72} Td`]
  page.lines.forEach((line, i) => {
    if (i > 0) ops.push('T*')
    if (line !== '') ops.push(`(${pdfLiteral(winAnsiBytes(line))}) Tj`)
  })
  ops.push('ET')
  return `${ops.join('\n')}\n`
}

const PASSWORD_PADDING = Buffer.from(
  '28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a',
  'hex',
)
const md5 = (...parts: ReadonlyArray<Uint8Array>): Buffer => {
  const hash = createHash('md5')
  for (const part of parts) hash.update(part)
  return hash.digest()
}
const padPassword = (password: string): Buffer =>
  Buffer.concat([Buffer.from(password, 'latin1'), PASSWORD_PADDING]).subarray(0, 32)

// RC4 is not in OpenSSL 3's default provider, so node:crypto may refuse it; it is a few lines.
const rc4 = (key: Uint8Array, data: Uint8Array): Buffer => {
  const s = Array.from({ length: 256 }, (_, i) => i)
  let j = 0
  for (let i = 0; i < 256; i++) {
    j = (j + (s[i] ?? 0) + (key[i % key.length] ?? 0)) & 0xff
    ;[s[i], s[j]] = [s[j] ?? 0, s[i] ?? 0]
  }
  const out = Buffer.alloc(data.length)
  let i = 0
  j = 0
  for (let n = 0; n < data.length; n++) {
    i = (i + 1) & 0xff
    j = (j + (s[i] ?? 0)) & 0xff
    ;[s[i], s[j]] = [s[j] ?? 0, s[i] ?? 0]
    out[n] = (data[n] ?? 0) ^ (s[((s[i] ?? 0) + (s[j] ?? 0)) & 0xff] ?? 0)
  }
  return out
}

interface Security {
  readonly o: Buffer
  readonly u: Buffer
  readonly p: number
  readonly fileKey: Buffer
}

/** PDF 1.7 §7.6.3, algorithms 2–4 (revision 2, 40-bit key). */
const standardSecurity = (userPassword: string, ownerPassword: string, fileId: Buffer): Security => {
  const p = -44 // print and copy denied; the value only has to be consistent
  const ownerKey = md5(padPassword(ownerPassword)).subarray(0, 5)
  const o = rc4(ownerKey, padPassword(userPassword))
  const pBytes = Buffer.alloc(4)
  pBytes.writeInt32LE(p)
  const fileKey = md5(padPassword(userPassword), o, pBytes, fileId).subarray(0, 5)
  const u = rc4(fileKey, PASSWORD_PADDING)
  return { o, u, p, fileKey }
}

const objectKey = (fileKey: Buffer, objectNumber: number): Buffer => {
  const suffix = Buffer.from([objectNumber & 0xff, (objectNumber >> 8) & 0xff, (objectNumber >> 16) & 0xff, 0, 0])
  return md5(fileKey, suffix).subarray(0, Math.min(fileKey.length + 5, 16))
}

const hex = (bytes: Uint8Array): string => `<${Buffer.from(bytes).toString('hex')}>`

/** A small, valid PDF: one Helvetica text object per page, correct xref offsets. */
export const buildPdf = (pages: ReadonlyArray<PdfPage>, options: PdfOptions = {}): Buffer => {
  const title = options.title ?? 'Untitled'
  // A fixed file id keeps the output reproducible.
  const fileId = md5(Buffer.from(`knowagent sample: ${title}`, 'utf8'))
  const security =
    options.userPassword === undefined
      ? undefined
      : standardSecurity(options.userPassword, options.ownerPassword ?? `${options.userPassword}-owner`, fileId)

  // Object numbers: 1 catalog, 2 pages, 3 font, 4 info, 5 encrypt (if any), then page/content pairs.
  const firstPage = security === undefined ? 5 : 6
  const pageNumbers = pages.map((_, i) => firstPage + i * 2)
  const encryptString = (objectNumber: number, bytes: Buffer): string =>
    security === undefined ? `(${pdfLiteral([...bytes])})` : hex(rc4(objectKey(security.fileKey, objectNumber), bytes))
  const encryptStream = (objectNumber: number, bytes: Buffer): Buffer =>
    security === undefined ? bytes : rc4(objectKey(security.fileKey, objectNumber), bytes)

  const objects = new Map<number, Buffer>()
  const put = (n: number, body: string | Buffer): void => {
    objects.set(n, typeof body === 'string' ? Buffer.from(body, 'latin1') : body)
  }
  put(1, '<< /Type /Catalog /Pages 2 0 R >>')
  put(2, `<< /Type /Pages /Kids [${pageNumbers.map((n) => `${n} 0 R`).join(' ')}] /Count ${pages.length} >>`)
  put(3, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>')
  put(4, `<< /Title ${encryptString(4, Buffer.from(winAnsiBytes(title)))} /Producer (knowagent make-sample-binaries) >>`)
  if (security !== undefined) {
    put(5, `<< /Filter /Standard /V 1 /R 2 /O ${hex(security.o)} /U ${hex(security.u)} /P ${security.p} >>`)
  }
  pages.forEach((page, i) => {
    const pageNumber = pageNumbers[i] ?? 0
    const contentNumber = pageNumber + 1
    put(
      pageNumber,
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] ` +
        `/Resources << /Font << /F1 3 0 R >> >> /Contents ${contentNumber} 0 R >>`,
    )
    const stream = encryptStream(contentNumber, Buffer.from(contentStream(page), 'latin1'))
    put(
      contentNumber,
      Buffer.concat([
        Buffer.from(`<< /Length ${stream.length} >>\nstream\n`, 'latin1'),
        stream,
        Buffer.from('\nendstream', 'latin1'),
      ]),
    )
  })

  const count = Math.max(...objects.keys()) + 1
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')]
  let length = chunks[0]?.length ?? 0
  const offsets: number[] = new Array<number>(count).fill(0)
  for (let n = 1; n < count; n++) {
    const body = objects.get(n)
    if (body === undefined) throw new Error(`PDF object ${n} missing`)
    offsets[n] = length
    const chunk = Buffer.concat([Buffer.from(`${n} 0 obj\n`, 'latin1'), body, Buffer.from('\nendobj\n', 'latin1')])
    chunks.push(chunk)
    length += chunk.length
  }
  const xref = [
    'xref',
    `0 ${count}`,
    '0000000000 65535 f ',
    ...offsets.slice(1).map((offset) => `${String(offset).padStart(10, '0')} 00000 n `),
  ].join('\n')
  const trailer =
    `trailer\n<< /Size ${count} /Root 1 0 R /Info 4 0 R /ID [${hex(fileId)} ${hex(fileId)}]` +
    `${security === undefined ? '' : ' /Encrypt 5 0 R'} >>\nstartxref\n${length}\n%%EOF\n`
  chunks.push(Buffer.from(`${xref}\n${trailer}`, 'latin1'))
  return Buffer.concat(chunks)
}

/** Word-wraps paragraphs (separated by '') to lines of at most `width` characters. */
export const wrapLines = (paragraphs: ReadonlyArray<string>, width = 88): string[] => {
  const lines: string[] = []
  for (const paragraph of paragraphs) {
    if (paragraph === '') {
      lines.push('')
      continue
    }
    let line = ''
    for (const word of paragraph.split(/\s+/)) {
      if (line !== '' && line.length + 1 + word.length > width) {
        lines.push(line)
        line = word
      } else line = line === '' ? word : `${line} ${word}`
    }
    lines.push(line)
  }
  return lines
}

/** Splits lines into pages of at most `perPage` lines, preferring to break at a blank line. */
export const paginate = (lines: ReadonlyArray<string>, perPage = 44): PdfPage[] => {
  const pages: PdfPage[] = []
  let rest = [...lines]
  while (rest.length > 0) {
    let cut = Math.min(perPage, rest.length)
    if (cut < rest.length) {
      const blank = rest.lastIndexOf('', cut)
      if (blank > perPage / 2) cut = blank
    }
    const page = rest.slice(0, cut)
    rest = rest.slice(cut)
    while (rest[0] === '') rest = rest.slice(1)
    pages.push({ lines: page })
  }
  return pages
}

