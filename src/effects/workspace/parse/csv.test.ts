import { describe, expect, it } from 'vitest'
import { expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { parseDocument } from './parse-document.ts'

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
