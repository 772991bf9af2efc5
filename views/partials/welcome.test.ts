import { describe, expect, it } from 'vitest'
import { renderFragmentSync } from '../render.ts'
import { directoryName, exampleQuestions, Welcome } from './welcome.tsx'

describe('exampleQuestions', () => {
  it('asks about a real document, another document and a subdirectory', () => {
    const questions = exampleQuestions([
      { name: 'notes', kind: 'directory' },
      { name: 'knowagent-guide.md', kind: 'file' },
      { name: 'operations-runbook.md', kind: 'file' },
    ])
    expect(questions).toEqual([
      'What are the key points of knowagent-guide.md?',
      'Summarise operations-runbook.md.',
      'What is in notes/?',
    ])
  })

  it('asks about no subfolder that holds no file', () => {
    expect(exampleQuestions([{ name: 'new', kind: 'directory', empty: true }, { name: 'samples', kind: 'directory', empty: false }])).toEqual([
      'What is in samples/?',
      'Summarise what these files are about.',
    ])
    expect(exampleQuestions([{ name: 'new', kind: 'directory', empty: true }])).toEqual([])
  })

  it('asks for no second document when the other files are data or a README, and then for the folder', () => {
    expect(exampleQuestions([{ name: 'a.md', kind: 'file' }, { name: 'README.md', kind: 'file' }, { name: 'b.csv', kind: 'file' }])).toEqual([
      'What are the key points of a.md?',
      'Summarise what these files are about.',
    ])
  })

  // Issue 33: "What can you do in this workspace?" and "How do I add files for you to read?" were
  // offered here, and the local model could only answer them with "Nothing in … covers".
  it('offers no question for an empty directory, where there is nothing to quote', () => {
    expect(exampleQuestions([])).toEqual([])
  })
})

describe('directoryName', () => {
  it.each([
    ['kb://users/demo/', 'your workspace'],
    ['kb://users/demo/samples/guides/', 'guides/'],
  ])('%s → %s', (uri, name) => expect(directoryName(uri)).toBe(name))
})

describe('Welcome', () => {
  it('offers an Upload files button into an empty directory instead of questions', () => {
    const html = renderFragmentSync(Welcome({ directoryUri: 'kb://users/bob/new/', entries: [] }))
    expect(html).not.toContain('class="example"')
    expect(html).toContain('<button type="button" class="small" data-upload-to="kb://users/bob/new/">Upload files</button>')
  })

  it('offers the example questions in a directory with files', () => {
    const html = renderFragmentSync(Welcome({ directoryUri: 'kb://users/bob/', entries: [{ name: 'a.md', kind: 'file' }] }))
    expect(html).toContain('data-question="What are the key points of a.md?"')
    expect(html).not.toContain('data-upload-to')
  })
})
