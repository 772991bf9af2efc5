// Structure-aware passages (issue 41): a list under a heading, a numbered procedure, a Markdown
// table row with its header — each answered as the structure the document gives it.
import { describe, expect, test } from 'vitest'
import { answerFromDocuments } from './answer.ts'
import { phrasesFor } from './phrases.ts'
import { readDocument } from './ranking.ts'
import { analyseQuestion } from './terms.ts'

const answer = (question: string, name: string, text: string) =>
  answerFromDocuments({
    question,
    terms: analyseQuestion(question),
    documents: [readDocument({ uri: `kb://users/demo/t/${name}`, page: { text, offset: 0, atStart: true, atEnd: true, name } })],
    coverage: undefined,
    phrases: phrasesFor(question),
  })

const SYNC = `# Weekly sync — 9 March 2026

Present: Ana, Bo, Chen.

The team went through the launch checklist and the pricing page.

## Action items

- Ana drafts the customer email by Friday.
- Bo books the venue for the offsite.
- Chen renews the TLS certificate.
`

const DEPLOY = `# Deploying the billing service

Deploys happen on weekdays only.

## Steps

1. Announce the deploy in the release channel.
2. Freeze merges to the main branch.
3. Run the database migrations with the migrate script.
4. Roll out the new version to one region, then all.
`

const RATES = `# Per diem

Rates per day, meals included:

Some other paragraph in between, about receipts and how to file them.

| city | per diem |
|------|----------|
| Oslo | 95 EUR |
| Madrid | 60 EUR |
`

describe('structure-aware passages', () => {
  test('a heading followed by a list is one passage: the action items are quoted together', () => {
    const result = answer('What are the action items from the weekly sync?', 'sync.md', SYNC)
    expect(result.answered).toBe(true)
    expect(result.text).toContain('> - Ana drafts the customer email by Friday.\n> - Bo books the venue for the offsite.\n> - Chen renews the TLS certificate.')
  })

  test('a numbered procedure keeps its numbers: "step 3" finds the item numbered 3, quoted alone', () => {
    const result = answer('What is step 3 of deploying the billing service?', 'deploy.md', DEPLOY)
    expect(result.answered).toBe(true)
    expect(result.text).toContain('> 3. Run the database migrations with the migrate script.\n> — kb://users/demo/t/deploy.md')
    expect(result.text).not.toContain('Freeze merges')
  })

  test('a Markdown table row is quoted with its header and separator rows, cited at their offset', () => {
    const result = answer('What is the per diem in Oslo?', 'per-diem.md', RATES)
    const headerOffset = Array.from(RATES).join('').indexOf('| city')
    expect(result.text).toContain(`> | city | per diem |\n> |------|----------|\n> — kb://users/demo/t/per-diem.md (offset ${headerOffset})\n>\n> | Oslo | 95 EUR |`)
  })
})
