import fc from 'fast-check'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { buildDocx, buildPdf, buildZip, generatedFiles } from '../../../scripts/make-sample-binaries.ts'
import { DOCX_MIME } from './mime.ts'
import {
  DEFAULT_PARSE_LIMITS,
  type ParseErrorCode,
  type ParseOutcome,
  declaredUnzippedSize,
  findJsonSyntaxError,
  firstInvalidUtf8,
  parseDocument,
  prettyPrintJson,
} from './parse.ts'

const FIXTURES = new URL('../../../tests/fixtures/documents/', import.meta.url)
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(name, FIXTURES)))
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

const parseFixture = (name: string): Promise<ParseOutcome> => parseDocument({ name, bytes: fixture(name) })

const expectText = (outcome: ParseOutcome): string => {
  if (!outcome.ok) throw new Error(`expected a parsed text, got ${outcome.code}: ${outcome.error}`)
  return outcome.text
}
const expectFailure = (outcome: ParseOutcome, code: ParseErrorCode): string => {
  if (outcome.ok) throw new Error(`expected ${code}, got text ${JSON.stringify(outcome.text.slice(0, 80))}`)
  expect(outcome.code).toBe(code)
  return outcome.error
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

describe('fixtures', () => {
  it('are exactly what scripts/make-sample-binaries.ts generates', () => {
    for (const { path, bytes } of generatedFiles()) {
      expect(Buffer.from(readFileSync(new URL(`../../../${path}`, import.meta.url))).equals(bytes), path).toBe(true)
    }
  })
})

describe('the sample corpus', () => {
  const SAMPLES = new URL('../../../samples/', import.meta.url)
  const files = readdirSync(fileURLToPath(SAMPLES), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
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

describe('parseDocument: text formats', () => {
  it('keeps Markdown as Markdown, CJK and astral characters intact', async () => {
    const outcome = await parseFixture('cjk.md')
    expect(outcome).toMatchObject({ ok: true, mime: 'text/markdown', parser: 'markdown' })
    expect(expectText(outcome)).toBe(
      '# 知识工作区说明\n\nKnowAgent 通过受限的工具读取工作区：`ls`、`read`、`search` 和 `status`。\n\n' +
        '- 每页默认 3000 个字符，最多 6000 个。\n- 表情符号 😀 和罕见汉字 𠀋 不会被切开。\n',
    )
  })

  it('strips a UTF-8 BOM and turns CRLF and lone CR into LF', async () => {
    const outcome = await parseFixture('bom-crlf.txt')
    expect(outcome).toMatchObject({ ok: true, mime: 'text/plain', parser: 'text' })
    expect(expectText(outcome)).toBe('First line, Windows style.\nSecond line: 知识库.\nA lone carriage return\nends here.\n')
  })

  it('reads CSV as text with normalised line endings, quoted newlines included', async () => {
    const outcome = await parseFixture('table.csv')
    expect(outcome).toMatchObject({ ok: true, mime: 'text/csv', parser: 'csv' })
    expect(expectText(outcome)).toBe('provider,window,notes\nopenai,128000,"quoted, with comma"\nqwen,131072,"multi\nline"\n')
  })

  it('rejects text in a legacy encoding, naming the first bad byte', async () => {
    const error = expectFailure(await parseFixture('windows-1252.txt'), 'invalid_encoding')
    expect(error).toContain('not valid UTF-8 text (byte 0xE9 at offset 3)')
  })

  it('decodes UTF-16 text that starts with a byte-order mark', async () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo 知识 😀\r\n', 'utf16le')])
    expect(expectText(await parseDocument({ name: 'u16.txt', bytes: le }))).toBe('héllo 知识 😀\n')
    const be = Buffer.from(le)
    be.swap16()
    expect(expectText(await parseDocument({ name: 'u16.txt', bytes: be }))).toBe('héllo 知识 😀\n')
  })

  it('rejects a text file that is binary data', async () => {
    const bytes = new Uint8Array([0x68, 0x69, 0x00, 0x01, 0x02])
    expect(expectFailure(await parseDocument({ name: 'data.txt', bytes }), 'binary')).toContain('NUL byte at offset 2')
  })

  it('strips a stray NUL far into an otherwise textual file', async () => {
    const text = `${'a'.repeat(9000)}\0b\r\nc`
    expect(expectText(await parseDocument({ name: 'long.log', bytes: utf8(text) }))).toBe(`${'a'.repeat(9000)}b\nc`)
  })

  it('gives an empty text for an empty file', async () => {
    expect(await parseDocument({ name: 'empty.txt', bytes: new Uint8Array() })).toEqual({
      ok: true,
      mime: 'text/plain',
      parser: 'text',
      text: '',
    })
  })

  it('reads other text types (YAML) as text under their own type', async () => {
    expect(await parseDocument({ name: 'ci.yml', bytes: utf8('on: push\r\n') })).toEqual({
      ok: true,
      mime: 'application/yaml',
      parser: 'text',
      text: 'on: push\n',
    })
  })
})

describe('parseDocument: HTML', () => {
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

  it('falls back to UTF-8 when the declared charset is unknown', async () => {
    const bytes = utf8('<meta charset="no-such-charset"><p>知识</p>')
    expect(expectText(await parseDocument({ name: 'x.html', bytes }))).toBe('知识')
  })
})

describe('parseDocument: JSON', () => {
  it('validates and pretty-prints, copying numbers and strings verbatim', async () => {
    const outcome = await parseFixture('config.json')
    expect(outcome).toMatchObject({ ok: true, mime: 'application/json', parser: 'json' })
    expect(expectText(outcome)).toBe(
      [
        '{',
        '  "name": "fixture",',
        '  "version": 1.0,',
        '  "big": 12345678901234567890,',
        '  "tiny": 1e-400,',
        '  "nested": {',
        '    "list": [',
        '      1,',
        '      2,',
        '      {',
        '        "a": "x, y: {z}"',
        '      }',
        '    ],',
        '    "empty": {},',
        '    "none": []',
        '  },',
        '  "text": "quote \\" and \\\\ backslash",',
        '  "cjk": "知识"',
        '}',
      ].join('\n'),
    )
  })

  it('names the line, column and position of a syntax error', async () => {
    const raw = new TextDecoder().decode(fixture('invalid.json'))
    const error = expectFailure(await parseFixture('invalid.json'), 'invalid_json')
    expect(error).toBe("invalid JSON at line 3, column 18 (position 40): unexpected ',', expected a value")
    expect(raw.slice(39, 41)).toBe(',,')
  })

  it('counts the position in code points, after astral characters', async () => {
    const error = expectFailure(await parseDocument({ name: 'e.json', bytes: utf8('["😀😀", x]') }), 'invalid_json')
    expect(error).toContain('line 1, column 8 (position 7)')
  })

  it('accepts a BOM before JSON', async () => {
    expect(expectText(await parseDocument({ name: 'b.json', bytes: utf8('\uFEFF{"a":[]}') }))).toBe('{\n  "a": []\n}')
  })

  it.each([
    ['', 0, 'unexpected end of input, expected a value'],
    ['   ', 3, 'unexpected end of input, expected a value'],
    ['{"a":1,}', 7, "unexpected '}', expected a property name in double quotes"],
    ['{a:1}', 1, "unexpected 'a', expected a property name in double quotes or '}'"],
    ['{"a" 1}', 5, "unexpected '1', expected ':' after a property name"],
    ['[1 2]', 3, "unexpected '2', expected ',' or ']'"],
    ['[1,2', 4, "unexpected end of input, expected ',' or ']'"],
    ['"abc', 4, 'unterminated string'],
    ['"a\tb"', 2, 'unescaped control character U+0009 in a string'],
    ['"\\x"', 1, "invalid escape '\\x' in a string"],
    ['"\\u12g4"', 1, 'invalid \\u escape in a string (needs 4 hex digits)'],
    ['01', 1, "invalid number (unexpected '1')"],
    ['1.', 1, "invalid number (unexpected '.')"],
    ['-', 0, 'unexpected \'-\', expected a value'],
    ['{"a":1} x', 8, "unexpected 'x', expected the end of the input (there is more than one value)"],
    ['tru', 0, "unexpected 't', expected a value"],
    ['NaN', 0, "unexpected 'N', expected a value"],
  ])('locates the error in %j', (text, index, reason) => {
    expect(() => JSON.parse(text)).toThrow()
    expect(findJsonSyntaxError(text)).toEqual({ index, reason })
  })

  it('survives very deep nesting without overflowing the stack', () => {
    const deep = '['.repeat(200_000)
    expect(findJsonSyntaxError(deep)).toEqual({ index: 200_000, reason: 'unexpected end of input, expected a value' })
    const balanced = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    expect(findJsonSyntaxError(balanced)).toBeUndefined()
  })

  it('agrees with JSON.parse on what is valid', () => {
    const alphabet = fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '\\', 'a', 'u', '0', '1', '-', '.', 'e', ' ', 'true', 'null', '"k"')
    const nearlyJson = fc.oneof(
      fc.json(),
      fc.array(alphabet, { maxLength: 20 }).map((parts) => parts.join('')),
      fc.tuple(fc.json(), fc.nat(), fc.nat({ max: 3 })).map(([json, at, cut]) => json.slice(0, at % (json.length + 1)) + json.slice((at % (json.length + 1)) + cut)),
    )
    fc.assert(
      fc.property(nearlyJson, (text) => {
        let valid = true
        try {
          JSON.parse(text)
        } catch {
          valid = false
        }
        expect(findJsonSyntaxError(text) === undefined).toBe(valid)
      }),
      { numRuns: 2000 },
    )
  })

  it('pretty-prints exactly like JSON.stringify(…, null, 2) for canonical input', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const minified = JSON.stringify(value)
        expect(prettyPrintJson(minified)).toBe(JSON.stringify(value, null, 2))
        expect(prettyPrintJson(JSON.stringify(value, null, '\t'))).toBe(JSON.stringify(value, null, 2))
      }),
    )
  })
})

describe('parseDocument: PDF', () => {
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
})

describe('parseDocument: DOCX', () => {
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

  it('refuses a DOCX that declares more unzipped data than allowed', async () => {
    const bytes = fixture('sample.docx')
    const declared = declaredUnzippedSize(bytes)
    expect(declared).toBeGreaterThan(1000)
    const outcome = await parseDocument({ name: 'big.docx', bytes, limits: { maxUnzippedBytes: (declared ?? 0) - 1 } })
    expect(expectFailure(outcome, 'too_large')).toContain('DOCX unpacks to')
    expect((await parseDocument({ name: 'big.docx', bytes, limits: { maxUnzippedBytes: declared ?? 0 } })).ok).toBe(true)
  })

  it('reads the declared sizes of a zip', () => {
    const zip = buildZip([
      { name: 'a', data: 'x'.repeat(10) },
      { name: 'b', data: 'y'.repeat(32) },
    ])
    expect(declaredUnzippedSize(zip)).toBe(42)
    expect(declaredUnzippedSize(utf8('not a zip'))).toBeUndefined()
  })
})

describe('parseDocument: unknown and unsupported types', () => {
  it('reads an unknown extension as text/plain when it is UTF-8 text', async () => {
    expect(await parseDocument({ name: 'Makefile', bytes: utf8('all:\r\n\techo 知识\r\n') })).toEqual({
      ok: true,
      mime: 'text/plain',
      parser: 'text',
      text: 'all:\n\techo 知识\n',
    })
  })

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
    // Browsers on Windows label CSV uploads as Excel files.
    const csv = await parseDocument({ name: 'x.csv', mime: 'application/vnd.ms-excel', bytes: utf8('a,b\r\n') })
    expect(csv).toEqual({ ok: true, mime: 'text/csv', parser: 'csv', text: 'a,b\n' })
  })
})

describe('parseDocument: limits, cancellation and robustness', () => {
  it('has the documented default limits', () => {
    expect(DEFAULT_PARSE_LIMITS).toEqual({ maxBytes: 52_428_800, maxChars: 20_000_000, maxUnzippedBytes: 209_715_200 })
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
    expect(error).toBe('parsed text is too long: 5 characters, over the 4 limit; raw bytes kept')
  })

  it('stops reading a PDF once its text passes the limit', async () => {
    const outcome = await parseDocument({ name: 'a.pdf', bytes: fixture('sample.pdf'), limits: { maxChars: 20 } })
    expect(expectFailure(outcome, 'text_too_long')).toMatch(/^parsed text is too long: more than \d+ characters, over the 20 limit/)
  })

  it('returns an aborted outcome for an already-aborted signal', async () => {
    const outcome = await parseDocument({ name: 'a.md', bytes: utf8('# x'), signal: AbortSignal.abort() })
    expect(expectFailure(outcome, 'aborted')).toBe('parsing was cancelled')
    expect(outcome.mime).toBe('text/markdown')
  })

  it('stops a PDF parse that is aborted while it runs', async () => {
    const controller = new AbortController()
    const running = parseDocument({ name: 'a.pdf', bytes: fixture('sample.pdf'), signal: controller.signal })
    controller.abort()
    expectFailure(await running, 'aborted')
  })

  it('stops a DOCX parse that is aborted while it runs', async () => {
    const controller = new AbortController()
    const running = parseDocument({ name: 'a.docx', bytes: fixture('sample.docx'), signal: controller.signal })
    controller.abort()
    expectFailure(await running, 'aborted')
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
          expect(outcome.code).toBeDefined()
          expect(outcome.error.length).toBeGreaterThan(10)
        }
      }),
      { numRuns: 150 },
    )
  })

  it('builds DOCX documents that round-trip through the parser', async () => {
    const bytes = buildDocx([{ kind: 'paragraph', text: 'Round & trip <ok>' }], { title: 't' })
    expect(expectText(await parseDocument({ name: 'r.docx', bytes }))).toBe('Round & trip <ok>')
  })
})

describe('firstInvalidUtf8', () => {
  it.each([
    [[0x61, 0x62], -1],
    [[0xe4, 0xbd, 0xa0], -1], // 你
    [[0xf0, 0x9f, 0x98, 0x80], -1], // 😀
    [[0x61, 0xff], 1],
    [[0xc0, 0x80], 0], // overlong NUL
    [[0xe0, 0x80, 0x80], 0], // overlong
    [[0xed, 0xa0, 0x80], 0], // encoded surrogate
    [[0xf4, 0x90, 0x80, 0x80], 0], // above U+10FFFF
    [[0x61, 0xe4, 0xbd], 1], // truncated at the end
    [[0xe4, 0x41, 0xa0], 0], // bad continuation
  ])('%j → %i', (bytes, expected) => {
    expect(firstInvalidUtf8(new Uint8Array(bytes))).toBe(expected)
  })

  it('agrees with a fatal TextDecoder', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        let valid = true
        try {
          new TextDecoder('utf-8', { fatal: true }).decode(bytes)
        } catch {
          valid = false
        }
        expect(firstInvalidUtf8(bytes) === -1).toBe(valid)
      }),
      { numRuns: 2000 },
    )
  })
})
