import { describe, expect, it } from 'vitest'
import { directoryName, exampleQuestions } from './welcome.tsx'

describe('exampleQuestions', () => {
  it('asks about a real document, a topic from another file name and a subdirectory', () => {
    const questions = exampleQuestions([
      { name: 'notes', kind: 'directory' },
      { name: 'knowagent-guide.md', kind: 'file' },
      { name: 'operations-runbook.md', kind: 'file' },
    ])
    expect(questions).toEqual([
      'What are the key points of knowagent-guide.md?',
      'Which files mention operations?',
      'What is in notes/?',
    ])
  })

  it('skips the topic question when no other file name has a real word', () => {
    expect(exampleQuestions([{ name: 'a.md', kind: 'file' }, { name: 'b.txt', kind: 'file' }])).toEqual([
      'What are the key points of a.md?',
      'Summarise what these files are about.',
    ])
  })

  it('offers general questions for an empty directory', () => {
    expect(exampleQuestions([])).toEqual(['What can you do in this workspace?', 'How do I add files for you to read?'])
  })
})

describe('directoryName', () => {
  it.each([
    ['kb://users/demo/', 'your workspace'],
    ['kb://users/demo/samples/guides/', 'guides/'],
  ])('%s → %s', (uri, name) => expect(directoryName(uri)).toBe(name))
})
