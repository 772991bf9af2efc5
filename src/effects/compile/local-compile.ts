// The built-in local model as a compile engine: extractive, deterministic, offline (issue 35:
// pages a person can use). A summary is the file's subject and its key points under their
// sections; the overview a line per file, "- **file** (uri) — subject: point; point"; the abstract three
// to five sentences on what the folder holds (src/effects/llm/local/compile-pages.ts, outline.ts).
// Only the source's own sentences, list items and rows are points; a data file (CSV) is read
// row by row under its header.
import { summariseDocument, writeAbstract, writeOverview, writeSummary } from '../llm/local/index.ts'
import type { CompileRequest } from './compile-prompts.ts'

/**
 * The published page adds a "Sources" list (each file's URI and its summary's, compile-prompts.ts
 * overviewPage): the overview leaves it room, so that the whole page is one page of the read tool
 * (3,000 code points) while the folder is small.
 */
const sourcesListChars = (parts: ReadonlyArray<{ readonly name: string; readonly uri: string }>): number =>
  200 + parts.reduce((sum, part) => sum + part.name.length + 2 * part.uri.length + 30, 0)
const MIN_OVERVIEW_CHARS = 1_000

/** Bump when the pages this engine writes change: cached steps of an older version are written again. 2: issue 35's subjects and key points. */
export const LOCAL_COMPILE_VERSION = 2

const countLine = (title: string, count: number): string => `${title} holds ${count} compiled document${count === 1 ? '' : 's'}.`

export function compileLocally(request: CompileRequest): string {
  switch (request.purpose) {
    case 'summary':
      return writeSummary({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || '(no text to summarise)'
    case 'overview': {
      const parts = request.parts ?? []
      const head = countLine(request.title, parts.length)
      const lines = writeOverview({ documents: parts, maxChars: Math.max(MIN_OVERVIEW_CHARS, request.maxChars - head.length - 2 - sourcesListChars(parts)) })
      return lines === '' ? head : `${head}\n\n${lines}`
    }
    case 'abstract': {
      if (!/^- \*\*/mu.test(request.sourceText)) return summariseDocument({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || request.title
      return writeAbstract({ title: request.title, overview: request.sourceText, maxChars: request.maxChars }) || request.title
    }
  }
}
