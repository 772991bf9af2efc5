import { describe, expect, test } from 'vitest'
import { collapse, splitBlocks } from './blocks.ts'
import { fileText, page, RUNBOOK } from './test-pages.ts'
import { isEvidence, passagesOf, quoteFor } from './passages.ts'

describe('isEvidence', () => {
  test.each([
    ['# A title\n\nBody text that is long enough.', ['Body text that is long enough.']],
    ['| a | b |\n|---|---|\n| London | 220 EUR |\n', ['| London | 220 EUR |']],
    ['Model steps\n\n12\n\nTool calls\n\n24\n', []],
  ])('%j: %j', (text, evidence) => {
    expect(splitBlocks(page(text)).filter(isEvidence).map((b) => b.text)).toEqual(evidence)
  })
})

describe('quoteFor', () => {
  const runbook = page(RUNBOOK)
  const blocks = splitBlocks(runbook)
  const passages = passagesOf(blocks)
  const quoteOf = (startsWith: string) => {
    const passage = passages.find((p) => p.text.startsWith(startsWith))!
    return quoteFor({ page: runbook, blocks, passage })
  }

  test('a short paragraph is quoted whole: the symptom and its fix', () => {
    const quote = quoteOf('**Symptom: "the data')
    expect(quote.lines).toHaveLength(1)
    expect(quote.lines[0]).toContain('Another process already owns the embedded database. Either stop it')
    expect(fileText(RUNBOOK, quote.start, quote.end)).toBe(quote.lines.join(' '))
  })

  test('"To fix this:" brings the list it announces', () => {
    const quote = quoteOf('**Symptom: the pager')
    expect(quote.lines.slice(1)).toEqual(["1. open the phone's settings and find PagerLoop;", '2. allow critical alerts;', '3. send yourself a test page.'])
    expect(fileText(RUNBOOK, quote.start, quote.end)).toBe(quote.lines.join(' '))
  })

  test('a trailing colon brings the table with its header and separator rows (after a blank line, so it renders)', () => {
    const quote = quoteOf('The hotel cap')
    expect(quote.lines).toEqual([
      'The hotel cap is the most we reimburse per night:',
      '',
      '| city | cap per night |',
      '|------|---------------|',
      '| London | 220 EUR |',
      '| Paris | 190 EUR |',
    ])
    expect(fileText(RUNBOOK, quote.start, quote.end)).toBe(collapse(quote.lines.join(' ')))
  })

  test('a list item of a short list comes with its lead-in and the whole list', () => {
    const quote = quoteOf('allow critical alerts')
    expect(quote.lines[0]).toContain('To fix this:')
    expect(quote.lines.at(-1)).toBe('3. send yourself a test page.')
  })

  test('a long paragraph is quoted by its passage, extended over a sentence that refers back', () => {
    const long = `${'Filler sentence number one is here. '.repeat(12)}The key fact is stated here. Otherwise nothing works at all. ${'More filler follows after it. '.repeat(12)}`
    const longPage = page(long)
    const longBlocks = splitBlocks(longPage)
    const passage = passagesOf(longBlocks).find((p) => p.text.startsWith('Otherwise') || p.text.includes(' Otherwise'))!
    const quote = quoteFor({ page: longPage, blocks: longBlocks, passage })
    expect(quote.lines.join(' ').length).toBeLessThan(long.length)
    expect(fileText(long, quote.start, quote.end)).toBe(quote.lines.join(' '))
  })
})

describe('a whole table under a heading', () => {
  const TEXT = '# Postmortem\n\n## Action items\n\n| # | Action | Owner |\n|---|---|---|\n| 1 | Alert on pool saturation | Dev |\n| 2 | Fail on unknown config keys | Ana |\n'
  const tablePage = page(TEXT)
  const blocks = splitBlocks(tablePage)
  const passages = passagesOf(blocks)

  test('is one more passage beside its rows, labelled by its heading, quoted with its header and separator rows', () => {
    const whole = passages.find((p) => p.lastBlock !== undefined)!
    expect(whole).toMatchObject({ label: 'Action items' })
    expect(passages.filter((p) => p.lastBlock === undefined).map((p) => p.text)).toEqual(['| 1 | Alert on pool saturation | Dev |', '| 2 | Fail on unknown config keys | Ana |'])
    const quote = quoteFor({ page: tablePage, blocks, passage: whole })
    expect(quote.lines).toEqual(['| # | Action | Owner |', '|---|---|---|', '| 1 | Alert on pool saturation | Dev |', '| 2 | Fail on unknown config keys | Ana |'])
    expect(fileText(TEXT, quote.start, quote.end)).toBe(quote.lines.join(' '))
  })
})
