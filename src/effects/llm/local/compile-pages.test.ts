import { describe, expect, test } from 'vitest'
import { readOverview, readSummary, writeAbstract, writeOverview, writeSummary } from './compile-pages.ts'
import { outlineDocument } from './outline.ts'

const MINUTES = [
  '# Weekly sync — 4 March 2026',
  '',
  'Present: Dana, Omar, Ken',
  'Minutes: Ken',
  '',
  '## Discussion',
  '',
  'Omar walked through the checklist and most items are green.',
  '',
  '## Decisions',
  '',
  '- The Pro plan goes from $12 to $15 per user per month on 1 May 2026.',
  '- The launch moves to 28 April.',
  '',
  '## Action items',
  '',
  '- Ken: update the status page by Friday.',
  '',
  'Thanks all,',
  'Ken',
].join('\n')

describe('outlineDocument', () => {
  test('the title is the subject; decisions come first, with their label; roster lines and sign-offs are no points', () => {
    const outline = outlineDocument({ title: 'sync.md', text: MINUTES })
    expect(outline.subject).toBe('Weekly sync — 4 March 2026')
    expect(outline.points[0]).toMatchObject({ label: 'Decisions', text: 'The Pro plan goes from $12 to $15 per user per month on 1 May 2026.' })
    const texts = outline.points.map((p) => p.text).join('\n')
    expect(texts).not.toMatch(/Present|Minutes|Thanks|^Ken$/mu)
  })

  test('a plain-text title in capitals, with its date line, becomes the subject', () => {
    const outline = outlineDocument({ title: 'leave.txt', text: 'LEAVE POLICY\nEffective: 1 January 2026\n\nAnnual leave\nEmployees get 27 days of paid leave per year.\n' })
    expect(outline.subject).toBe('Leave policy (effective 1 January 2026)')
    expect(outline.points.map((p) => p.text)).toContain('Employees get 27 days of paid leave per year.')
  })

  test('a CSV row is a point read with its header', () => {
    const outline = outlineDocument({ title: 'price-list.csv', text: 'plan,price\nTeam,29\nBusiness,79\n' })
    expect(outline.subject).toBe('Price list — a table of 2 rows with the columns plan, price')
    expect(outline.points.map((p) => p.text)).toEqual(['Team — price: 29', 'Business — price: 79'])
  })

  test('a Markdown table row is read with its header', () => {
    const outline = outlineDocument({ title: 'limits.md', text: '# Limits\n\n| Expense | Limit |\n|---|---|\n| Hotel | €180 per night |\n' })
    expect(outline.points.map((p) => p.text)).toContain('Hotel — Limit: €180 per night')
  })

  test('bounded: a huge file is outlined from its first part only', () => {
    const text = `# Big\n\n${'A line about the quarterly budget of 12 teams and their plans.\n\n'.repeat(20_000)}`
    const started = performance.now()
    const outline = outlineDocument({ title: 'big.md', text })
    expect(outline.points.length).toBeGreaterThan(0)
    expect(performance.now() - started).toBeLessThan(15_000)
  })
})

describe('writeSummary and readSummary', () => {
  test('a summary is the subject, then labelled groups of points, within the budget, and reads back the same', () => {
    const summary = writeSummary({ title: 'sync.md', text: MINUTES, maxChars: 1200 })
    expect(summary.startsWith('Weekly sync — 4 March 2026.\n')).toBe(true)
    expect(summary).toContain('Decisions:\n- The Pro plan goes from $12 to $15')
    expect(summary.length).toBeLessThanOrEqual(1200)
    const read = readSummary({ name: 'sync.md', summary })
    expect(read.subject).toBe('Weekly sync — 4 March 2026')
    expect(read.groups[0]).toMatchObject({ label: 'Decisions' })
    expect(writeSummary({ title: 'sync.md', text: MINUTES, maxChars: 200 }).length).toBeLessThanOrEqual(200)
  })

  test("another engine's prose summary is outlined", () => {
    const read = readSummary({ name: 'notes.md', summary: 'The notes describe the release process. Releases ship every 2 weeks on Tuesday.' })
    expect(read.subject).toBe('The notes describe the release process')
    expect(read.groups.flatMap((g) => g.points)).toContain('Releases ship every 2 weeks on Tuesday.')
  })
})

describe('writeOverview and writeAbstract', () => {
  const documents = [
    { name: 'sync.md', uri: 'kb://users/a/m/sync.md', summary: writeSummary({ title: 'sync.md', text: MINUTES, maxChars: 1200 }) },
    { name: 'retro.txt', uri: 'kb://users/a/m/retro.txt', summary: writeSummary({ title: 'retro.txt', text: 'Sprint 9 retrospective\n\nWhat went well\nReview time fell from 26 hours to 9 hours.\n', maxChars: 1200 }) },
  ]

  test('a line per file with its subject and key points', () => {
    const overview = writeOverview({ documents, maxChars: 3000 })
    const lines = overview.split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^- \*\*sync\.md\*\* \(kb:\/\/users\/a\/m\/sync\.md\) — Weekly sync — 4 March 2026\. Decisions: The Pro plan goes from \$12 to \$15/u)
    expect(lines[1]).toBe('- **retro.txt** (kb://users/a/m/retro.txt) — Sprint 9 retrospective: Review time fell from 26 hours to 9 hours.')
    expect(readOverview(overview).map((e) => [e.name, e.subject, e.label])).toEqual([
      ['sync.md', 'Weekly sync — 4 March 2026', 'Decisions'],
      ['retro.txt', 'Sprint 9 retrospective', undefined],
    ])
  })

  test('files past the budget are still named', () => {
    const many = Array.from({ length: 40 }, (_, i) => ({ name: `file-${i}.md`, summary: documents[0]!.summary }))
    const overview = writeOverview({ documents: many, maxChars: 1500 })
    for (const { name } of many) expect(overview).toContain(`${name}`)
    expect(overview).toMatch(/^- Also here: /mu)
  })

  test('the abstract: what the folder holds, its topics and its weightiest points, 3–5 sentences, none twice', () => {
    const overview = `m holds 2 compiled documents.\n\n${writeOverview({ documents, maxChars: 3000 })}`
    const abstract = writeAbstract({ title: 'm', overview, maxChars: 500 })
    expect(abstract.startsWith('m holds 2 documents: Weekly sync — 4 March 2026; Sprint 9 retrospective.')).toBe(true)
    expect(abstract).toContain('Decisions in sync.md: The Pro plan goes from $12 to $15')
    expect(abstract.length).toBeLessThanOrEqual(500)
    const sentences = abstract.split(/(?<=\.)\s+(?=[A-Z])/u)
    expect(sentences.length).toBeGreaterThanOrEqual(3)
    expect(sentences.length).toBeLessThanOrEqual(5)
    expect(new Set(sentences).size).toBe(sentences.length)
  })
})
