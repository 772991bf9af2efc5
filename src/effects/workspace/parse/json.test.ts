import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { findJsonSyntaxError, prettyPrintJson } from './json.ts'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

const parseFixture = (name: string) => parseDocument({ name, bytes: fixture(name) })

describe('JSON', () => {
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

