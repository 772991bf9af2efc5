// L2 parsing (SPEC §1, §8): raw file bytes → plain text body. Never throws: every failure is
// an `ok: false` outcome with a reason a person can act on. The raw bytes are always kept by
// the caller, so a failed parse loses nothing.
import { DOCX_MIME, OCTET_STREAM, essenceOf, extensionOf, isTextMime, mimeFromName } from './mime.ts'
import { codePointLength } from './text-paging.ts'

export type ParseErrorCode =
  | 'too_large' // raw input over `maxBytes`, or a DOCX that unzips past `maxUnzippedBytes`
  | 'text_too_long' // parsed text over `maxChars`
  | 'invalid_encoding' // text that is not valid UTF-8 (or the declared charset)
  | 'binary' // a text type whose bytes are binary data
  | 'invalid_json'
  | 'encrypted' // password-protected PDF or DOCX
  | 'corrupt' // a PDF or DOCX that cannot be read
  | 'no_text' // a readable PDF without a text layer
  | 'unsupported' // a type with no text parser
  | 'aborted'
  | 'parser_failed' // a parser crashed in an unexpected way

export type ParseOutcome =
  | { readonly ok: true; readonly mime: string; readonly text: string; readonly parser: string }
  | {
      readonly ok: false
      readonly mime: string
      readonly error: string
      /** Always set by `parseDocument`; optional so other code may build outcomes by hand. */
      readonly code?: ParseErrorCode
    }

export interface ParseLimits {
  /** Raw input size, in bytes. */
  readonly maxBytes: number
  /** Parsed text size, in Unicode code points. */
  readonly maxChars: number
  /** Total declared uncompressed size of a DOCX's zip entries (zip-bomb guard). */
  readonly maxUnzippedBytes: number
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxBytes: 50 * 1024 * 1024,
  maxChars: 20_000_000,
  maxUnzippedBytes: 200 * 1024 * 1024,
}

/** Bump when the text produced for the same bytes changes, so cached derivatives are rebuilt. */
export const PARSE_VERSION = 1

export interface ParseInput {
  /** File name (or path/URI: only the last segment counts); its extension picks the parser. */
  readonly name: string
  readonly bytes: Uint8Array
  /** Declared media type; used only when the name has no known extension. */
  readonly mime?: string | undefined
  readonly signal?: AbortSignal | undefined
  readonly limits?: Partial<ParseLimits> | undefined
}

type Kind = 'markdown' | 'text' | 'html' | 'json' | 'csv' | 'pdf' | 'docx' | 'unknown' | 'binary'

const KIND_BY_MIME: Readonly<Record<string, Kind>> = {
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/json': 'json',
  'text/csv': 'csv',
  'application/pdf': 'pdf',
  [DOCX_MIME]: 'docx',
}

const failure = (mime: string, code: ParseErrorCode, error: string): ParseOutcome => ({ ok: false, mime, code, error })
const success = (mime: string, parser: string, text: string): ParseOutcome => ({ ok: true, mime, parser, text })

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>): boolean =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b)

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d] // %PDF-
const OLE_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] // compound file: legacy .doc, encrypted OOXML

/** The extension wins when it is known (browsers often send `application/octet-stream` or
 *  `application/vnd.ms-excel` for CSV); then the declared type; then a PDF signature. */
const resolveType = (name: string, declared: string | undefined, bytes: Uint8Array): { mime: string; kind: Kind } => {
  const byName = mimeFromName(name)
  const declaredEssence = essenceOf(declared ?? '')
  const mime =
    byName !== OCTET_STREAM
      ? byName
      : declaredEssence !== '' && declaredEssence !== OCTET_STREAM
        ? declaredEssence
        : startsWith(bytes, PDF_MAGIC)
          ? 'application/pdf'
          : OCTET_STREAM
  const kind = KIND_BY_MIME[mime] ?? (isTextMime(mime) ? 'text' : mime === OCTET_STREAM ? 'unknown' : 'binary')
  return { mime, kind }
}

// --- text decoding ------------------------------------------------------------------------------

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

type DecodeFailure = { readonly ok: false; readonly code: ParseErrorCode; readonly error: string }
type Decoded = { readonly ok: true; readonly text: string } | DecodeFailure

/**
 * Bytes → string. A UTF-8 BOM is stripped; a UTF-16 BOM switches to UTF-16. Otherwise the
 * bytes must be valid UTF-8 (or `charset`, when one was declared and is known).
 */
const decodeText = (bytes: Uint8Array, { charset, allowNul }: { charset?: string | undefined; allowNul: 'late' | 'never' }): Decoded => {
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

const isUtf8Label = (label: string): boolean => /^(utf-?8|unicode-1-1-utf-8)$/i.test(label.trim())

/** `<meta charset=…>` or `<meta http-equiv=content-type content="…; charset=…">` near the start. */
const declaredHtmlCharset = (bytes: Uint8Array): string | undefined => {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 2048))
  const match = /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)/i.exec(head)
  return match?.[1]
}

// --- normalisation ------------------------------------------------------------------------------

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** CRLF/CR → LF, no NUL, no leading BOM, no lone surrogate (a parser may emit one; it cannot be paged). */
export const normaliseText = (text: string): string =>
  text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').replace(/\0/g, '').replace(LONE_SURROGATE, '\uFFFD')

const trimLines = (text: string): string => text.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()

// --- JSON ---------------------------------------------------------------------------------------

interface JsonSyntaxError {
  /** UTF-16 index of the offending character (text.length at an unexpected end). */
  readonly index: number
  readonly reason: string
}

const describeChar = (text: string, index: number): string => {
  const ch = String.fromCodePoint(text.codePointAt(index) ?? 0)
  return /^[\x21-\x7e]$/.test(ch) ? `'${ch}'` : `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
}

/**
 * Locates the first syntax error in `text` under RFC 8259, without recursion (deep nesting
 * must not overflow the stack). Returns undefined for valid JSON. Used only after `JSON.parse`
 * failed, whose messages do not always say where.
 */
export const findJsonSyntaxError = (text: string): JsonSyntaxError | undefined => {
  type State = 'value' | 'firstValue' | 'firstKey' | 'key' | 'colon' | 'after'
  const stack: Array<'{' | '['> = []
  let state: State = 'value'
  let i = 0
  const n = text.length
  const skipSpace = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break
      i++
    }
  }
  const unexpected = (expected: string): JsonSyntaxError =>
    i >= n ? { index: n, reason: `unexpected end of input, expected ${expected}` } : { index: i, reason: `unexpected ${describeChar(text, i)}, expected ${expected}` }
  const scanString = (): JsonSyntaxError | undefined => {
    i++ // opening quote
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i++
        return undefined
      }
      if (c < 0x20) return { index: i, reason: `unescaped control character ${describeChar(text, i)} in a string` }
      if (c === 0x5c) {
        const e = text[i + 1]
        if (e === undefined) break
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { index: i, reason: 'invalid \\u escape in a string (needs 4 hex digits)' }
          i += 6
          continue
        }
        if (!'"\\/bfnrt'.includes(e)) return { index: i, reason: `invalid escape '\\${e}' in a string` }
        i += 2
        continue
      }
      i++
    }
    return { index: n, reason: 'unterminated string' }
  }
  const scanNumber = (): JsonSyntaxError | undefined => {
    const match = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
    match.lastIndex = i
    const found = match.exec(text)
    if (found === null || found[0] === '-' || found[0] === '') return unexpected('a value')
    i += found[0].length
    // '01', '1.', '1e' leave a digit, '.', or 'e' behind that nothing else accepts.
    const next = text[i]
    if (next !== undefined && /[0-9.eE+-]/.test(next)) return { index: i, reason: `invalid number (unexpected ${describeChar(text, i)})` }
    return undefined
  }
  while (true) {
    skipSpace()
    const ch = text[i]
    switch (state) {
      case 'firstValue':
        if (ch === ']') {
          stack.pop()
          i++
          state = 'after'
          continue
        }
      // falls through
      case 'value': {
        if (ch === '{') {
          stack.push('{')
          i++
          state = 'firstKey'
          continue
        }
        if (ch === '[') {
          stack.push('[')
          i++
          state = 'firstValue'
          continue
        }
        let error: JsonSyntaxError | undefined
        if (ch === '"') error = scanString()
        else if (ch !== undefined && /[-0-9]/.test(ch)) error = scanNumber()
        else {
          const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i))
          if (literal === undefined) return unexpected('a value')
          i += literal.length
        }
        if (error !== undefined) return error
        state = 'after'
        continue
      }
      case 'firstKey':
        if (ch === '}') {
          stack.pop()
          i++
          state = 'after'
          continue
        }
      // falls through
      case 'key': {
        if (ch !== '"') return unexpected(state === 'firstKey' ? "a property name in double quotes or '}'" : 'a property name in double quotes')
        const error = scanString()
        if (error !== undefined) return error
        state = 'colon'
        continue
      }
      case 'colon':
        if (ch !== ':') return unexpected("':' after a property name")
        i++
        state = 'value'
        continue
      case 'after': {
        const top = stack.at(-1)
        if (top === undefined) return ch === undefined ? undefined : unexpected('the end of the input (there is more than one value)')
        const close = top === '{' ? '}' : ']'
        if (ch === ',') {
          i++
          state = top === '{' ? 'key' : 'value'
          continue
        }
        if (ch === close) {
          stack.pop()
          i++
          continue
        }
        return unexpected(`',' or '${close}'`)
      }
    }
  }
}

/** Re-indents valid JSON with two spaces, copying every string and number token verbatim
 *  (`JSON.stringify(JSON.parse(…))` would turn 1e400 into null and round big integers). */
export const prettyPrintJson = (text: string): string => {
  const out: string[] = []
  const space = /[ \t\n\r]*/y
  const bare = /[^ \t\n\r,:{}[\]"]+/y // numbers, true, false, null
  let depth = 0
  let i = 0
  const n = text.length
  const newline = (): void => {
    out.push('\n', '  '.repeat(depth))
  }
  const skipSpace = (from: number): number => {
    space.lastIndex = from
    space.exec(text)
    return space.lastIndex
  }
  while (i < n) {
    const ch = text[i]
    if (ch === '"') {
      // The closing quote is the first one preceded by an even number of backslashes.
      let close = text.indexOf('"', i + 1)
      for (;;) {
        let backslashes = 0
        while (text[close - 1 - backslashes] === '\\') backslashes++
        if (close === -1 || backslashes % 2 === 0) break
        close = text.indexOf('"', close + 1)
      }
      const end = close === -1 ? n : close + 1
      out.push(text.slice(i, end))
      i = end
    } else if (ch === '{' || ch === '[') {
      const next = skipSpace(i + 1)
      if (text[next] === (ch === '{' ? '}' : ']')) {
        out.push(ch === '{' ? '{}' : '[]')
        i = next + 1
      } else {
        out.push(ch)
        depth++
        newline()
        i++
      }
    } else if (ch === '}' || ch === ']') {
      depth--
      newline()
      out.push(ch)
      i++
    } else if (ch === ',') {
      out.push(',')
      newline()
      i++
    } else if (ch === ':') {
      out.push(': ')
      i++
    } else if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i = skipSpace(i)
    } else {
      bare.lastIndex = i
      const token = bare.exec(text)
      const length = token === null ? 1 : token[0].length
      out.push(text.slice(i, i + length))
      i += length
    }
  }
  return out.join('')
}

const lineAndColumn = (text: string, index: number): { line: number; column: number } => {
  const before = text.slice(0, index)
  const lastBreak = before.lastIndexOf('\n')
  return { line: before.split('\n').length, column: codePointLength(before.slice(lastBreak + 1)) + 1 }
}

const parseJson = (text: string): { ok: true; text: string } | { ok: false; error: string } => {
  try {
    JSON.parse(text)
    return { ok: true, text: prettyPrintJson(text) }
  } catch (cause) {
    const located = findJsonSyntaxError(text)
    if (located === undefined) return { ok: false, error: `invalid JSON: ${messageOf(cause)}` }
    const { line, column } = lineAndColumn(text, located.index)
    const position = codePointLength(text.slice(0, located.index))
    return { ok: false, error: `invalid JSON at line ${line}, column ${column} (position ${position}): ${located.reason}` }
  }
}

// --- PDF ----------------------------------------------------------------------------------------

const messageOf = (cause: unknown): string => {
  if (cause instanceof Error) return cause.message
  if (typeof cause === 'object' && cause !== null && 'message' in cause && typeof cause.message === 'string') return cause.message
  return String(cause)
}
const nameOf = (cause: unknown): string =>
  typeof cause === 'object' && cause !== null && 'name' in cause && typeof cause.name === 'string' ? cause.name : ''

class Aborted extends Error {
  override readonly name = 'Aborted'
}
const throwIfAborted = (signal: AbortSignal | undefined): void => {
  if (signal?.aborted === true) throw new Aborted('aborted')
}

/** Settles with `work`, or rejects with `Aborted` as soon as `signal` aborts. */
const untilAborted = <A>(work: Promise<A>, signal: AbortSignal | undefined): Promise<A> => {
  if (signal === undefined) return work
  if (signal.aborted) return Promise.reject(new Aborted('aborted'))
  return new Promise<A>((resolve, reject) => {
    const onAbort = (): void => reject(new Aborted('aborted'))
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (cause: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(cause) // as is: callers classify pdf.js exceptions by name
      },
    )
  })
}

const parsePdf = async (bytes: Uint8Array, mime: string, limits: ParseLimits, signal: AbortSignal | undefined): Promise<ParseOutcome> => {
  const { getDocumentProxy } = await import('unpdf')
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    // pdf.js may transfer (detach) the buffer it is given, so it gets a copy; and it refuses a
    // Buffer (whose `slice` would share memory anyway), so the copy is a plain Uint8Array.
    const loading = getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
    // If we stop waiting, the document still loads: release it when it does.
    const release = (): void => void loading.then((doc) => doc.loadingTask.destroy(), () => undefined)
    signal?.addEventListener('abort', release, { once: true })
    try {
      pdf = await untilAborted(loading, signal)
    } finally {
      signal?.removeEventListener('abort', release)
    }
  } catch (cause) {
    if (cause instanceof Aborted) throw cause
    if (nameOf(cause) === 'PasswordException') {
      return failure(mime, 'encrypted', 'PDF is password-protected (encrypted); remove the password and upload it again')
    }
    return failure(mime, 'corrupt', `PDF could not be read (corrupt or not a PDF): ${messageOf(cause)}`)
  }
  const abort = (): void => void pdf.loadingTask.destroy()
  signal?.addEventListener('abort', abort, { once: true })
  try {
    const pages: string[] = []
    let characters = 0
    for (let number = 1; number <= pdf.numPages; number++) {
      throwIfAborted(signal)
      const page = await pdf.getPage(number)
      const content = await page.getTextContent()
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('')
      page.cleanup()
      const tidy = trimLines(normaliseText(text))
      if (tidy !== '') pages.push(tidy)
      // Stop early rather than hold a whole oversized text in memory.
      characters += codePointLength(tidy)
      if (characters > limits.maxChars) return textTooLong(mime, `more than ${characters.toLocaleString('en-US')}`, limits)
    }
    throwIfAborted(signal)
    if (pages.length === 0) {
      return failure(
        mime,
        'no_text',
        `PDF has ${pdf.numPages} page${pdf.numPages === 1 ? '' : 's'} but no extractable text (a scan needs OCR, which is not supported)`,
      )
    }
    return success(mime, 'unpdf', pages.join('\n\n'))
  } catch (cause) {
    if (cause instanceof Aborted || signal?.aborted === true) throw new Aborted('aborted')
    return failure(mime, 'corrupt', `PDF could not be read (corrupt or damaged page content): ${messageOf(cause)}`)
  } finally {
    signal?.removeEventListener('abort', abort)
    await pdf.loadingTask.destroy().catch(() => undefined)
  }
}

// --- DOCX ---------------------------------------------------------------------------------------

/** Sum of the uncompressed sizes a zip's central directory declares; undefined if there is none. */
export const declaredUnzippedSize = (bytes: Uint8Array): number | undefined => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  // The end-of-central-directory record is 22 bytes plus a comment of up to 65535.
  for (let end = bytes.length - 22; end >= Math.max(0, bytes.length - 22 - 0xffff); end--) {
    if (view.getUint32(end, true) !== 0x06054b50) continue
    const entries = view.getUint16(end + 10, true)
    let at = view.getUint32(end + 16, true)
    let total = 0
    for (let k = 0; k < entries; k++) {
      if (at + 46 > bytes.length || view.getUint32(at, true) !== 0x02014b50) return undefined
      const size = view.getUint32(at + 24, true)
      total += size === 0xffffffff ? Number.POSITIVE_INFINITY : size // zip64: too big for a document anyway
      at += 46 + view.getUint16(at + 28, true) + view.getUint16(at + 30, true) + view.getUint16(at + 32, true)
    }
    return total
  }
  return undefined
}

const parseDocx = async (bytes: Uint8Array, mime: string, limits: ParseLimits, signal: AbortSignal | undefined): Promise<ParseOutcome> => {
  if (startsWith(bytes, OLE_MAGIC)) {
    return failure(
      mime,
      'encrypted',
      'DOCX is password-protected (encrypted), or is a legacy Word 97–2003 file named .docx; save it as an unprotected .docx and upload it again',
    )
  }
  const unzipped = declaredUnzippedSize(bytes)
  if (unzipped !== undefined && unzipped > limits.maxUnzippedBytes) {
    return failure(mime, 'too_large', `DOCX unpacks to ${formatBytes(unzipped)}, over the ${formatBytes(limits.maxUnzippedBytes)} limit; raw bytes kept`)
  }
  const mammoth = (await import('mammoth')).default
  try {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const result = await untilAborted(mammoth.extractRawText({ buffer }), signal)
    return success(mime, 'mammoth', trimLines(normaliseText(result.value)))
  } catch (cause) {
    if (cause instanceof Aborted) throw cause
    return failure(mime, 'corrupt', `DOCX could not be read (corrupt or not a .docx): ${messageOf(cause)}`)
  }
}

// --- HTML ---------------------------------------------------------------------------------------

const SKIPPED_HTML = ['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'img', 'head > meta']

const parseHtml = async (html: string): Promise<string> => {
  const { convert } = await import('html-to-text')
  const hasBody = /<body[\s>]/i.test(html)
  return trimLines(
    convert(html, {
      wordwrap: false,
      // With a <body>, the <title> is read too (it is often the best one-line description).
      ...(hasBody ? { baseElements: { selectors: ['title', 'body'] } } : {}),
      selectors: [
        ...SKIPPED_HTML.map((selector) => ({ selector, format: 'skip' })),
        { selector: 'a', options: { ignoreHref: true } },
        ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
        // Wrapped cells would split phrases across lines, which search cannot match.
        { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false, maxColumnWidth: 10_000 } },
      ],
    }),
  )
}

// --- entry point --------------------------------------------------------------------------------

const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} bytes`

const UNSUPPORTED_HINTS: Readonly<Record<string, string>> = {
  doc: 'save it as .docx or PDF',
  rtf: 'save it as .docx or PDF',
  odt: 'save it as .docx or PDF',
  xls: 'export it as CSV',
  xlsx: 'export it as CSV',
  ppt: 'export it as PDF',
  pptx: 'export it as PDF',
}

const unsupported = (name: string, mime: string): ParseOutcome => {
  const extension = extensionOf(name)
  const hint = UNSUPPORTED_HINTS[extension]
  return failure(
    mime,
    'unsupported',
    `unsupported file type (${extension === '' ? 'no extension' : `.${extension}`}, ${mime}); raw bytes kept${hint === undefined ? '' : ` (${hint} to make it readable)`}`,
  )
}

const textTooLong = (mime: string, length: string, limits: ParseLimits): ParseOutcome =>
  failure(
    mime,
    'text_too_long',
    `parsed text is too long: ${length} characters, over the ${limits.maxChars.toLocaleString('en-US')} limit; raw bytes kept`,
  )

const finish = (outcome: ParseOutcome, limits: ParseLimits): ParseOutcome => {
  if (!outcome.ok) return outcome
  const text = normaliseText(outcome.text)
  const length = codePointLength(text)
  if (length > limits.maxChars) return textTooLong(outcome.mime, length.toLocaleString('en-US'), limits)
  return { ...outcome, text }
}

const decodeFailure = (mime: string, decoded: DecodeFailure): ParseOutcome => failure(mime, decoded.code, decoded.error)

const parseByKind = async (
  input: ParseInput,
  resolved: { mime: string; kind: Kind },
  limits: ParseLimits,
): Promise<ParseOutcome> => {
  const { bytes, name, signal } = input
  const { mime, kind } = resolved
  switch (kind) {
    case 'pdf':
      return parsePdf(bytes, mime, limits, signal)
    case 'docx':
      return parseDocx(bytes, mime, limits, signal)
    case 'binary':
      return unsupported(name, mime)
    case 'unknown': {
      const decoded = decodeText(bytes, { allowNul: 'never' })
      return decoded.ok ? success('text/plain', 'text', decoded.text) : unsupported(name, mime)
    }
    case 'html': {
      const decoded = decodeText(bytes, { charset: declaredHtmlCharset(bytes), allowNul: 'late' })
      if (!decoded.ok) return decodeFailure(mime, decoded)
      throwIfAborted(signal)
      return success(mime, 'html-to-text', await parseHtml(normaliseText(decoded.text)))
    }
    case 'json': {
      const decoded = decodeText(bytes, { allowNul: 'never' })
      if (!decoded.ok) return decodeFailure(mime, decoded)
      const parsed = parseJson(decoded.text.replace(/^\uFEFF/, ''))
      return parsed.ok ? success(mime, 'json', parsed.text) : failure(mime, 'invalid_json', parsed.error)
    }
    case 'markdown':
    case 'csv':
    case 'text': {
      const decoded = decodeText(bytes, { allowNul: 'late' })
      if (!decoded.ok) return decodeFailure(mime, decoded)
      return success(mime, kind, decoded.text)
    }
  }
}

/**
 * Raw bytes → parsed text (L2). The parser is chosen by the file name's extension, then the
 * declared `mime`, then content (a PDF signature; otherwise UTF-8 text is read as text/plain).
 * Never throws and never rejects.
 */
export const parseDocument = async (input: ParseInput): Promise<ParseOutcome> => {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...input.limits }
  let mime = OCTET_STREAM
  try {
    const resolved = resolveType(input.name, input.mime, input.bytes)
    mime = resolved.mime
    throwIfAborted(input.signal)
    if (input.bytes.length > limits.maxBytes) {
      return failure(
        mime,
        'too_large',
        `file is too large to parse: ${formatBytes(input.bytes.length)}, over the ${formatBytes(limits.maxBytes)} limit; raw bytes kept`,
      )
    }
    const outcome = await parseByKind(input, resolved, limits)
    throwIfAborted(input.signal)
    return finish(outcome, limits)
  } catch (cause) {
    if (cause instanceof Aborted || input.signal?.aborted === true) return failure(mime, 'aborted', 'parsing was cancelled')
    return failure(mime, 'parser_failed', `the parser failed unexpectedly: ${messageOf(cause)}`)
  }
}
