import { describe, expect, test } from 'vitest'
import { describeDataFile } from './data-summary.ts'

describe('describeDataFile', () => {
  test('a JSON object: its keys, with the labels of array entries and the keys of nested objects', () => {
    const text = JSON.stringify({ models: [{ id: 'a', x: 1 }, { name: 'b' }, { other: true }], server: { port: 1, host: 'h' }, version: 2 })
    expect(describeDataFile({ title: 'config.json', text })).toBe('A JSON object with 3 keys: models (3 entries: a, b); server (port, host); version.')
  })

  test('a JSON array, and JSON that does not parse is not described', () => {
    expect(describeDataFile({ title: 'list.JSON', text: '[{"id":"x"},{"id":"y"}]' })).toBe('A JSON array of 2 entries: x, y.')
    expect(describeDataFile({ title: 'broken.json', text: '{"a": ' })).toBeUndefined()
  })

  test('a CSV table: rows, columns and the first column, quoted fields kept whole', () => {
    const text = 'name,notes,size\r\n"Smith, J","said ""hi""\nthen left",3\nLee,,4\n'
    expect(describeDataFile({ title: 'people.csv', text })).toBe('A table of 2 rows with 3 columns: name, notes, size. Its name column lists Smith, J, Lee.')
  })

  test('long lists are counted, not spelled out; other files are not data files', () => {
    const text = ['k,v', ...Array.from({ length: 9 }, (_, i) => `r${i},${i}`)].join('\n')
    expect(describeDataFile({ title: 't.csv', text })).toBe('A table of 9 rows with 2 columns: k, v. Its k column lists r0, r1, r2, r3, r4, r5 and 3 more.')
    expect(describeDataFile({ title: 'notes.md', text })).toBeUndefined()
    expect(describeDataFile({ title: 'one-column.csv', text: 'a\nb\n' })).toBeUndefined()
  })

  test('a TSV table, and a long one described from its first rows', () => {
    expect(describeDataFile({ title: 'x.tsv', text: 'a\tb\n1\t2\n' })).toBe('A table of 1 row with 2 columns: a, b. Its a column lists 1.')
    const long = ['k,v', ...Array.from({ length: 300 }, (_, i) => `r${i},${i}`)].join('\n')
    expect(describeDataFile({ title: 'long.csv', text: long })).toBe('A table of 300 rows with 2 columns: k, v. Its k column begins with r0, r1, r2, r3, r4, r5 and 194 more.')
  })
})
