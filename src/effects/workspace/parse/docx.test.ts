import { describe, expect, it } from 'vitest'
import { DOCX_MIME } from '../mime.ts'
import { docxBomb } from '../../../../tests/support/bombs.ts'
import { buildDocx, buildZip } from '../../../../tests/support/sample-binaries.ts'
import { readZipEntries } from './zip.ts'
import { expectFailure, expectText, fixture } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('DOCX', () => {
  it('extracts paragraphs, list items and table cells', async () => {
    const outcome = await parseFixture('sample.docx')
    expect(outcome).toMatchObject({ ok: true, mime: DOCX_MIME, parser: 'mammoth' })
    expect(expectText(outcome)).toBe(
      [
        'Fixture document',
        'The first paragraph mentions compaction and the context window.',
        'A bullet with ümlauts, 中文字符 and an emoji 😀.',
        'Setting',
        'Value',
        'window',
        '128000',
        'Closing paragraph & <angle brackets>.',
      ].join('\n\n'),
    )
  })

  it('reports a truncated DOCX as corrupt', async () => {
    const error = expectFailure(await parseFixture('corrupt.docx'), 'corrupt')
    expect(error).toMatch(/^DOCX could not be read \(corrupt or not a \.docx\): \S/)
  })

  it('reports a zip without a Word document as corrupt', async () => {
    const bytes = buildZip([{ name: 'notes.txt', data: 'just a zip' }])
    expect(expectFailure(await parseDocument({ name: 'fake.docx', bytes }), 'corrupt')).toContain('main document part')
  })

  it('reports an OLE compound file (encrypted OOXML or legacy .doc) as encrypted', async () => {
    const bytes = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array<number>(504).fill(0)])
    expect(expectFailure(await parseDocument({ name: 'locked.docx', bytes }), 'encrypted')).toContain('password-protected')
  })

  it('reads a DOCX whose parts total exactly the inflation budget, and refuses one byte less', async () => {
    const bytes = fixture('sample.docx')
    const total = await readZipEntries(bytes, { maxInflatedBytes: Number.MAX_SAFE_INTEGER, include: (name) => /\.(xml|rels)$/i.test(name) })
    if (!total.ok) throw new Error(total.detail)
    const size = total.entries.reduce((sum, entry) => sum + entry.data.length, 0)
    expect((await parseDocument({ name: 'a.docx', bytes, limits: { maxInflatedBytes: size } })).ok).toBe(true)
    const error = expectFailure(await parseDocument({ name: 'a.docx', bytes, limits: { maxInflatedBytes: size - 1 } }), 'inflated_too_large')
    expect(error).toBe(`inflated size over ${(size - 1).toLocaleString('en-US')} bytes: the compressed data inside the file unpacks to more than limits.maxInflatedBytes allows; raw bytes kept`)
  })

  it('stops a DOCX bomb at the inflation budget (a part of 1 GB, 1 MB compressed)', async () => {
    const bytes = docxBomb({ inflatedBytes: 1024 * 1024 * 1024 })
    expect(bytes.length).toBeLessThan(1_100_000)
    const error = expectFailure(await parseDocument({ name: 'bomb.docx', bytes, limits: { maxInflatedBytes: 8 * 1024 * 1024 } }), 'inflated_too_large')
    expect(error).toMatch(/^inflated size over 8,388,608 bytes/)
  })

  it('never trusts the size a zip declares: a part that says 1,000 bytes and inflates to 64 MB hits the budget', async () => {
    const bytes = docxBomb({ inflatedBytes: 64 * 1024 * 1024, declaredBytes: 1000 })
    const error = expectFailure(await parseDocument({ name: 'liar.docx', bytes, limits: { maxInflatedBytes: 4 * 1024 * 1024 } }), 'inflated_too_large')
    expect(error).toMatch(/^inflated size over 4,194,304 bytes/)
  })

  it('refuses a part whose inflated size differs from the size it declares, within the budget', async () => {
    const bytes = docxBomb({ inflatedBytes: 4096, declaredBytes: 1000 })
    expect(expectFailure(await parseDocument({ name: 'liar.docx', bytes }), 'corrupt')).toMatch(/word\/document.xml declares 1000 bytes but holds \d+/)
  })

  it('builds DOCX documents that round-trip through the parser', async () => {
    const docx = buildDocx([{ kind: 'paragraph', text: 'Round & trip <ok>' }], { title: 't' })
    expect(expectText(await parseDocument({ name: 'r.docx', bytes: docx }))).toBe('Round & trip <ok>')
  })

  it('stops a DOCX parse that is aborted while it runs', async () => {
    const controller = new AbortController()
    const running = parseDocument({ name: 'a.docx', bytes: fixture('sample.docx'), signal: controller.signal })
    controller.abort()
    expectFailure(await running, 'aborted')
  })
})
