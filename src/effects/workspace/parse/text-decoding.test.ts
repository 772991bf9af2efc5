import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeText, firstInvalidUtf8, normaliseText } from './text-decoding.ts'

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

describe('decodeText', () => {
  it('refuses a NUL in the first 8000 bytes as binary, and one later only when told to', () => {
    expect(decodeText(new Uint8Array([0x61, 0x00]), { allowNul: 'late' })).toEqual({ ok: false, code: 'binary', error: 'binary data, not text (NUL byte at offset 1)' })
    const late = new Uint8Array([...new Uint8Array(9000).fill(0x61), 0x00])
    expect(decodeText(late, { allowNul: 'late' }).ok).toBe(true)
    expect(decodeText(late, { allowNul: 'never' })).toMatchObject({ ok: false, code: 'binary' })
  })

  it('reports a bad UTF-16 text after its byte-order mark', () => {
    expect(decodeText(new Uint8Array([0xff, 0xfe, 0x00, 0xd8]), { allowNul: 'late' })).toMatchObject({ ok: false, code: 'invalid_encoding' })
  })
})

describe('normaliseText', () => {
  it('turns CRLF and CR into LF and drops NUL, a leading BOM and lone surrogates', () => {
    expect(normaliseText('\uFEFFa\r\nb\rc\0d\uD800e')).toBe('a\nb\ncd\uFFFDe')
  })
})
