import { describe, expect, it } from 'vitest'
import { DOCX_MIME, OCTET_STREAM, essenceOf, extensionOf, isTextMime, mimeFromName } from './mime.ts'

describe('mimeFromName', () => {
  it.each([
    ['notes.md', 'text/markdown'],
    ['NOTES.MARKDOWN', 'text/markdown'],
    ['readme.txt', 'text/plain'],
    ['page.html', 'text/html'],
    ['page.HTM', 'text/html'],
    ['config.json', 'application/json'],
    ['table.csv', 'text/csv'],
    ['paper.pdf', 'application/pdf'],
    ['report.docx', DOCX_MIME],
    ['legacy.doc', 'application/msword'],
    ['photo.jpeg', 'image/jpeg'],
    ['icon.svg', 'image/svg+xml'],
    ['archive.tar.gz', 'application/gzip'],
    ['kb://users/demo/samples/guides/knowagent-guide.md', 'text/markdown'],
    ['dir.v2/file.csv', 'text/csv'],
    ['.overview.md', 'text/markdown'],
  ])('%s → %s', (name, mime) => {
    expect(mimeFromName(name)).toBe(mime)
  })

  it.each(['Makefile', '.gitignore', 'strange.xyz', 'trailing.', 'dir.v2/noext', ''])(
    '%j has no known type and is application/octet-stream',
    (name) => {
      expect(mimeFromName(name)).toBe(OCTET_STREAM)
    },
  )
})

describe('extensionOf', () => {
  it.each([
    ['a.PDF', 'pdf'],
    ['a.tar.gz', 'gz'],
    ['.gitignore', ''],
    ['.abstract.md', 'md'],
    ['no-extension', ''],
    ['dir.d/file', ''],
    ['name.', ''],
  ])('%s → %j', (name, extension) => {
    expect(extensionOf(name)).toBe(extension)
  })
})

describe('essenceOf', () => {
  it.each([
    ['Text/HTML; charset=UTF-8', 'text/html'],
    [' application/json ', 'application/json'],
    ['not a type', ''],
    ['', ''],
  ])('%j → %j', (mime, essence) => {
    expect(essenceOf(mime)).toBe(essence)
  })
})

describe('isTextMime', () => {
  it.each(['text/plain', 'text/csv; charset=utf-8', 'application/json', 'application/ld+json', 'image/svg+xml', 'application/yaml'])(
    '%s is text',
    (mime) => {
      expect(isTextMime(mime)).toBe(true)
    },
  )
  it.each(['application/pdf', DOCX_MIME, 'image/png', OCTET_STREAM, ''])('%j is not text', (mime) => {
    expect(isTextMime(mime)).toBe(false)
  })
})
