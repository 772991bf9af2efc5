// Issue 41: "Summarise …", "what are these files about", "give me an overview of this folder" ask for
// a summary of the folder; a question that merely contains "about" asks for a fact.
import { describe, expect, it } from 'vitest'
import { folderSummaryRequest } from './folder-summary-request.ts'

describe('folderSummaryRequest', () => {
  it.each([
    'Summarise what these files are about.',
    'Summarize these files',
    'What are these files about?',
    'what is this folder about',
    'Give me an overview of this folder.',
    'Can you give me a short summary of everything here?',
    'Summarise.',
    'What do these documents cover?',
    'What topics do these files cover?',
    "What's in this folder?",
    'What are the files in this folder about?',
    '总结一下这些文件',
    '这些文件是关于什么的？',
    'Give me an overview of the finance wiki.',
    'give me an overview of the sales space',
    'Give me an overview of the IT security docs.',
    'Summarise these ADRs.',
    'Summarise these meeting notes.',
  ])('%s asks for a summary of the folder', (question) => {
    expect(folderSummaryRequest(question)).toEqual({ folder: undefined })
  })

  it('names the child folder asked about', () => {
    expect(folderSummaryRequest('Give me an overview of the engineering folder')).toEqual({ folder: 'engineering' })
  })

  it('"what docs does X have" asks for the files of X (a child folder when there is one)', () => {
    expect(folderSummaryRequest('what docs does finance have?')).toEqual({ folder: 'finance' })
    expect(folderSummaryRequest('What files do we have?')).toEqual({ folder: undefined })
    expect(folderSummaryRequest('What docs do you have?')).toEqual({ folder: undefined })
    // a name that begins like "we", "you" or "i" is the name whole, not its rest
    expect(folderSummaryRequest('What docs does infra have?')).toEqual({ folder: 'infra' })
    expect(folderSummaryRequest('What docs does youth services have?')).toEqual({ folder: 'youth services' })
    expect(folderSummaryRequest('What documents does the webteam keep?')).toEqual({ folder: 'webteam' })
    expect(folderSummaryRequest('What is in engineering-wiki/?')).toEqual({ folder: 'engineering-wiki' })
    expect(folderSummaryRequest("What's in the sales folder?")).toEqual({ folder: 'sales' })
  })

  it.each([
    'What is the policy about remote work?',
    'Summarise the refund runbook.',
    'What did the team decide about pricing in these notes?',
    'How do I talk to people about the outage?',
    'Summarise the March 2026 incident.',
    'What are the key points of README.md?',
    'What is the parental leave policy?',
    '关于停车费的规定是什么？',
  ])('%s is not a summary of the folder', (question) => {
    expect(folderSummaryRequest(question)).toBeUndefined()
  })
})
