// Markdown and plain text (and any other text/* type): decoded, kept as they are.
import { failure, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { decodeText } from './text-decoding.ts'

export const parseText = ({ bytes, mime }: FormatInput, parser: 'markdown' | 'text'): ParseOutcome => {
  const decoded = decodeText(bytes, { allowNul: 'late' })
  return decoded.ok ? success(mime, parser, decoded.text) : failure(mime, decoded.code, decoded.error)
}

/** A file of unknown type is text when it decodes as text without any NUL; otherwise undefined. */
export const sniffText = (bytes: Uint8Array): ParseOutcome | undefined => {
  const decoded = decodeText(bytes, { allowNul: 'never' })
  return decoded.ok ? success('text/plain', 'text', decoded.text) : undefined
}
