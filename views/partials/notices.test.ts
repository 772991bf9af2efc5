import { describe, expect, it } from 'vitest'
import { noticeText, uploadNoticeQuery } from './notices.ts'

describe('notices', () => {
  it('an upload redirect carries counts, never names or error text', () => {
    const query = uploadNoticeQuery([
      { outcome: 'added' },
      { outcome: 'added', parse_error: '<b>Click here</b> to re-enter your password' },
      { outcome: 'unchanged' },
    ])
    expect(query).toBe('notice=uploaded&added=2&updated=0&unchanged=1&unparsed=1')
  })

  it('says what was stored and what could not be read', () => {
    expect(noticeText({ code: 'uploaded', counts: { added: 2, updated: 0, unchanged: 1, unparsed: 1 } })).toBe(
      'Upload stored: 2 added, 0 updated, 1 unchanged. No text could be extracted from 1 file; the raw bytes are kept and the preview says why.',
    )
    expect(noticeText({ code: 'uploaded', counts: { added: 0, updated: 3, unchanged: 0, unparsed: 0 } })).toBe('Upload stored: 0 added, 3 updated, 0 unchanged.')
  })
})
