// Writers for the binary test fixtures (tests/fixtures/documents/) and the binary sample
// documents (samples/), byte for byte the same on every run: no timestamps, no random ids, zip
// entries stored rather than deflated (deflate output varies between zlib builds). Tests build
// documents in memory with them; scripts/make-sample-binaries.ts writes or checks the files.
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { crc32 } from 'node:zlib'
import { writeStoredZip } from '../../src/effects/workspace/parse/zip.ts'
import { buildPdf, paginate, wrapLines, type PdfPage } from './pdf-writer.ts'

export { buildPdf, paginate, wrapLines, type PdfOptions, type PdfPage } from './pdf-writer.ts'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

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

