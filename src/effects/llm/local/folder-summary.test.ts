// Issue 41: a folder with no up-to-date compiled overview is summed up file by file — each file's
// title and its first heading-led passage, cited, labelled as not a compiled summary, bounded.
import { describe, expect, it } from 'vitest'
import { answerFromCompiledPages, answerFromOpenings, fileOpening, filesUnder, layerPageQuote, MAX_FILES_LISTED } from './folder-summary.ts'
import { phrasesFor } from './phrases.ts'
import { readDocument } from './ranking.ts'
import { fileText, page } from './test-pages.ts'

const english = phrasesFor('Summarise these files')
const doc = (uri: string, text: string, options = {}) => readDocument({ uri, page: page(text, { name: uri.split('/').at(-1)!, ...options }) })

const PAGER = '# Pager policy\n\n*Owner: ops.*\n\n## Why\n\nThe pager app stays silent at night unless critical alerts are allowed. Set it up on your first day. A third sentence that is long enough to go past the limit of the opening quote, which keeps to whole sentences of the first passage under a heading, and no more than that, however many more words this sentence has before it ends.\n'

describe('fileOpening', () => {
  it('takes the title from the first heading and quotes the first heading-led passage in whole sentences, at its offset', () => {
    const opening = fileOpening(doc('kb://u/team/pager.md', PAGER))
    expect(opening.title).toBe('Pager policy')
    expect(opening.quote!.lines).toEqual(['The pager app stays silent at night unless critical alerts are allowed. Set it up on your first day.'])
    expect(fileText(PAGER, opening.quote!.start, opening.quote!.end)).toBe(opening.quote!.lines.join(' '))
  })

  it('uses the file name when there is no heading, and whole sentences only of a passage cut by the page', () => {
    const text = 'Plain notes without a heading. They go on and on. And then the page ends in the midd'
    const opening = fileOpening(doc('kb://u/team/notes.txt', text, { atEnd: false }))
    expect(opening.title).toBe('notes.txt')
    expect(opening.quote?.lines.join(' ')).toBe('Plain notes without a heading. They go on and on.')
  })

  it('passes over metadata in italics and `Key: value` fields to the first prose, and titles a CSV file by its name', () => {
    const notes = '# Platform sync\n\n*Status: closed. Severity: SEV1.*\n\nPresent: Ines, Tomas, Wen.\n\nThe team agreed to move the release to Tuesday.\n'
    expect(fileOpening(doc('kb://u/team/sync.md', notes)).quote?.lines).toEqual(['The team agreed to move the release to Tuesday.'])
    const csv = fileOpening(doc('kb://u/team/holidays.csv', 'date,holiday,offices\n2026-01-01,New Year,all\n'))
    expect(csv.title).toBe('holidays.csv')
    expect(csv.quote?.lines.join(' ')).toMatch(/^date,holiday,offices|^2026-01-01/u)
  })
})

describe('answerFromOpenings', () => {
  const openings = Array.from({ length: MAX_FILES_LISTED }, (_, i) => fileOpening(doc(`kb://u/team/f${i}.md`, `# File ${i}\n\nThis is what file number ${i} says first.\n`)))

  it('labels the lines as each file\'s title and opening, cites each file, and counts the rest', () => {
    const { text, answered } = answerFromOpenings({ folderUri: 'kb://u/team/', openings, more: 7, staleOverview: undefined, phrases: english })
    expect(answered).toBe(true)
    expect(text).toMatch(/^No compiled overview of kb:\/\/u\/team\/ is up to date; here is each file's title and opening:/u)
    expect(text).toContain('- **File 3** — kb://u/team/f3.md\n> This is what file number 3 says first.\n> — kb://u/team/f3.md (offset 10)')
    expect(text.match(/^> — kb:\/\//gmu)).toHaveLength(MAX_FILES_LISTED)
    expect(text).toContain('… and 7 more.')
  })

  it('says a stale overview is out of date and does not quote it', () => {
    const { text } = answerFromOpenings({
      folderUri: 'kb://u/team/',
      openings: openings.slice(0, 2),
      more: 0,
      staleOverview: { uri: 'kb://u/team/.overview.md', stale: true, writtenAt: undefined, changes: 'changed: kb://u/team/f1.md' },
      phrases: english,
    })
    expect(text).toMatch(/^The compiled overview \(kb:\/\/u\/team\/\.overview\.md\) is out of date \(changed: kb:\/\/u\/team\/f1\.md\), so it is not quoted/u)
    expect(text).not.toContain('> — kb://u/team/.overview.md')
    expect(text).toContain("No compiled overview of kb://u/team/ is up to date; here is each file's title and opening:")
  })
})

describe('the compiled pages', () => {
  const OVERVIEW = '# Overview: team\n\nDirectory: kb://u/team/\n\n- **pager.md** — the pager stays silent at night.\n- **hotels.md** — the hotel cap is 220 EUR.\n\n## Sources\n\n- pager.md: kb://u/team/pager.md\n\n---\nGenerated (local)\n'

  it('quotes the body of a page, between its title and its sources, at its offset', () => {
    const body = layerPageQuote({ document: doc('kb://u/team/.overview.md', OVERVIEW), maxChars: 2000 })!
    expect(body.cut).toBe(false)
    expect(body.quote.lines).toEqual(['- **pager.md** — the pager stays silent at night.', '- **hotels.md** — the hotel cap is 220 EUR.'])
    expect(fileText(OVERVIEW, body.quote.start, body.quote.end)).toBe(body.quote.lines.join(' '))
  })

  it('says it is the compiled summary of the folder', () => {
    const layer = { uri: 'kb://u/team/.overview.md', stale: false, writtenAt: '2026-12-06T10:00:00.000Z', changes: undefined }
    const answer = answerFromCompiledPages({ folderUri: 'kb://u/team/', pages: [{ layer, kind: 'overview', document: doc(layer.uri, OVERVIEW) }], phrases: english })!
    expect(answer.text).toMatch(/^This is the compiled summary of kb:\/\/u\/team\/ \(its abstract and overview, written 2026-12-06; up to date with its files\):/u)
    expect(answer.text).toContain('> — kb://u/team/.overview.md (offset ')
  })
})

describe('filesUnder', () => {
  it('lists a folder\'s own files first, then its listed subfolders\', leaving compiled pages out', () => {
    const entry = (name: string, kind: string, uri: string) => ({ name, kind, uri })
    const team = {
      uri: 'kb://u/team/',
      total: 5,
      entries: [entry('a.md', 'file', 'kb://u/team/a.md'), entry('.overview.md', 'file', 'kb://u/team/.overview.md'), entry('summaries', 'directory', 'kb://u/team/summaries/'), entry('sub', 'directory', 'kb://u/team/sub/'), entry('other', 'directory', 'kb://u/team/other/')],
      overview: { uri: 'kb://u/team/.overview.md', stale: true, writtenAt: undefined, changes: undefined },
    }
    const sub = { uri: 'kb://u/team/sub/', total: 1, entries: [entry('b.md', 'file', 'kb://u/team/sub/b.md')] }
    const { files, unlisted } = filesUnder({ folder: team, listings: [team, sub] })
    expect(files.map((f) => f.uri)).toEqual(['kb://u/team/a.md', 'kb://u/team/sub/b.md'])
    expect(unlisted.map((f) => f.uri)).toEqual(['kb://u/team/other/'])
  })
})
