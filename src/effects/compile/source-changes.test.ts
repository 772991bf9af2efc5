import { describe, expect, it } from 'vitest'
import { citeSourceAnew, isSummaryNameOf } from './source-changes.ts'
import { summaryPage } from './compile-prompts.ts'

describe('isSummaryNameOf: a name the summary of a source may keep when the source moves', () => {
  it.each([
    ['a.md', 'a.md', true],
    ['notes.md', 'notes', true],
    ['a.md.summary.md', 'a.md', true],
    ['a.md.2.summary.md', 'a.md', true],
    ['a.md.17.summary.md', 'a.md', true],
    ['a.md.1.summary.md', 'a.md', false],
    ['a.md.02.summary.md', 'a.md', false],
    ['b.md', 'a.md', false],
    ['a.md.x.summary.md', 'a.md', false],
  ])('%s for %s: %s', (name, source, expected) => {
    expect(isSummaryNameOf(name, source)).toBe(expected)
  })
})

describe('citeSourceAnew', () => {
  it('names the source anew in the title and the Source line, and leaves the summary text alone', () => {
    const page = summaryPage({ name: 'a.md', uri: 'kb://users/al/docs/a.md', summary: 'Source: kb://users/al/docs/a.md is quoted here.', engine: 'local' })
    const cited = citeSourceAnew(page, { name: 'my notes.md', uri: 'kb://users/al/new place/my notes.md' })
    expect(cited).toBe(page.replace('# Summary: a.md', '# Summary: my notes.md').replace('Source: kb://users/al/docs/a.md\n', 'Source: kb://users/al/new%20place/my%20notes.md\n'))
  })
})
