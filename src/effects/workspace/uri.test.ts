import { describe, expect, it } from 'vitest'
import { fc, test } from '@fast-check/vitest'
import { checkNodeName, formatKbUri, isWithin, linkableKbUri, parseKbUri, validateSegment } from './uri.ts'
import { InvalidUri, OutsideScope } from './workspace-errors.ts'

const me = 'alice'
const parse = (uri: string) => parseKbUri({ uri, callerLogin: me })

describe('parseKbUri', () => {
  it.each([
    ['kb://me/', []],
    ['kb://me', []],
    ['kb://users/', []],
    ['kb://users', []],
    ['kb://users/alice/', []],
    ['kb://users/alice/notes/', ['notes']],
    ['kb://me/notes/a.md', ['notes', 'a.md']],
    ['KB://me/notes', ['notes']],
    ['kb://me/%E4%B8%AD%E6%96%87/x', ['中文', 'x']],
    ['kb://me/中文/笔记.md', ['中文', '笔记.md']],
    ['kb://me/with space.txt', ['with space.txt']],
  ])('normalises %s', (uri, segments) => {
    expect(parse(uri)).toEqual({ login: me, segments })
  })

  it.each([
    ['kb://me/../bob', '".." segments'],
    ['kb://me/a/../../users/bob', '".." segments'],
    ['kb://me/./a', '"." segments'],
    ['kb://me/%2e%2e/bob', '".." segments'],
    ['kb://me/%2E%2E', '".." segments'],
    ['kb://me/a%2fb', 'slashes'],
    ['kb://me/a%5cb', 'slashes'],
    ['kb://me/a\\b', 'backslashes'],
    ['kb://me/a\u0000b', 'control characters'],
    ['kb://me/a%00b', 'control characters'],
    ['kb://me/%252e%252e', 'double encoding'],
    ['kb://me/a//b', 'empty path segment'],
    ['kb://me/%zz', 'malformed percent-encoding'],
    ['/etc/passwd', 'expected a kb:// URI'],
    ['file:///etc/passwd', 'expected a kb:// URI'],
    ['C:\\Windows', 'expected a kb:// URI'],
    ['kb:///etc/passwd', 'absolute paths'],
    ['kb://etc/passwd', 'unknown root'],
    ['kb://me/a?x=1', 'query strings'],
    ['kb://me/a#frag', 'fragments'],
    ['kb://me/ lead', 'whitespace'],
  ])('refuses %j with a clear reason', (uri, reason) => {
    let caught: unknown
    try {
      parse(uri)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(InvalidUri)
    expect((caught as InvalidUri).message).toContain(reason)
  })

  it.each(['kb://users/bob/', 'kb://users/bob/secret.md', 'kb://users/%62ob/x'])('refuses another user\'s tree: %s', (uri) => {
    expect(() => parse(uri)).toThrow(OutsideScope)
  })
})

// Hostile URIs: none may ever resolve to another user's tree or to anything but validated segments.
const hostilePiece = fc.constantFrom(
  '..', '.', '%2e', '%2E', '%2e%2e', '%252e', '%2f', '%2F', '%5c', '\\', '/', '//', '%00', '\u0000', 'users', 'bob',
  'me', '%', '%%', '?', '#', ' ', '\t', '\n', 'C:', '~', 'kb:', '%c0%ae', '\ud800', '中', '😀', 'a', '.hidden',
)
const hostileUri = fc
  .tuple(
    fc.constantFrom('kb://', 'kb://me/', 'kb://users/', 'kb://users/alice/', 'kb://users/bob/', 'KB://me/', 'kb:/', ''),
    fc.array(fc.oneof(hostilePiece, fc.string({ maxLength: 6 })), { maxLength: 12 }),
  )
  .map(([prefix, pieces]) => prefix + pieces.join(''))

describe('hostile URIs (property)', () => {
  test.prop([hostileUri], { numRuns: 2000 })('never reach another user nor an unvalidated segment', (uri) => {
    let result
    try {
      result = parse(uri)
    } catch (error) {
      expect(error instanceof InvalidUri || error instanceof OutsideScope).toBe(true)
      return
    }
    expect(result.login).toBe(me)
    for (const segment of result.segments) {
      expect(validateSegment(segment)).toBeUndefined()
      expect(segment).not.toBe('..')
      expect(segment).not.toMatch(/[\/\\\u0000]/)
    }
  })

  test.prop([hostileUri, fc.array(fc.constantFrom('docs', 'a', '中文'), { minLength: 1, maxLength: 3 })], { numRuns: 1000 })(
    'a URI accepted under a selected root stays within it only when it is a descendant',
    (uri, scope) => {
      const outer = { login: me, segments: scope }
      let inner
      try {
        inner = parse(uri)
      } catch {
        return
      }
      const within = isWithin({ outer, inner })
      expect(within).toBe(scope.every((s, i) => inner.segments[i] === s) && inner.segments.length >= scope.length)
    },
  )

  const safeName = fc
    .string({ minLength: 1, maxLength: 20, unit: 'grapheme' })
    .filter((name) => validateSegment(name) === undefined)
  test.prop([fc.array(safeName, { maxLength: 6 }), fc.boolean()])('format then parse round-trips', (segments, directory) => {
    const uri = formatKbUri({ login: me, segments, directory })
    expect(parse(uri)).toEqual({ login: me, segments: segments.map((segment) => segment.normalize('NFC')) })
  })
})

describe('checkNodeName', () => {
  it.each([
    ['sub/secret.md', 'a name cannot hold a folder part'],
    ['x\\y.md', 'a name cannot hold a folder part'],
    ['/etc/passwd', 'a name cannot hold a folder part'],
    ['invoice\u202Efdp.exe', 'invisible or control character U+202E is not allowed in a name'],
    ['a\u202Ab.md', 'U+202A'],
    ['a\u2066b\u2069.md', 'U+2066'],
    ['zero\u200Bwidth.md', 'U+200B'],
    ['zw\u200Cnj.md', 'U+200C'],
    ['zw\u200Dj.md', 'U+200D'],
    ['word\u2060joiner.md', 'U+2060'],
    ['\uFEFFbom.md', 'U+FEFF'],
    ['soft\u00ADhyphen.md', 'U+00AD'],
    ['line\u2028break.md', 'U+2028'],
    ['filler\u3164.md', 'U+3164'],
    ['tab\there.md', 'U+0009'],
    ['nul\u0000.md', 'U+0000'],
    ['..', '".." segments are not allowed'],
    ['', 'empty path segment'],
    [' padded.md', 'whitespace'],
  ])('refuses %j: %s', (raw, reason) => {
    const checked = checkNodeName(raw)
    expect(checked.ok).toBe(false)
    expect(checked.ok ? '' : checked.reason).toContain(reason)
  })

  it('stores names in NFC, so the composed and decomposed forms of a name are the same name', () => {
    const composed = 'caf\u00e9.md'
    const decomposed = 'cafe\u0301.md'
    expect(checkNodeName(decomposed)).toEqual({ ok: true, name: composed })
    expect(checkNodeName(composed)).toEqual({ ok: true, name: composed })
  })

  it.each(['notes.md', '知识库.md', '😀 emoji.txt', '❤\uFE0F.md', 'Résumé (final).docx', 'a\u00A0b.md'])('accepts %j as it is', (name) => {
    expect(checkNodeName(name)).toEqual({ ok: true, name })
  })

  it('lets a URI in either form find the one stored name', () => {
    expect(parse('kb://me/cafe\u0301.md')).toEqual({ login: me, segments: ['caf\u00e9.md'] })
    expect(parse('kb://me/cafe%CC%81.md')).toEqual({ login: me, segments: ['caf\u00e9.md'] })
  })
})

describe('linkableKbUri', () => {
  it('writes a name with spaces, quotes and brackets as one token that parses back to the same node', () => {
    const uri = formatKbUri({ login: 'ana', segments: ['meeting notes', "Bob's (draft) [v2] \"final\".md"], directory: false })
    const linkable = linkableKbUri(uri)
    expect(linkable).toBe('kb://users/ana/meeting%20notes/Bob%27s%20%28draft%29%20%5Bv2%5D%20%22final%22.md')
    expect(linkable).not.toMatch(/[\s'"()[\]<>`]/)
    expect(parseKbUri({ uri: linkable, callerLogin: 'ana' }).segments).toEqual(['meeting notes', "Bob's (draft) [v2] \"final\".md"])
  })

  test.prop([fc.array(fc.string({ minLength: 1, maxLength: 12 }).filter((name) => { const checked = checkNodeName(name); return checked.ok && checked.name === name }), { minLength: 1, maxLength: 4 })])(
    'round-trips every valid name',
    (segments) => {
      const uri = formatKbUri({ login: 'ana', segments, directory: false })
      expect(parseKbUri({ uri: linkableKbUri(uri), callerLogin: 'ana' }).segments).toEqual(segments)
    },
  )
})
