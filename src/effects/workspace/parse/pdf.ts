// PDF → text with unpdf (pdf.js), page by page, under the decode budget of pdfjs-decode-budget.ts.
import { Aborted, throwIfAborted, untilAborted } from './cancellation.ts'
import { codePointLength } from '../text-paging.ts'
import {
  failure,
  inflatedTooLarge,
  messageOf,
  nameOf,
  success,
  textTooLong,
  type FormatInput,
  type ParseOutcome,
} from './parse-outcome.ts'
import { loadBudgetedUnpdf, withDecodeBudget } from './pdfjs-decode-budget.ts'
import { normaliseText, trimLines } from './text-decoding.ts'

const readPdf = async ({ bytes, mime, limits, signal }: FormatInput): Promise<ParseOutcome> => {
  const { getDocumentProxy } = await loadBudgetedUnpdf()
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
      if (characters > limits.maxChars) return textTooLong(mime, `more than ${characters.toLocaleString('en-US')}`, limits.maxChars)
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

export const parsePdf = async (input: FormatInput): Promise<ParseOutcome> => {
  // pdf.js swallows most errors thrown while it decodes (it skips the stream and goes on), so
  // the budget's own record, not the outcome, says whether the document went over it.
  const { result, exceeded } = await withDecodeBudget(input.limits.maxInflatedBytes, () => readPdf(input))
  if (exceeded) return inflatedTooLarge(input.mime, input.limits.maxInflatedBytes)
  if (result.status === 'rejected') throw result.reason
  return result.value
}
