import { fc, test as propertyTest } from '@fast-check/vitest'
import { describe, expect, test } from 'vitest'
import { collapse, splitBlocks, splitSentences } from './blocks.ts'
import { fileText, page, RUNBOOK } from './test-pages.ts'

describe('splitBlocks', () => {
  const blocks = splitBlocks(page(RUNBOOK))

  test('a hard-wrapped paragraph is one block whose sentences do not end at line breaks', () => {
    const symptom = blocks.find((b) => b.text.startsWith('**Symptom: "the data'))!
    expect(symptom.kind).toBe('paragraph')
    expect(symptom.sentences.map((s) => s.text)).toEqual([
      '**Symptom: "the data directory is in use".**',
      'Another process already owns the embedded database.',
      'Either stop it, or give the second process its own `KNOWAGENT_DATA_DIR`, or move both to a shared PostgreSQL with `DATABASE_URL`.',
    ])
    expect(symptom.headings).toEqual(['Runbook', '1. Starting a server'])
  })

  test('list items carry their lead-in; table rows their header; the separator row is nothing', () => {
    const items = blocks.filter((b) => b.kind === 'item')
    expect(items.map((b) => b.text)).toEqual(["open the phone's settings and find PagerLoop;", 'allow critical alerts;', 'send yourself a test page.'])
    expect(items.every((b) => b.lead === 'To fix this:')).toBe(true)
    const rows = blocks.filter((b) => b.kind === 'row')
    expect(rows.map((b) => b.text)).toEqual(['| London | 220 EUR |', '| Paris | 190 EUR |'])
    expect(rows[0]!.lead).toBe('| city | cap per night |')
  })

  test('every sentence and block is the file text at its offsets', () => {
    for (const block of blocks) {
      for (const sentence of block.sentences) expect(fileText(RUNBOOK, sentence.start, sentence.end)).toBe(sentence.text)
    }
  })

  test('PDF-like text: a short line without final punctuation between sentences is a heading', () => {
    const text = 'The compile pipeline\nThis document describes the pipeline.\n2. The four layers\nL2, the parsed body, is the plain text\nof a file.'
    const split = splitBlocks(page(text, { name: 'x.pdf' }))
    expect(split.map((b) => [b.kind, b.text, b.headings.at(-1)])).toEqual([
      ['paragraph', 'This document describes the pipeline.', 'The compile pipeline'],
      ['paragraph', 'L2, the parsed body, is the plain text of a file.', '2. The four layers'],
    ])
  })

  test('CSV: each line is a row under the header', () => {
    const split = splitBlocks(page('date,holiday\n2026-10-05,Republic Day\n2026-12-25,Christmas Day\n', { name: 'h.csv' }))
    expect(split.map((b) => [b.kind, b.text, b.lead])).toEqual([
      ['row', '2026-10-05,Republic Day', 'date,holiday'],
      ['row', '2026-12-25,Christmas Day', 'date,holiday'],
    ])
  })

  test('an indented block after a blank line is code (a formula), not a paragraph', () => {
    const split = splitBlocks(page('The input limit is:\n\n    input limit = window − reserve − 1024\n\nThe meter shows it.'))
    expect(split.map((b) => b.kind)).toEqual(['paragraph', 'code', 'paragraph'])
  })

  test('blocks cut by the page boundary are partial', () => {
    const split = splitBlocks(page('end of a sentence that began earlier.\n\nA whole paragraph.\n\nThe start of one that goes', { offset: 500, atStart: false, atEnd: false }))
    expect(split.map((b) => [b.text, b.partial, b.start])).toEqual([
      ['end of a sentence that began earlier.', true, 500],
      ['A whole paragraph.', false, 539],
      ['The start of one that goes', true, 559],
    ])
  })

  test('offsets are code points (an emoji counts as one)', () => {
    const [first, second] = splitSentences('🎉🎉 Party notes. The budget is 300 euros.')
    expect(first).toEqual({ start: 0, end: 15, text: '🎉🎉 Party notes.' })
    expect(second).toEqual({ start: 16, end: 40, text: 'The budget is 300 euros.' })
  })

  test('Chinese sentences end at 。！？ and a line break between CJK characters is no space', () => {
    const text = '同一轮最多 12 个模型步骤、24 次工具调用。非法的调用\nID 会显式终止本轮。'
    expect(splitSentences(text).map((s) => s.text)).toEqual(['同一轮最多 12 个模型步骤、24 次工具调用。', '非法的调用 ID 会显式终止本轮。'])
    expect(collapse('第一行\n第二行')).toBe('第一行第二行')
  })

  propertyTest.prop([fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 60 }), fc.constantFrom('\n', '\n\n', '# H\n', '- ', '| a | b |\n', '. ', '。')), { maxLength: 30 })], {
    numRuns: 300,
  })('every sentence is the text found at its offsets', (pieces) => {
    const text = pieces.join('')
    for (const sentence of splitSentences(text)) expect(fileText(text, sentence.start, sentence.end)).toBe(sentence.text)
  })
})
