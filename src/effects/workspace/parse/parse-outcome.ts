// What every parser returns, and the limits it works within. Parsing never throws: each failure
// is an `ok: false` outcome with a reason a person can act on, and the caller keeps the raw
// bytes, so a failed parse loses nothing.
import { availableParallelism } from 'node:os'

export type ParseErrorCode =
  | 'too_large' // raw input over `maxBytes`
  | 'inflated_too_large' // compressed streams inside the file unpack past `maxInflatedBytes`
  | 'text_too_long' // extracted text over `maxChars`
  | 'memory_limit' // the parser needed more memory than its worker may use
  | 'time_limit' // the parser ran longer than its time limit
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
      /** Always set by the parsers; optional so other code may build outcomes by hand. */
      readonly code?: ParseErrorCode
    }

export interface ParseLimits {
  /** Raw input size, in bytes. */
  readonly maxBytes: number
  /** Extracted text, in Unicode code points (`limits.maxParsedChars`). */
  readonly maxChars: number
  /** Everything decompressed while reading one file: zip entries of a DOCX, streams of a PDF. */
  readonly maxInflatedBytes: number
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxBytes: 50 * 1024 * 1024,
  maxChars: 5_000_000,
  maxInflatedBytes: 64 * 1024 * 1024,
}

export const DEFAULT_PARSE_TIMEOUT_MS = 30_000
export const DEFAULT_PARSE_MEMORY_MB = 512

/** Parser processes: one fewer than the cores, from 1 to 4. */
export const defaultParserProcesses = (): number => Math.max(1, Math.min(4, availableParallelism() - 1))

/** Bump when the text produced for the same bytes changes, so cached derivatives are rebuilt. */
export const PARSE_VERSION = 1

export const failure = (mime: string, code: ParseErrorCode, error: string): ParseOutcome => ({ ok: false, mime, code, error })
export const success = (mime: string, parser: string, text: string): ParseOutcome => ({ ok: true, mime, parser, text })

export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} bytes`

const count = (n: number): string => n.toLocaleString('en-US')

// The failures that name a budget start with the limit they hit, so a person reading
// `parse_error` (or the task center) sees which setting to change.
export const inflatedTooLarge = (mime: string, limit: number): ParseOutcome =>
  failure(
    mime,
    'inflated_too_large',
    `inflated size over ${count(limit)} bytes: the compressed data inside the file unpacks to more than limits.maxInflatedBytes allows; raw bytes kept`,
  )

export const textTooLong = (mime: string, length: string, limit: number): ParseOutcome =>
  failure(mime, 'text_too_long', `text limit: ${length} characters of text, over the limit of ${count(limit)} (limits.maxParsedChars); raw bytes kept`)

export const memoryLimit = (mime: string, limitMb: number): ParseOutcome =>
  failure(mime, 'memory_limit', `memory limit: parsing needed more than ${limitMb} MB (limits.parseMemoryMb); raw bytes kept`)

export const timeLimit = (mime: string, seconds: number): ParseOutcome =>
  failure(mime, 'time_limit', `time limit ${seconds} s: parsing took longer (limits.parseTimeoutSeconds); raw bytes kept`)

export const inputTooLarge = (mime: string, size: number, limit: number): ParseOutcome =>
  failure(mime, 'too_large', `file is too large to parse: ${formatBytes(size)}, over the ${formatBytes(limit)} limit; raw bytes kept`)

export const cancelled = (mime: string, why = 'parsing was cancelled'): ParseOutcome => failure(mime, 'aborted', why)

export const messageOf = (cause: unknown): string => {
  if (cause instanceof Error) return cause.message
  if (typeof cause === 'object' && cause !== null && 'message' in cause && typeof cause.message === 'string') return cause.message
  return String(cause)
}

export const nameOf = (cause: unknown): string =>
  typeof cause === 'object' && cause !== null && 'name' in cause && typeof cause.name === 'string' ? cause.name : ''

/** What each format parser receives once the type is known and the size checked. */
export interface FormatInput {
  readonly name: string
  readonly bytes: Uint8Array
  readonly mime: string
  readonly limits: ParseLimits
  readonly signal?: AbortSignal | undefined
}
