import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { FIXTURES } from '../../../../tests/support/documents.ts'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pdfBomb } from '../../../../tests/support/bombs.ts'
import { buildPdf } from '../../../../tests/support/sample-binaries.ts'
import { patchPdfjsSource } from './pdfjs-decode-budget.ts'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('PDF', () => {
  it('extracts the text of every page, pages separated by a blank line', async () => {
    const outcome = await parseFixture('sample.pdf')
    expect(outcome).toMatchObject({ ok: true, mime: 'application/pdf', parser: 'unpdf' })
    expect(expectText(outcome)).toBe(
      [
        'Knowagent fixture PDF, page one.',
        'The quick brown fox jumps over the lazy dog.',
        'Parentheses (like these) and a backslash \\ survive.',
        'Accents survive too: naïve café in Zürich.',
        '',
        'Page two begins here.',
        'It is the last page of the fixture.',
      ].join('\n'),
    )
  })

  it('leaves the caller’s bytes usable (pdf.js may detach what it is given)', async () => {
    const bytes = fixture('sample.pdf')
    await parseDocument({ name: 'a.pdf', bytes })
    expect(bytes.byteLength).toBeGreaterThan(0)
    expect(expectText(await parseDocument({ name: 'a.pdf', bytes }))).toContain('page one')
  })

  it('accepts a Node Buffer, as read from disk', async () => {
    const bytes = readFileSync(new URL('sample.pdf', FIXTURES))
    expect(expectText(await parseDocument({ name: 'a.pdf', bytes }))).toContain('page one')
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-')
  })

  it('recognises a PDF without an extension by its signature', async () => {
    const outcome = await parseDocument({ name: 'download', bytes: fixture('sample.pdf') })
    expect(outcome).toMatchObject({ ok: true, mime: 'application/pdf', parser: 'unpdf' })
  })

  it('skips pages without text instead of leaving gaps', async () => {
    const bytes = buildPdf([{ lines: ['First.'] }, { lines: [] }, { lines: ['Third.'] }], { title: 'gaps' })
    expect(expectText(await parseDocument({ name: 'gaps.pdf', bytes }))).toBe('First.\n\nThird.')
  })

  it('reports a PDF without a text layer as having no text', async () => {
    const bytes = buildPdf([{ lines: [] }, { lines: [''] }], { title: 'scan' })
    expect(expectFailure(await parseDocument({ name: 'scan.pdf', bytes }), 'no_text')).toBe(
      'PDF has 2 pages but no extractable text (a scan needs OCR, which is not supported)',
    )
  })

  it('reads a PDF encrypted with an empty user password (it opens without one)', async () => {
    const bytes = buildPdf([{ lines: ['Owner-restricted, but readable.'] }], { title: 'open', userPassword: '' })
    expect(expectText(await parseDocument({ name: 'open.pdf', bytes }))).toBe('Owner-restricted, but readable.')
  })

  it('reports a password-protected PDF as encrypted', async () => {
    expect(expectFailure(await parseFixture('encrypted.pdf'), 'encrypted')).toBe(
      'PDF is password-protected (encrypted); remove the password and upload it again',
    )
  })

  it('still reports encryption when a signal is passed', async () => {
    const outcome = await parseDocument({ name: 'e.pdf', bytes: fixture('encrypted.pdf'), signal: new AbortController().signal })
    expectFailure(outcome, 'encrypted')
  })

  it.each([
    ['a truncated PDF', () => fixture('corrupt.pdf')],
    ['bytes that are not a PDF', () => utf8('this is not a PDF at all')],
    ['an empty file', () => new Uint8Array()],
  ])('reports %s as corrupt', async (_label, bytes) => {
    const error = expectFailure(await parseDocument({ name: 'broken.pdf', bytes: bytes() }), 'corrupt')
    expect(error).toMatch(/^PDF could not be read \(corrupt or not a PDF\): \S/)
  })

  it('stops a PDF parse that is aborted while it runs', async () => {
    const controller = new AbortController()
    const running = parseDocument({ name: 'a.pdf', bytes: fixture('sample.pdf'), signal: controller.signal })
    controller.abort()
    expectFailure(await running, 'aborted')
  })

  it('stops reading a PDF once its text passes the limit', async () => {
    const outcome = await parseDocument({ name: 'a.pdf', bytes: fixture('sample.pdf'), limits: { maxChars: 20 } })
    expect(expectFailure(outcome, 'text_too_long')).toMatch(/^text limit: more than \d+ characters of text, over the limit of 20 \(limits.maxParsedChars\)/)
  })
})

describe('PDF decode budget', () => {
  it('stops a PDF whose one FlateDecode stream inflates to 300 MB (a 300 KB file) at the budget', async () => {
    const bytes = pdfBomb({ inflatedBytes: 300 * 1024 * 1024 })
    expect(bytes.length).toBeLessThan(400_000)
    const error = expectFailure(await parseDocument({ name: 'bomb.pdf', bytes, limits: { maxInflatedBytes: 4 * 1024 * 1024 } }), 'inflated_too_large')
    expect(error).toMatch(/^inflated size over 4,194,304 bytes/)
  })

  it('reads the same kind of document when it stays within the budget', async () => {
    const bytes = pdfBomb({ inflatedBytes: 64 * 1024 })
    expect(expectText(await parseDocument({ name: 'small.pdf', bytes, limits: { maxInflatedBytes: 1024 * 1024 } }))).toBe('bomb')
  })

  it('gives each document its own budget (a failed one does not poison the next)', async () => {
    await parseDocument({ name: 'bomb.pdf', bytes: pdfBomb({ inflatedBytes: 16 * 1024 * 1024 }), limits: { maxInflatedBytes: 1024 * 1024 } })
    expect(expectText(await parseFixture('sample.pdf'))).toContain('page one')
  })

  it('patches each place pdf.js decodes exactly once, and refuses a bundle it does not recognise', () => {
    const source = readFileSync(join(dirname(createRequire(import.meta.url).resolve('unpdf')), 'pdfjs.mjs'), 'utf8')
    const patched = patchPdfjsSource(source)
    expect(patched.split('Symbol.for("knowagent.pdfDecodeCharge")').length - 1).toBe(2)
    expect(() => patchPdfjsSource(source.replace('ensureBuffer(e){let t=this.buffer;', 'ensureBuffer(x){'))).toThrow(/review pdfjs-decode-budget.ts/)
  })
})
