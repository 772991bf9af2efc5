// Writers for the binary test fixtures (tests/fixtures/documents/) and the binary sample
// documents (samples/), byte for byte the same on every run: no timestamps, no random ids, zip
// entries stored rather than deflated (deflate output varies between zlib builds). Tests build
// documents in memory with them; scripts/make-sample-binaries.ts writes or checks the files.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { crc32 } from 'node:zlib'
import { writeStoredZip } from '../../src/effects/workspace/parse/zip.ts'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

// ---------------------------------------------------------------------------------------------
// PDF

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

// ---------------------------------------------------------------------------------------------
// ZIP (stored entries) and DOCX

export interface ZipEntry {
  readonly name: string
  readonly data: Uint8Array | string
}

// 2026-01-01 00:00:00 in MS-DOS format, so archives do not depend on the clock.
const DOS_DATE = ((2026 - 1980) << 9) | (1 << 5) | 1

export const buildZip = (entries: ReadonlyArray<ZipEntry>): Buffer => writeStoredZip(entries, { dosDate: DOS_DATE, dosTime: 0 })

export type DocxBlock =
  | { readonly kind: 'heading'; readonly level: 1 | 2; readonly text: string }
  | { readonly kind: 'paragraph'; readonly text: string }
  | { readonly kind: 'bullet'; readonly text: string }
  | { readonly kind: 'table'; readonly rows: ReadonlyArray<ReadonlyArray<string>> }

const xmlEscape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

const run = (text: string): string => `<w:r><w:t xml:space="preserve">${xmlEscape(text)}</w:t></w:r>`
const paragraph = (text: string, style?: string): string =>
  `<w:p>${style === undefined ? '' : `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>`}${run(text)}</w:p>`

const blockXml = (block: DocxBlock): string => {
  switch (block.kind) {
    case 'heading':
      return paragraph(block.text, `Heading${block.level}`)
    case 'paragraph':
      return paragraph(block.text)
    case 'bullet':
      return paragraph(block.text, 'ListBullet')
    case 'table':
      return `<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/></w:tblPr>${block.rows
        .map((row) => `<w:tr>${row.map((cell) => `<w:tc>${paragraph(cell)}</w:tc>`).join('')}</w:tr>`)
        .join('')}</w:tbl>`
  }
}

const W_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main'
const headingStyle = (id: string, name: string, size: number): string =>
  `<w:style w:type="paragraph" w:styleId="${id}"><w:name w:val="${name}"/><w:basedOn w:val="Normal"/>` +
  `<w:pPr><w:keepNext/></w:pPr><w:rPr><w:b/><w:sz w:val="${size}"/></w:rPr></w:style>`

/** A minimal but complete WordprocessingML package that Word, LibreOffice and mammoth open. */
export const buildDocx = (blocks: ReadonlyArray<DocxBlock>, { title }: { title: string }): Buffer =>
  buildZip([
    {
      name: '[Content_Types].xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
        '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>' +
        '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>' +
        '</Types>',
    },
    {
      name: '_rels/.rels',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>' +
        '</Relationships>',
    },
    {
      name: 'docProps/core.xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ' +
        'xmlns:dc="http://purl.org/dc/elements/1.1/">' +
        `<dc:title>${xmlEscape(title)}</dc:title><dc:creator>knowagent make-sample-binaries</dc:creator>` +
        '</cp:coreProperties>',
    },
    {
      name: 'word/_rels/document.xml.rels',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>' +
        '</Relationships>',
    },
    {
      name: 'word/styles.xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        `<w:styles xmlns:w="${W_NS}">` +
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>' +
        headingStyle('Heading1', 'heading 1', 32) +
        headingStyle('Heading2', 'heading 2', 26) +
        '<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:basedOn w:val="Normal"/>' +
        '<w:pPr><w:ind w:left="360" w:hanging="360"/></w:pPr></w:style>' +
        '<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/><w:tblPr><w:tblBorders>' +
        '<w:top w:val="single" w:sz="4"/><w:left w:val="single" w:sz="4"/><w:bottom w:val="single" w:sz="4"/>' +
        '<w:right w:val="single" w:sz="4"/><w:insideH w:val="single" w:sz="4"/><w:insideV w:val="single" w:sz="4"/>' +
        '</w:tblBorders></w:tblPr></w:style>' +
        '</w:styles>',
    },
    {
      name: 'word/document.xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
        `<w:document xmlns:w="${W_NS}"><w:body>${blocks.map(blockXml).join('')}` +
        '<w:sectPr><w:pgSz w:w="12240" w:h="15840"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440"/></w:sectPr>' +
        '</w:body></w:document>',
    },
  ])

// ---------------------------------------------------------------------------------------------
// Content

/** The fixture PDF's pages. parse.test.ts asserts the extracted text line for line. */
export const FIXTURE_PDF_PAGES: ReadonlyArray<PdfPage> = [
  {
    lines: [
      'Knowagent fixture PDF, page one.',
      'The quick brown fox jumps over the lazy dog.',
      '',
      'Parentheses (like these) and a backslash \\ survive.',
      'Accents survive too: naïve café in Zürich.',
    ],
  },
  { lines: ['Page two begins here.', 'It is the last page of the fixture.'] },
]

export const FIXTURE_DOCX_BLOCKS: ReadonlyArray<DocxBlock> = [
  { kind: 'heading', level: 1, text: 'Fixture document' },
  { kind: 'paragraph', text: 'The first paragraph mentions compaction and the context window.' },
  { kind: 'bullet', text: 'A bullet with ümlauts, 中文字符 and an emoji 😀.' },
  { kind: 'table', rows: [['Setting', 'Value'], ['window', '128000']] },
  { kind: 'paragraph', text: 'Closing paragraph & <angle brackets>.' },
]

// The sample documents' prose lives beside the corpus, in samples/.sources/ (a hidden folder, so
// the demo import skips it): plain paragraphs for the PDF, a Markdown subset for the DOCX.
const readSource = (name: string): string => readFileSync(join(ROOT, 'samples', '.sources', name), 'utf8')

/** Paragraphs separated by blank lines → lines for `wrapLines` ('' between paragraphs). */
export const paragraphsOf = (text: string): string[] =>
  text
    .trim()
    .split(/\n{2,}/)
    .flatMap((paragraph, i) => (i === 0 ? [paragraph] : ['', paragraph]))

/** `#`/`##` headings, `- ` bullets, `| a | b |` table rows, other paragraphs; blocks separated by blank lines. */
export const docxBlocksOf = (markdown: string): DocxBlock[] =>
  markdown
    .trim()
    .split(/\n{2,}/)
    .map((block): DocxBlock => {
      const heading = /^(#{1,2}) (.*)$/.exec(block)
      if (heading) return { kind: 'heading', level: heading[1]!.length as 1 | 2, text: heading[2]! }
      if (block.startsWith('- ')) return { kind: 'bullet', text: block.slice(2) }
      if (block.startsWith('|')) {
        return { kind: 'table', rows: block.split('\n').map((row) => row.replace(/^\|\s*|\s*\|$/g, '').split(/\s*\|\s*/)) }
      }
      return { kind: 'paragraph', text: block }
    })

// ---------------------------------------------------------------------------------------------
// Files

/** A tiny valid PNG (1×1, one grey pixel): binary data with NUL bytes in its first bytes. */
const tinyPng = (): Buffer => {
  const chunk = (type: string, data: Buffer): Buffer => {
    const length = Buffer.alloc(4)
    length.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([length, body, crc])
  }
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]) // 1×1, 8-bit greyscale
  // zlib stream of the single scanline [filter 0, value 0x80], stored (no compression).
  const raw = Buffer.from([0x00, 0x80])
  const adler = Buffer.alloc(4)
  adler.writeUInt32BE(((1 + 0x80) % 65521) + (((1 + 1 + 0x80) % 65521) << 16))
  const idat = Buffer.concat([Buffer.from([0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff]), raw, adler])
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/** Every generated file, relative to the project root. */
export const generatedFiles = (): ReadonlyArray<{ path: string; bytes: Buffer }> => {
  const fixturePdf = buildPdf(FIXTURE_PDF_PAGES, { title: 'Knowagent fixture' })
  const fixtureDocx = buildDocx(FIXTURE_DOCX_BLOCKS, { title: 'Fixture document' })
  return [
    { path: 'tests/fixtures/documents/sample.pdf', bytes: fixturePdf },
    {
      path: 'tests/fixtures/documents/encrypted.pdf',
      bytes: buildPdf([{ lines: ['This text is only readable with the password.'] }], {
        title: 'Encrypted fixture',
        userPassword: 'knowagent',
      }),
    },
    // The header and the first objects, then nothing: no page tree, no xref, no trailer.
    { path: 'tests/fixtures/documents/corrupt.pdf', bytes: fixturePdf.subarray(0, 120) },
    { path: 'tests/fixtures/documents/sample.docx', bytes: fixtureDocx },
    // Cut in the middle: the zip's central directory is gone.
    { path: 'tests/fixtures/documents/corrupt.docx', bytes: fixtureDocx.subarray(0, Math.floor(fixtureDocx.length / 2)) },
    {
      path: 'tests/fixtures/documents/bom-crlf.txt',
      bytes: Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('First line, Windows style.\r\nSecond line: 知识库.\r\nA lone carriage return\rends here.\r\n', 'utf8'),
      ]),
    },
    {
      path: 'tests/fixtures/documents/windows-1252.txt',
      bytes: Buffer.from('Caf\xe9 cr\xe8me, saved in a legacy code page.\n', 'latin1'),
    },
    { path: 'tests/fixtures/documents/pixel.png', bytes: tinyPng() },
    { path: 'tests/fixtures/documents/blob.bin', bytes: Buffer.concat([tinyPng(), Buffer.from('trailing text after binary', 'utf8')]) },
    {
      path: 'samples/guides/compile-pipeline.pdf',
      bytes: buildPdf(paginate(wrapLines(paragraphsOf(readSource('compile-pipeline.txt')))), { title: 'The knowagent compile pipeline' }),
    },
    {
      path: 'samples/notes/decision-log-2026-q1.docx',
      bytes: buildDocx(docxBlocksOf(readSource('decision-log-2026-q1.md')), { title: 'Decision log, first quarter of 2026' }),
    },
  ]
}

