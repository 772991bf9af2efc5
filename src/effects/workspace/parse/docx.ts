// DOCX → text with mammoth. mammoth would inflate the archive itself, trusting what it declares;
// it is given instead a re-packed archive of the XML parts only, each inflated here against the
// byte budget (media are never unpacked: raw text does not need them).
import { Aborted, untilAborted } from './cancellation.ts'
import { failure, inflatedTooLarge, messageOf, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { normaliseText, startsWith, trimLines } from './text-decoding.ts'
import { readZipEntries, writeStoredZip } from './zip.ts'

const OLE_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] // compound file: legacy .doc, encrypted OOXML
const TEXT_PARTS = /\.(xml|rels)$/i

const ENCRYPTED =
  'DOCX is password-protected (encrypted), or is a legacy Word 97–2003 file named .docx; save it as an unprotected .docx and upload it again'
const corrupt = (mime: string, detail: string): ParseOutcome =>
  failure(mime, 'corrupt', `DOCX could not be read (corrupt or not a .docx): ${detail}`)

export const parseDocx = async ({ bytes, mime, limits, signal }: FormatInput): Promise<ParseOutcome> => {
  if (startsWith(bytes, OLE_MAGIC)) return failure(mime, 'encrypted', ENCRYPTED)
  const zip = await readZipEntries(bytes, { maxInflatedBytes: limits.maxInflatedBytes, include: (name) => TEXT_PARTS.test(name) })
  if (!zip.ok) {
    switch (zip.problem) {
      case 'inflated_too_large':
        return inflatedTooLarge(mime, limits.maxInflatedBytes)
      case 'encrypted':
        return failure(mime, 'encrypted', ENCRYPTED)
      case 'corrupt':
        return corrupt(mime, zip.detail)
    }
  }
  const mammoth = (await import('mammoth')).default
  try {
    const result = await untilAborted(mammoth.extractRawText({ buffer: writeStoredZip(zip.entries) }), signal)
    return success(mime, 'mammoth', trimLines(normaliseText(result.value)))
  } catch (cause) {
    if (cause instanceof Aborted) throw cause
    return corrupt(mime, messageOf(cause))
  }
}
