// Test pages shared by the local model's text tests: a page over a text, where a quote stands in
// the file, and a small runbook with a symptom, a fix announced by a colon, a list and a table.
import { collapse, type Page } from './blocks.ts'

export const page = (text: string, options: Partial<Page> = {}): Page => ({ text, offset: 0, atStart: true, atEnd: true, name: 'doc.md', ...options })

/** The text as it stands in the file at the offsets (whitespace collapsed). */
export function fileText(text: string, start: number, end: number): string {
  return collapse(Array.from(text).slice(start, end).join(''))
}

export const RUNBOOK = `# Runbook

## 1. Starting a server

**Symptom: "the data directory is in use".** Another process already owns the embedded
database. Either stop it, or give the second process its own \`KNOWAGENT_DATA_DIR\`, or move both
to a shared PostgreSQL with \`DATABASE_URL\`.

## 2. The pager

**Symptom: the pager app does not ring at night.** The phone's do-not-disturb mode silences
the app unless it may send critical alerts. To fix this:

1. open the phone's settings and find PagerLoop;
2. allow critical alerts;
3. send yourself a test page.

## Hotels

The hotel cap is the most we reimburse per night:

| city | cap per night |
|------|---------------|
| London | 220 EUR |
| Paris | 190 EUR |
`
