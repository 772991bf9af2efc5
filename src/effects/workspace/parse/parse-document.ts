// Raw bytes → parsed text (L2), in the calling thread. The parser is chosen by the file name's
// extension, then the declared type, then content (a PDF signature; otherwise UTF-8 text is read
// as text/plain). Never throws and never rejects. The server runs this in a worker
// (document-parser.ts), which adds the memory and time budgets a thread cannot enforce on itself.
import { DOCX_MIME, OCTET_STREAM, essenceOf, extensionOf, isTextMime, mimeFromName } from '../mime.ts'
import { codePointLength } from '../text-paging.ts'
import { Aborted, throwIfAborted } from './cancellation.ts'
import { parseCsv } from './csv.ts'
import { parseDocx } from './docx.ts'
import { parseHtml } from './html.ts'
import { parseJson } from './json.ts'
import {
  DEFAULT_PARSE_LIMITS,
  cancelled,
  failure,
  inputTooLarge,
  messageOf,
  textTooLong,
  type FormatInput,
  type ParseLimits,
  type ParseOutcome,
} from './parse-outcome.ts'
import { parsePdf } from './pdf.ts'
import { startsWith, normaliseText } from './text-decoding.ts'
import { parseText, sniffText } from './text.ts'

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

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d] // %PDF-

/** The extension wins when it is known (browsers often send `application/octet-stream` or
 *  `application/vnd.ms-excel` for CSV); then the declared type; then a PDF signature. */
export const resolveType = (name: string, declared: string | undefined, bytes: Uint8Array): { mime: string; kind: Kind } => {
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

const finish = (outcome: ParseOutcome, limits: ParseLimits): ParseOutcome => {
  if (!outcome.ok) return outcome
  const text = normaliseText(outcome.text)
  const length = codePointLength(text)
  if (length > limits.maxChars) return textTooLong(outcome.mime, length.toLocaleString('en-US'), limits.maxChars)
  return { ...outcome, text }
}

const parseByKind = async (kind: Kind, input: FormatInput): Promise<ParseOutcome> => {
  switch (kind) {
    case 'pdf':
      return parsePdf(input)
    case 'docx':
      return parseDocx(input)
    case 'html':
      return parseHtml(input)
    case 'json':
      return parseJson(input)
    case 'csv':
      return parseCsv(input)
    case 'markdown':
    case 'text':
      return parseText(input, kind)
    case 'unknown':
      return sniffText(input.bytes) ?? unsupported(input.name, input.mime)
    case 'binary':
      return unsupported(input.name, input.mime)
  }
}

export const parseDocument = async (input: ParseInput): Promise<ParseOutcome> => {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...input.limits }
  let mime = OCTET_STREAM
  try {
    const resolved = resolveType(input.name, input.mime, input.bytes)
    mime = resolved.mime
    throwIfAborted(input.signal)
    if (input.bytes.length > limits.maxBytes) return inputTooLarge(mime, input.bytes.length, limits.maxBytes)
    const outcome = await parseByKind(resolved.kind, { name: input.name, bytes: input.bytes, mime, limits, signal: input.signal })
    throwIfAborted(input.signal)
    return finish(outcome, limits)
  } catch (cause) {
    if (cause instanceof Aborted || input.signal?.aborted === true) return cancelled(mime)
    return failure(mime, 'parser_failed', `the parser failed unexpectedly: ${messageOf(cause)}`)
  }
}
