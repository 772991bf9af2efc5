// HTML → readable text: scripts, styles and link targets dropped; tables kept cell by cell.
import { throwIfAborted } from './cancellation.ts'
import { failure, success, type FormatInput, type ParseOutcome } from './parse-outcome.ts'
import { decodeText, normaliseText, trimLines } from './text-decoding.ts'

/**
 * `<meta charset=…>` or `<meta http-equiv=content-type content="…; charset=…">` near the start.
 * A page whose ASCII-readable `<meta>` says UTF-16 cannot be UTF-16 (only a BOM can say that, and
 * the decoder honours a BOM first): the HTML standard's prescan reads it as UTF-8, and so do we.
 */
export const declaredHtmlCharset = (bytes: Uint8Array): string | undefined => {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 2048))
  const declared = /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)/i.exec(head)?.[1]
  if (declared === undefined) return undefined
  if (/^(utf-?16(be|le)?|ucs-?2|unicode(fffe)?|iso-10646-ucs-2|csunicode)$/i.test(declared)) return 'utf-8'
  if (/^x-user-defined$/i.test(declared)) return 'windows-1252'
  return declared
}

const SKIPPED_HTML = ['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'img', 'head > meta']

export const htmlToText = async (html: string): Promise<string> => {
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

export const parseHtml = async ({ bytes, mime, signal }: FormatInput): Promise<ParseOutcome> => {
  const decoded = decodeText(bytes, { charset: declaredHtmlCharset(bytes), allowNul: 'late' })
  if (!decoded.ok) return failure(mime, decoded.code, decoded.error)
  throwIfAborted(signal)
  return success(mime, 'html-to-text', await htmlToText(normaliseText(decoded.text)))
}
