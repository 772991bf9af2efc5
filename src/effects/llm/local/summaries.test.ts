import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { cutText, summariseAbstract, summariseDocument, summariseOverview } from './summaries.ts'

const ARTICLE = [
  'The wiki compiler turns raw files into a layered wiki.',
  'Cats are not involved in any of this at all.',
  'Each raw file gets a summary written by the compiler.',
  'The weather was rather nice on that particular day.',
  'Directory overviews are built by the compiler from the file summaries.',
  'Lunch was pasta with a glass of water.',
].join(' ')

describe('summariseDocument', () => {
  test('the leading sentence, then the sentences about the recurring topic, in document order', () => {
    expect(summariseDocument({ title: 'The wiki compiler', text: ARTICLE, maxChars: 180 })).toBe(
      'The wiki compiler turns raw files into a layered wiki. ' +
        'Each raw file gets a summary written by the compiler. ' +
        'Directory overviews are built by the compiler from the file summaries.',
    )
  })

  test('a document that fits is its own summary, without its headings and hard wraps', () => {
    expect(summariseDocument({ title: 'Notes', text: '# Notes\r\n\r\nShort text that is\r\nwrapped. And a second sentence.', maxChars: 200 })).toBe(
      'Short text that is wrapped. And a second sentence.',
    )
  })

  test('the title decides between otherwise equal sentences', () => {
    const text = 'An opening sentence about nothing much. Apples grow on trees in autumn. Pears grow on trees in autumn.'
    expect(summariseDocument({ title: 'Pears', text, maxChars: 80 })).toBe('An opening sentence about nothing much. Pears grow on trees in autumn.')
    expect(summariseDocument({ title: 'Apples', text, maxChars: 80 })).toBe('An opening sentence about nothing much. Apples grow on trees in autumn.')
  })

  test('a first sentence longer than the budget is cut at a word, with …', () => {
    expect(summariseDocument({ title: '', text: `${'word '.repeat(100)}end. Next sentence here.`, maxChars: 22 })).toBe('word word word word…')
  })

  test('Chinese sentences are joined without spaces', () => {
    const text = '编译任务会为每个目录生成概览和摘要文件。天气很好。编译任务的配置在入队时复制进任务快照。'
    expect(summariseDocument({ title: '编译任务', text, maxChars: 42 })).toBe('编译任务会为每个目录生成概览和摘要文件。编译任务的配置在入队时复制进任务快照。')
  })

  test('leaves out what does not stand alone: bold pseudo-headings, metadata lines, sentences that announce a list, list items that continue one', () => {
    const text = [
      '*Status: closed. Severity: medium, no data loss at all.*',
      '',
      'The server keeps every turn within fixed limits that protect the provider.',
      '',
      '**Symptom: "unknown model id".** The client asked for a model that is not in the configuration file.',
      '',
      'A single turn is bounded by these limits of its own:',
      '',
      '- at most twelve model steps in a single turn;',
      '- Every tool call in a turn must target the selected scope.',
    ].join('\n')
    expect(summariseDocument({ title: 'limits', text, maxChars: 150 })).toBe(
      'The server keeps every turn within fixed limits that protect the provider. Every tool call in a turn must target the selected scope.',
    )
  })

  test('a data file is described by its keys or columns', () => {
    expect(summariseDocument({ title: 'a.json', text: '{"models":[{"id":"m1"}]}', maxChars: 200 })).toBe('A JSON object with 1 key: models (1 entry: m1).')
  })

  test('empty text gives an empty summary', () => {
    expect(summariseDocument({ title: 'x', text: '   ', maxChars: 10 })).toBe('')
  })

  propertyTest.prop(
    [
      fc.array(
        // A sentence that ends in an abbreviation ("… mr.") is not one to the splitter (blocks.ts): it runs on.
        fc.stringMatching(/^[A-Z][a-z]{1,8}( [a-z]{1,8}){3,9}[.!?]$/).filter((sentence) => !/ (?:vs|cf|approx|incl|fig|dr|mr|mrs|ms)\.$/.test(sentence)),
        { minLength: 1, maxLength: 30 },
      ),
      fc.integer({ min: 1, max: 400 }),
    ],
    { numRuns: 200 },
  )('within budget, deterministic, and made of whole source sentences', (sentences, maxChars) => {
    const text = sentences.join(' ')
    const summary = summariseDocument({ title: '', text, maxChars })
    expect(Array.from(summary).length).toBeLessThanOrEqual(maxChars)
    expect(summariseDocument({ title: '', text, maxChars })).toBe(summary)
    if (summary.endsWith('…')) expect(sentences.some((sentence) => sentence.startsWith(summary.slice(0, -1).trimEnd()))).toBe(true)
    else for (const piece of summary.match(/[^.!?]+[.!?]/g) ?? []) expect(sentences).toContain(piece.trim())
  })
})

test('cutText never cuts inside a kb:// URI', () => {
  expect(cutText('See kb://users/demo/samples/guides/knowagent-guide.md for the details', 40)).toBe('See…')
  expect(cutText('short', 40)).toBe('short')
})

const DOCUMENTS = [
  { name: 'guide.md', summary: 'The guide explains the workspace and its tools. Compaction keeps long conversations inside the window.' },
  { name: 'runbook.md', summary: 'The runbook explains how to start a server. Compaction errors are explained with their fixes.' },
  { name: 'pipeline.pdf', summary: 'The compile pipeline turns raw files into a layered wiki. Compaction is not part of it.' },
]

describe('summariseOverview', () => {
  test('one line per document with the gist of its summary', () => {
    const overview = summariseOverview({ title: 'guides', documents: DOCUMENTS, maxChars: 600 })
    expect(overview.split('\n')).toEqual([
      `- guide.md: ${DOCUMENTS[0]!.summary}`,
      `- runbook.md: ${DOCUMENTS[1]!.summary}`,
      `- pipeline.pdf: ${DOCUMENTS[2]!.summary}`,
    ])
  })

  test('within a small budget, gists shrink to whole sentences and what no longer fits is counted', () => {
    const overview = summariseOverview({ title: 'guides', documents: DOCUMENTS, maxChars: 170 })
    expect(overview.length).toBeLessThanOrEqual(170)
    expect(overview.split('\n')[0]).toBe('- guide.md: The guide explains the workspace and its tools.')
    expect(overview).toMatch(/- … and \d more$/u)
  })
})

describe('summariseAbstract', () => {
  test("each document's first sentence first, in document order", () => {
    expect(summariseAbstract({ title: 'guides', documents: DOCUMENTS, maxChars: 160 })).toBe(
      'The guide explains the workspace and its tools. The runbook explains how to start a server. The compile pipeline turns raw files into a layered wiki.',
    )
  })

  test('then the sentences whose terms recur across documents', () => {
    const abstract = summariseAbstract({ title: 'guides', documents: DOCUMENTS, maxChars: 200 })
    expect(abstract.length).toBeLessThanOrEqual(200)
    expect(abstract).toContain('Compaction')
    for (const sentence of abstract.match(/[^.]+\./g) ?? []) {
      expect(DOCUMENTS.some((d) => d.summary.includes(sentence.trim()))).toBe(true)
    }
  })

  test('deterministic, and empty documents give an empty abstract', () => {
    expect(summariseAbstract({ title: 'x', documents: DOCUMENTS, maxChars: 120 })).toBe(summariseAbstract({ title: 'x', documents: DOCUMENTS, maxChars: 120 }))
    expect(summariseAbstract({ title: 'x', documents: [{ name: 'a', summary: '' }], maxChars: 120 })).toBe('')
  })
})
