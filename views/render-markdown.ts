// Markdown → HTML for previews and answers: rendered by `marked` with raw HTML shown as text
// (a file's or a model's `<img onerror>` or `<script>` appears as written, never as an element),
// then sanitised by `sanitize-html` as a second line of defence. `kb://` URIs become links that
// open the file's preview.
import { Marked, type TokenizerAndRendererExtension } from 'marked'
import sanitizeHtml from 'sanitize-html'

const ALLOWED_TAGS = [
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'br', 'hr', 'blockquote', 'pre', 'code', 'em', 'strong', 'del', 'a',
  'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub', 'kbd', 'img', 'input',
]

const KB_URI = /^kb:\/\/[^\s<>"'`)\]]+/

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** Where a kb:// URI opens: its preview in the workspace page. */
export function previewHref(uri: string): string {
  return `/workspace?uri=${encodeURIComponent(uri)}`
}

const kbUriLink: TokenizerAndRendererExtension = {
  name: 'kbUri',
  level: 'inline',
  start: (src) => src.indexOf('kb://'),
  tokenizer(src) {
    const match = KB_URI.exec(src)
    if (!match) return undefined
    const uri = match[0].replace(/[.,;:!?]+$/, '') // sentence punctuation is not part of the URI
    return { type: 'kbUri', raw: uri, uri }
  },
  renderer: (token) => `<a class="kb-link" href="${escapeHtml(previewHref(String(token.uri)))}">${escapeHtml(String(token.uri))}</a>`,
}

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: { html: ({ text }) => escapeHtml(text) },
  extensions: [kbUriLink],
})

export function renderMarkdown(source: string): string {
  const html = markdown.parse(source, { async: false })
  return sanitizeHtml(html, {
    allowedTags: ALLOWED_TAGS,
    allowedAttributes: {
      a: ['href', 'title', 'class', 'rel', 'target'],
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
        className === 'kb-link'
          ? { tagName, attribs: { ...attribs, class: className, target: '_blank' } }
          : { tagName, attribs: { ...attribs, rel: 'noopener noreferrer', target: '_blank' } },
      input: (tagName, attribs) => ({ tagName, attribs: attribs.type === 'checkbox' ? { ...attribs, disabled: '' } : {} }),
    },
    allowedClasses: { code: [/^language-[\w-]+$/], a: ['kb-link'] },
  })
}
