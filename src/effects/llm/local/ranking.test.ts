import { describe, expect, test } from 'vitest'
import { judgeRelevance, keywordWeights, readDocument } from './ranking.ts'
import { analyseQuestion } from './terms.ts'

const page = (name: string, text: string) => ({ text, offset: 0, atStart: true, atEnd: true, name })

/** The relevance of every passage of the documents to the question, by passage text. */
function judged(question: string, documents: ReadonlyArray<{ name: string; text: string }>) {
  const terms = analyseQuestion(question)
  const read = documents.map((d) => readDocument({ uri: `kb://users/demo/d/${d.name}`, page: page(d.name, d.text) }))
  const weights = keywordWeights({ documents: read, keywords: terms.keywords })
  return read.flatMap((document) => document.passages.map((passage, passageIndex) => ({ text: passage.text, ...judgeRelevance({ passageIndex, document, question: terms, weights }) })))
}

describe('judgeRelevance', () => {
  // The question asks for a measure (maximum size) of a thing (a file to parse): a passage about
  // parsing files that gives no figure, or a figure about something else, does not answer it.
  const DOCUMENTS = [
    { name: 'decisions.md', text: '# D1. Count page sizes in code points\n\nDecision: the read tool counts offsets and page limits in code points, with a default page of 3000 and a maximum of 6000.\n' },
    { name: 'guide.md', text: '# Compiling\n\n**L2 — parse.** Each raw file is parsed into text before it is summarised.\n' },
    { name: 'runbook.md', text: '# Uploads\n\nA file is too large to parse when it is over 50 MB raw.\n' },
  ]

  test('a question about the measure of a thing is answered only by a passage about that thing with a figure', () => {
    const results = judged('What is the maximum size of a file to parse?', DOCUMENTS)
    expect(results.filter((r) => r.relevant).map((r) => r.text)).toEqual(['A file is too large to parse when it is over 50 MB raw.'])
    expect(results.find((r) => r.text.includes('L2'))?.reason).toBe('the passage gives no figure')
    expect(results.find((r) => r.text.includes('6000'))?.reason).toMatch(/not about “file”/u)
  })

  test('other questions need no figure', () => {
    const results = judged('How are files parsed?', DOCUMENTS)
    expect(results.find((r) => r.text.includes('L2'))?.relevant).toBe(true)
  })
})

describe('judgeRelevance: the key terms of the question', () => {
  const PURCHASING = [
    { name: 'equipment.md', text: '# Equipment\n\nLaptop purchases need a receipt and the asset tag.\n\nMonitors are ordered through the office team.\n' },
  ]

  test('a near-topic passage that lacks two key terms is not an answer, even at half the coverage', () => {
    const [result] = judged('Who approves laptop purchases for contractors?', PURCHASING)
    expect(result).toMatchObject({ relevant: false, reason: 'the passage does not cover “approves”, “contractors”' })
  })

  test('key terms match across word forms: approval meets approves, contractor meets contractors', () => {
    const [result] = judged('Who approves laptop purchases for contractors?', [
      { name: 'purchasing.md', text: '# Purchasing\n\nLaptop purchases for a contractor need the approval of the team lead.\n' },
    ])
    expect(result?.relevant).toBe(true)
  })

  test('a two-word question needs both words: "retention" is not answered by a passage about invoices alone', () => {
    const results = judged('What is the badge retention?', [
      { name: 'records.md', text: '# Records\n\nInvoices are retained for seven years.\n\nBadges are collected on the last day.\n' },
    ])
    expect(results.filter((r) => r.relevant)).toEqual([])
  })
})
