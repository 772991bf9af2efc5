import { describe, expect, it } from 'vitest'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('Markdown and plain text', () => {
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
    expect(await parseDocument({ name: 'empty.txt', bytes: new Uint8Array() })).toEqual({ ok: true, mime: 'text/plain', parser: 'text', text: '' })
  })

  it('reads other text types (YAML) as text under their own type', async () => {
    expect(await parseDocument({ name: 'ci.yml', bytes: utf8('on: push\r\n') })).toEqual({ ok: true, mime: 'application/yaml', parser: 'text', text: 'on: push\n' })
  })

  it('reads an unknown extension as text/plain when it is UTF-8 text', async () => {
    expect(await parseDocument({ name: 'Makefile', bytes: utf8('all:\r\n\techo 知识\r\n') })).toEqual({
      ok: true,
      mime: 'text/plain',
      parser: 'text',
      text: 'all:\n\techo 知识\n',
    })
  })
})
