// Bytes → string for every text format, and the normalisation every extracted text gets.
import type { ParseErrorCode } from './parse-outcome.ts'

export const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>): boolean =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b)

/** Offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, surrogates or > U+10FFFF), or -1. */
export const firstInvalidUtf8 = (bytes: Uint8Array): number => {
  let i = 0
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0
    if (lead < 0x80) {
      i++
      continue
    }
    const trailing = lead >= 0xc2 && lead <= 0xdf ? 1 : lead >= 0xe0 && lead <= 0xef ? 2 : lead >= 0xf0 && lead <= 0xf4 ? 3 : 0
    if (trailing === 0 || i + trailing >= bytes.length) return i
    const second = bytes[i + 1] ?? 0
    const [low, high] =
      lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf]
    if (second < low || second > high) return i
    for (let k = 2; k <= trailing; k++) {
      const next = bytes[i + k] ?? 0
      if (next < 0x80 || next > 0xbf) return i
    }
    i += trailing + 1
  }
  return -1
}

const UTF8_BOM = [0xef, 0xbb, 0xbf]

const hexByte = (b: number): string => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`

// Git's rule: a NUL in the first 8000 bytes means binary.
const BINARY_SNIFF_BYTES = 8000

export type DecodeFailure = { readonly ok: false; readonly code: ParseErrorCode; readonly error: string }
export type Decoded = { readonly ok: true; readonly text: string } | DecodeFailure

const isUtf8Label = (label: string): boolean => /^(utf-?8|unicode-1-1-utf-8)$/i.test(label.trim())

/**
 * Bytes → string. A UTF-8 BOM is stripped; a UTF-16 BOM switches to UTF-16. Otherwise the
 * bytes must be valid UTF-8 (or `charset`, when one was declared and is known).
 */
export const decodeText = (
  bytes: Uint8Array,
  { charset, allowNul }: { charset?: string | undefined; allowNul: 'late' | 'never' },
): Decoded => {
  const utf16 = startsWith(bytes, [0xff, 0xfe]) ? 'utf-16le' : startsWith(bytes, [0xfe, 0xff]) ? 'utf-16be' : undefined
  if (utf16 !== undefined) {
    try {
      return { ok: true, text: new TextDecoder(utf16, { fatal: true }).decode(bytes) }
    } catch {
      return { ok: false, code: 'invalid_encoding', error: `not valid ${utf16.toUpperCase()} text (the file starts with a UTF-16 byte-order mark)` }
    }
  }
  const nul = bytes.indexOf(0)
  if (nul !== -1 && (allowNul === 'never' || nul < BINARY_SNIFF_BYTES)) {
    return { ok: false, code: 'binary', error: `binary data, not text (NUL byte at offset ${nul})` }
  }
  // A UTF-8 byte-order mark outranks a declared charset (as in the HTML spec).
  const label = charset === undefined || isUtf8Label(charset) || startsWith(bytes, UTF8_BOM) ? 'utf-8' : charset
  if (label !== 'utf-8') {
    try {
      return { ok: true, text: new TextDecoder(label, { fatal: true }).decode(bytes) }
    } catch (cause) {
      // An unknown label is a RangeError: fall through to UTF-8, the declaration was wrong.
      if (!(cause instanceof RangeError)) {
        return { ok: false, code: 'invalid_encoding', error: `not valid ${label} text, the charset the document declares` }
      }
    }
  }
  try {
    return { ok: true, text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) }
  } catch {
    const at = firstInvalidUtf8(bytes)
    const where = at === -1 ? '' : ` (byte ${hexByte(bytes[at] ?? 0)} at offset ${at})`
    return { ok: false, code: 'invalid_encoding', error: `not valid UTF-8 text${where}; save the file as UTF-8 and upload it again` }
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** CRLF/CR → LF, no NUL, no leading BOM, no lone surrogate (a parser may emit one; it cannot be paged). */
export const normaliseText = (text: string): string =>
  text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').replace(/\0/g, '').replace(LONE_SURROGATE, '\uFFFD')

export const trimLines = (text: string): string => text.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()
