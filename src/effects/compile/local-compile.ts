// The built-in local model as a compile engine: extractive, deterministic, offline. Only whole
// sentences of the source reach a summary (src/effects/llm/local/summaries.ts, the same passage
// logic the local model answers with); a data file (JSON, CSV) is described by its keys or columns.
import { summariseAbstract, summariseDocument, summariseOverview, type SummarisedDocument } from '../llm/local/index.ts'
import type { CompileRequest } from './compile-prompts.ts'

/** An overview line per document: a sentence or two, not its whole summary. */
const PER_DOCUMENT_CHARS = 280

const nameOf = (part: { readonly name: string; readonly uri: string }): string => `**${part.name}** (${part.uri})`

/** The documents of an overview this engine wrote: its `- **name** (uri): gist` lines. */
function documentsOfOverview(overview: string): SummarisedDocument[] {
  return [...overview.matchAll(/^- (\*\*[^*\n]+\*\* \(kb:\/\/\S+\)): (.+)$/gmu)].map((match) => ({ name: match[1]!, summary: match[2]! }))
}

const countLine = (title: string, count: number): string => `${title} holds ${count} compiled document${count === 1 ? '' : 's'}.`

export function compileLocally(request: CompileRequest): string {
  switch (request.purpose) {
    case 'summary':
      return summariseDocument({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || '(no text to summarise)'
    case 'overview': {
      const parts = request.parts ?? []
      const head = countLine(request.title, parts.length)
      const documents = parts.map((part) => ({ name: nameOf(part), summary: part.summary }))
      const lines = summariseOverview({ title: request.title, documents, maxChars: request.maxChars - head.length - 2, maxCharsPerDocument: PER_DOCUMENT_CHARS })
      return lines === '' ? head : `${head}\n\n${lines}`
    }
    case 'abstract': {
      const documents = documentsOfOverview(request.sourceText)
      if (documents.length === 0) return summariseDocument({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || request.title
      const head = countLine(request.title, documents.length)
      const abstract = summariseAbstract({ title: request.title, documents, maxChars: request.maxChars - head.length - 1 })
      return abstract === '' ? head : `${head} ${abstract}`
    }
  }
}
