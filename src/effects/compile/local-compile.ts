// The built-in local model as a compile engine: extractive, deterministic, offline. Only whole
// sentences of the source reach a summary (see src/effects/llm/extractive-summary.ts).
import { summariseExtractively } from '../llm/extractive-summary.ts'
import type { CompileRequest } from './compile-prompts.ts'

const PER_DOCUMENT_CHARS = 280

function plain(markdown: string): string {
  return markdown
    .replace(/^#{1,6}\s+/gmu, '')
    .replace(/^\s*[-*+]\s+/gmu, '')
    .replace(/[*_`]+/gu, '')
    .trim()
}

export function compileLocally(request: CompileRequest): string {
  switch (request.purpose) {
    case 'summary':
      return summariseExtractively({ text: plain(request.sourceText), maxChars: request.maxChars }) || '(no text to summarise)'
    case 'overview': {
      const parts = request.parts ?? []
      const head = `${request.title} holds ${parts.length} compiled document${parts.length === 1 ? '' : 's'}.`
      const lines: string[] = []
      let used = head.length
      for (const [index, part] of parts.entries()) {
        const line = `- **${part.name}** (${part.uri}): ${summariseExtractively({ text: plain(part.summary), maxChars: PER_DOCUMENT_CHARS })}`
        if (used + line.length + 1 > request.maxChars && lines.length > 0) {
          lines.push(`- … and ${parts.length - index} more (see the summaries)`)
          break
        }
        lines.push(line)
        used += line.length + 1
      }
      return [head, '', ...lines].join('\n')
    }
    case 'abstract':
      return summariseExtractively({ text: plain(request.sourceText), maxChars: request.maxChars }) || request.title
  }
}
