import { describe, expect, it } from 'vitest'
import { expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'
import { readDelimitedTable, separatorOf } from './csv.ts'

describe('CSV', () => {
  it('reads CSV as text with normalised line endings, quoted newlines included', async () => {
    const outcome = await parseDocument({ name: 'table.csv', bytes: fixture('table.csv') })
    expect(outcome).toMatchObject({ ok: true, mime: 'text/csv', parser: 'csv' })
    expect(expectText(outcome)).toBe('provider,window,notes\nopenai,128000,"quoted, with comma"\nqwen,131072,"multi\nline"\n')
  })

  it('is CSV by its extension even when the browser calls it an Excel file', async () => {
    const csv = await parseDocument({ name: 'x.csv', mime: 'application/vnd.ms-excel', bytes: utf8('a,b\r\n') })
    expect(csv).toEqual({ ok: true, mime: 'text/csv', parser: 'csv', text: 'a,b\n' })
  })
})

describe('readDelimitedTable', () => {
  it('reads the header and rows: separators, line breaks and doubled quotes inside quotes, blank lines skipped, CRLF', () => {
    expect(readDelimitedTable({ text: 'a,b\r\n"x, y","say ""hi""\nthen"\n\n3,4', separator: ',' })).toEqual({
      header: ['a', 'b'],
      rows: [['x, y', 'say "hi"\nthen'], ['3', '4']],
      totalRows: 2,
      headerEnd: 5,
    })
    expect(readDelimitedTable({ text: 'a\tb\n"b\tc"\td\n', separator: '\t' })?.rows).toEqual([['b\tc', 'd']])
  })

  it('shows the first rows and counts the rest, quoted line breaks included; ragged rows fit the header', () => {
    const text = ['k,v', ...Array.from({ length: 250 }, (_, i) => (i === 220 ? 'x,"two\nlines"' : `r${i},${i}`)), 'short'].join('\n')
    const table = readDelimitedTable({ text, separator: ',' })!
    expect(table.rows).toHaveLength(200)
    expect(table.rows[199]).toEqual(['r199', '199'])
    expect(table.totalRows).toBe(251)
    expect(readDelimitedTable({ text: 'a,b,c\n1\n1,2,3,4\n', separator: ',' })?.rows).toEqual([['1', '', ''], ['1', '2', '3']])
  })

  it.each([
    ['one column', 'a\nb\n'],
    ['a quote that never closes', 'a,b\n"open,1\n2,3\n'],
    ['more columns than a table shows', `${'c,'.repeat(300)}c\n`],
  ])('is no table for %s (the preview shows the text)', (_, text) => {
    expect(readDelimitedTable({ text, separator: ',' })).toBeUndefined()
  })

  it('bounds its work: a million columns, a 50 MB line, a huge file', () => {
    // Each ends at a bound, not at the end of the text (the bounds themselves are shown below with small values).
    const wide = `${'x,'.repeat(1_000_000)}x\n1,2\n`
    expect(readDelimitedTable({ text: wide, separator: ',' })).toBeUndefined() // past maxColumns at the 201st separator
    const longLine = 'x'.repeat(50 * 1024 * 1024)
    expect(readDelimitedTable({ text: `${longLine},y\n1,2\n`, separator: ',' })).toBeUndefined() // the header never ends within the bound
    const table = readDelimitedTable({ text: `a,b\n1,2\n${longLine},y\n`, separator: ',' })!
    expect(table.rows).toEqual([['1', '2']])
    expect(table.totalRows).toBeUndefined() // too long to count
  })

  it('parses at most maxChars characters and counts rows over at most maxCountChars more', () => {
    const text = `a,b\n${'1,2\n'.repeat(100)}`
    const bounded = readDelimitedTable({ text, separator: ',', maxChars: 20, maxCountChars: 1_000 })!
    expect(bounded.rows).toHaveLength(4) // the rows that end within the first 20 characters
    expect(bounded.totalRows).toBe(100)
    expect(readDelimitedTable({ text, separator: ',', maxChars: 20, maxCountChars: 100 })!.totalRows).toBeUndefined()
    expect(readDelimitedTable({ text: `${'h'.repeat(30)},b\n1,2\n`, separator: ',', maxChars: 20 })).toBeUndefined()
  })
})

describe('separatorOf', () => {
  it.each([
    ['a.csv', ','],
    ['A.CSV', ','],
    ['b.tsv', '\t'],
    ['c.tab', '\t'],
    ['d.txt', undefined],
  ])('%s', (name, separator) => expect(separatorOf(name)).toBe(separator))
})
