// Markdown → HTML for previews and answers: rendered by `marked` with raw HTML shown as text
// (a file's or a model's `<img onerror>` or `<script>` appears as written, never as an element),
// then sanitised by `sanitize-html` as a second line of defence. `kb://` URIs become links that
// open the file's preview. In an answer, a citation (`kb://users/demo/a.md @120`) is a link only
// when the turn read that file (`cite` says so): it opens the preview in place at the offset.
import { Marked, type TokenizerAndRendererExtension } from 'marked'
import sanitizeHtml from 'sanitize-html'

const ALLOWED_TAGS = [
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'br', 'hr', 'blockquote', 'pre', 'code', 'em', 'strong', 'del', 'a',
  'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub', 'kbd', 'img', 'input',
]

const KB_URI = /^kb:\/\/[^\s<>"'`)\]]+/
const CITED_OFFSET = /^\s?@\s?(\d{1,9})/

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
      const uri = match[0].replace(/[.,;:!?]+$/, '') // sentence punctuation is not part of the URI
      const offset = uri === match[0] ? CITED_OFFSET.exec(src.slice(uri.length)) : null
      const raw = offset ? uri + offset[0] : uri
      return { type: 'kbUri', raw, uri, offset: offset ? Number(offset[1]) : undefined }
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

const markdownOf = (cite: CitationCheck | undefined) =>
  new Marked({
    gfm: true,
    async: false,
    renderer: { html: ({ text }) => escapeHtml(text) },
    extensions: [kbUriExtension(cite)],
  })

const previewMarkdown = markdownOf(undefined)

export function renderMarkdown(source: string): string {
  return sanitized(previewMarkdown.parse(source, { async: false }))
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
    allowedSchemesByTag: { img: ['https', 'data'] },
    transformTags: {
      a: (tagName, { class: className, ...attribs }) =>
        className === 'kb-link kb-cite'
          ? { tagName, attribs: { ...attribs, class: className } } // opens in place, same tab
          : className === 'kb-link'
            ? { tagName, attribs: { ...attribs, class: className, target: '_blank' } }
            : { tagName, attribs: { ...attribs, rel: 'noopener noreferrer', target: '_blank' } },
      input: (tagName, attribs) => ({ tagName, attribs: attribs.type === 'checkbox' ? { ...attribs, disabled: '' } : {} }),
    },
    allowedClasses: { code: [/^language-[\w-]+$/], a: ['kb-link', 'kb-cite'], span: ['kb-ref'] },
  })
}
