import fc from 'fast-check'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { LONE_SURROGATE, SAMPLES, expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { ROOT, generatedFiles } from '../../../../tests/support/sample-binaries.ts'
import { parseDocument } from './parse-document.ts'
import { DEFAULT_PARSE_LIMITS } from './parse-outcome.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('fixtures', () => {
  it('are exactly what tests/support/sample-binaries.ts generates (npm run samples:check)', () => {
    for (const { path, bytes } of generatedFiles()) {
      expect(Buffer.from(readFileSync(join(ROOT, path))).equals(bytes), path).toBe(true)
    }
  })
})

describe('the sample corpus', () => {
  const files = readdirSync(fileURLToPath(SAMPLES), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.parentPath.includes('.sources'))
    .map((entry) => relative(fileURLToPath(SAMPLES), join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort()

  it('has 8–12 documents besides its README, in subdirectories, under 200 KB in all', () => {
    const documents = files.filter((path) => path !== 'README.md')
    expect(documents.length).toBeGreaterThanOrEqual(8)
    expect(documents.length).toBeLessThanOrEqual(12)
    expect(documents.every((path) => path.includes('/'))).toBe(true)
    const total = files.reduce((sum, path) => sum + readFileSync(new URL(path, SAMPLES)).length, 0)
    expect(total).toBeLessThan(200 * 1024)
  })

  it('parses every sample, and the README names every sample', async () => {
    const readme = readFileSync(new URL('README.md', SAMPLES), 'utf8')
    for (const path of files) {
      const outcome = await parseDocument({ name: path, bytes: readFileSync(new URL(path, SAMPLES)) })
      expect(outcome.ok ? outcome.text.length : outcome.error, path).toBeGreaterThan(500)
      if (path !== 'README.md') expect(readme, path).toContain(path)
    }
  })

  it.each([
    ['guides/compile-pipeline.pdf', 'unpdf', 'FOR UPDATE SKIP LOCKED'],
    ['notes/decision-log-2026-q1.docx', 'mammoth', 'Count page sizes in Unicode code points'],
    ['guides/streaming-protocol.html', 'html-to-text', 'Every stream ends with exactly one done or exactly one error.'],
    ['guides/streaming-protocol.html', 'html-to-text', 'A piece of the model\'s reasoning, when the provider exposes it. Show it collapsed.'],
    ['notes/knowagent-notes.zh.md', 'markdown', '输入上限 = 模型窗口 − 输出预留 − 1024（协议预留）。'],
    ['data/knowagent.config.example.json', 'json', '"supportsNativeToolCalling": true'],
  ])('%s is read by %s', async (path, parser, sentence) => {
    const outcome = await parseDocument({ name: path, bytes: readFileSync(new URL(path, SAMPLES)) })
    expect(outcome).toMatchObject({ ok: true, parser })
    expect(expectText(outcome)).toContain(sentence)
    expect(expectText(outcome)).not.toContain('UA-DO-NOT-INDEX')
  })
})

describe('unknown and unsupported types', () => {
  it.each([
    ['blob.bin', 'unsupported file type (.bin, application/octet-stream); raw bytes kept'],
    ['pixel.png', 'unsupported file type (.png, image/png); raw bytes kept'],
  ])('keeps %s as raw bytes only', async (name, message) => {
    expect(expectFailure(await parseFixture(name), 'unsupported')).toBe(message)
  })

  it('rejects an unknown extension with a NUL anywhere, even late', async () => {
    const bytes = utf8(`${'text '.repeat(5000)}\0`)
    expect(expectFailure(await parseDocument({ name: 'x.dat', bytes }), 'unsupported')).toContain('(.dat, application/octet-stream)')
  })

  it('says how to make an office format readable', async () => {
    const error = expectFailure(await parseDocument({ name: 'Budget.XLSX', bytes: fixture('sample.docx') }), 'unsupported')
    expect(error).toBe(
      'unsupported file type (.xlsx, application/vnd.openxmlformats-officedocument.spreadsheetml.sheet); raw bytes kept (export it as CSV to make it readable)',
    )
  })

  it('uses the declared type only when the name has no known extension', async () => {
    const markdown = await parseDocument({ name: 'README', mime: 'text/markdown; charset=utf-8', bytes: utf8('# Hi') })
    expect(markdown).toMatchObject({ ok: true, mime: 'text/markdown', parser: 'markdown' })
  })
})

describe('limits, cancellation and robustness', () => {
  it('has the documented default limits', () => {
    expect(DEFAULT_PARSE_LIMITS).toEqual({ maxBytes: 52_428_800, maxChars: 5_000_000, maxInflatedBytes: 67_108_864 })
  })

  it('refuses input over maxBytes before parsing it', async () => {
    const outcome = await parseDocument({ name: 'big.txt', bytes: utf8('12345678901'), limits: { maxBytes: 10 } })
    expect(expectFailure(outcome, 'too_large')).toBe('file is too large to parse: 11 bytes, over the 10 bytes limit; raw bytes kept')
    expect((await parseDocument({ name: 'big.txt', bytes: utf8('1234567890'), limits: { maxBytes: 10 } })).ok).toBe(true)
  })

  it('counts the text limit in code points', async () => {
    const bytes = utf8('😀😀😀😀😀') // 5 code points, 10 UTF-16 units
    expect((await parseDocument({ name: 'e.txt', bytes, limits: { maxChars: 5 } })).ok).toBe(true)
    const error = expectFailure(await parseDocument({ name: 'e.txt', bytes, limits: { maxChars: 4 } }), 'text_too_long')
    expect(error).toBe('text limit: 5 characters of text, over the limit of 4 (limits.maxParsedChars); raw bytes kept')
  })

  it('returns an aborted outcome for an already-aborted signal', async () => {
    const outcome = await parseDocument({ name: 'a.md', bytes: utf8('# x'), signal: AbortSignal.abort() })
    expect(expectFailure(outcome, 'aborted')).toBe('parsing was cancelled')
    expect(outcome.mime).toBe('text/markdown')
  })

  it('never rejects, and only ever returns clean text', async () => {
    const names = ['a.pdf', 'a.docx', 'a.json', 'a.html', 'a.txt', 'a.md', 'a.csv', 'noext', 'a.png', 'a.xyz']
    const pdfLike = fc.uint8Array({ maxLength: 300 }).map((tail) => new Uint8Array([...utf8('%PDF-1.4\n'), ...tail]))
    const zipLike = fc.nat({ max: 4000 }).map((cut) => fixture('sample.docx').slice(0, cut))
    const texty = fc.string({ unit: 'binary', maxLength: 200 }).map((s) => utf8(s.replace(/\n/g, '\r\n')))
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...names), fc.oneof(fc.uint8Array({ maxLength: 300 }), pdfLike, zipLike, texty), async (name, bytes) => {
        const outcome = await parseDocument({ name, bytes })
        if (outcome.ok) {
          expect(outcome.text).not.toMatch(/[\r\0]/)
          expect(LONE_SURROGATE.test(outcome.text)).toBe(false)
        } else {
          expect(typeof outcome.code).toBe('string')
          expect(outcome.error.length).toBeGreaterThan(10)
        }
      }),
      { numRuns: 150 },
    )
  })
})
