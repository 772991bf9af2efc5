// CSV is read as text (line endings normalised later, quoted newlines included): search and
// `read` work on the rows as written.
import { failure, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { decodeText } from './text-decoding.ts'

export const parseCsv = ({ bytes, mime }: FormatInput): ParseOutcome => {
  const decoded = decodeText(bytes, { allowNul: 'late' })
  return decoded.ok ? success(mime, 'csv', decoded.text) : failure(mime, decoded.code, decoded.error)
}
