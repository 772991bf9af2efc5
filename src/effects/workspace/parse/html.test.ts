import { describe, expect, it } from 'vitest'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('HTML', () => {
  it('extracts readable text, without scripts, styles or link targets', async () => {
    const outcome = await parseFixture('page.html')
    expect(outcome).toMatchObject({ ok: true, mime: 'text/html', parser: 'html-to-text' })
    const text = expectText(outcome)
    for (const expected of [
      'Fixture page',
      'Welcome to the fixture',
      'This paragraph has a link and bold text.',
      '* First item',
      '* Second item — 第二项',
      'Entities: & <tag> é',
      'window',
      '128000',
    ]) {
      expect(text).toContain(expected)
    }
    for (const hidden of ['SCRIPT-CONTENT', 'STYLE-CONTENT', 'color: red', 'NOSCRIPT-CONTENT', 'hidden-url']) {
      expect(text).not.toContain(hidden)
    }
    expect(text.startsWith('Fixture page\n\nWelcome to the fixture')).toBe(true)
    expect(text).not.toMatch(/\n{3}/)
  })

  it('reads a fragment without <body>', async () => {
    const bytes = utf8('<p>Hello <script>alert(1)</script><strong>world</strong></p><style>p{}</style>')
    expect(expectText(await parseDocument({ name: 'fragment.html', bytes }))).toBe('Hello world')
  })

  it('honours a declared legacy charset', async () => {
    const bytes = Buffer.from('<html><head><meta charset="windows-1252"></head><body><p>Caf\xe9</p></body></html>', 'latin1')
    expect(expectText(await parseDocument({ name: 'old.htm', bytes }))).toBe('Café')
  })

  it('lets a UTF-8 byte-order mark outrank a declared charset', async () => {
    const bytes = utf8('\uFEFF<meta charset="windows-1252"><p>Café 知识</p>')
    expect(expectText(await parseDocument({ name: 'x.html', bytes }))).toBe('Café 知识')
  })

  it.each(['utf-16', 'UTF-16LE', 'utf-16be', 'ucs-2'])('reads a page that declares %s without a BOM as UTF-8, as browsers do', async (charset) => {
    const bytes = utf8(`<html><head><meta charset="${charset}"></head><body><p>Café 知识 ok</p></body></html>`)
    expect(expectText(await parseDocument({ name: 'x.html', bytes }))).toBe('Café 知识 ok')
  })

  it('still reads a UTF-16 page that has its BOM', async () => {
    const bytes = new Uint8Array(Buffer.from('\uFEFF<meta charset="utf-16"><p>Café 知识</p>', 'utf16le'))
    expect(expectText(await parseDocument({ name: 'x.html', bytes }))).toBe('Café 知识')
  })

  it('falls back to UTF-8 when the declared charset is unknown', async () => {
    const bytes = utf8('<meta charset="no-such-charset"><p>知识</p>')
    expect(expectText(await parseDocument({ name: 'x.html', bytes }))).toBe('知识')
  })
})

