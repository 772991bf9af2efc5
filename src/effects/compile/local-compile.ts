// The built-in local model as a compile engine: extractive, deterministic, offline. Only whole
// sentences of the source reach a summary (src/effects/llm/local/summaries.ts, the same passage
// logic the local model answers with).
import { summariseDocument, summariseOverview } from '../llm/local/index.ts'
import type { CompileRequest } from './compile-prompts.ts'

export function compileLocally(request: CompileRequest): string {
  switch (request.purpose) {
    case 'summary':
      return summariseDocument({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || '(no text to summarise)'
    case 'overview': {
      const parts = request.parts ?? []
      const head = `${request.title} holds ${parts.length} compiled document${parts.length === 1 ? '' : 's'}.`
      const documents = parts.map((part) => ({ name: `**${part.name}** (${part.uri})`, summary: part.summary }))
      const lines = summariseOverview({ title: request.title, documents, maxChars: request.maxChars - head.length - 2 })
      return lines === '' ? head : `${head}\n\n${lines}`
    }
    case 'abstract':
      return summariseDocument({ title: request.title, text: request.sourceText, maxChars: request.maxChars }) || request.title
  }
}
