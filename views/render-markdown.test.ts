import { describe, expect, it } from 'vitest'
import { renderMarkdown } from './render-markdown.ts'

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
  ])('neutralises %s', (input) => {
    const html = renderMarkdown(input)
    expect(html).not.toMatch(/<script|onerror|onclick|onload|javascript:|<iframe|<svg/i)
  })
})
