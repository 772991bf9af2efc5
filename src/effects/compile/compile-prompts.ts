// What a compile step asks a model (or a CLI) to write, and the Markdown pages the pipeline
// publishes around the answers. The model writes only the text; titles, source links and the
// "generated" note are the pipeline's, so every artifact says where it came from. URIs in them are
// linkable (linkableKbUri): a name with spaces stays one URI for readers, renderers and models.
import { linkableKbUri } from '../workspace/uri.ts'

/** Bump when the prompts change: it is part of every cache fingerprint. */
export const PROMPT_VERSION = 1

export type CompilePurpose = 'summary' | 'overview' | 'abstract'

export const TARGET_CHARS: Readonly<Record<CompilePurpose, number>> = { summary: 1_200, overview: 3_000, abstract: 500 }

export interface CompileRequest {
  readonly purpose: CompilePurpose
  /** The instruction (with the compile skill's body appended). */
  readonly system: string
  /** The material: one document, the summaries, or the overview. */
  readonly input: string
  /** The document's or directory's name. */
  readonly title: string
  /** The source text alone (without the framing), for extractive summarisers. */
  readonly sourceText: string
  /** The overview's summaries, for engines that work on structure (the local extractive one). */
  readonly parts?: ReadonlyArray<SummaryForOverview> | undefined
  readonly maxChars: number
}

const INSTRUCTIONS: Readonly<Record<CompilePurpose, string>> = {
  summary:
    'You summarise one document for a knowledge wiki. Write at most {max} characters of Markdown: what the document is and what it says that matters. Output only the summary, no title and no preamble.',
  overview:
    'You write the overview of a directory for a knowledge wiki, from the summaries of its documents. Write at most {max} characters of Markdown: what the directory holds, how its documents relate, and where to look for what (name the documents). Output only the overview, no title and no preamble.',
  abstract:
    'You write the abstract of a directory for a knowledge wiki, from its overview. Write at most {max} characters: two to four sentences a reader can scan to decide whether the directory is relevant. Output only the abstract.',
}

export interface SkillText {
  readonly name: string
  readonly body: string
}

export function systemPrompt({ purpose, skill }: { readonly purpose: CompilePurpose; readonly skill: SkillText | undefined }): string {
  const instruction = INSTRUCTIONS[purpose].replace('{max}', String(TARGET_CHARS[purpose]))
  return skill ? `${instruction}\n\nFollow this compile skill ("${skill.name}"):\n${skill.body}` : instruction
}

function cut(text: string, maxChars: number): { text: string; note: string } {
  const chars = Array.from(text)
  if (chars.length <= maxChars) return { text, note: '' }
  return { text: chars.slice(0, maxChars).join(''), note: ` (the first ${maxChars} of ${chars.length} characters)` }
}

export function summaryRequest({ name, uri, body, skill, maxInputChars }: { name: string; uri: string; body: string; skill: SkillText | undefined; maxInputChars: number }): CompileRequest {
  const { text, note } = cut(body, maxInputChars)
  return {
    purpose: 'summary',
    system: systemPrompt({ purpose: 'summary', skill }),
    input: `Document: ${name}\nURI: ${linkableKbUri(uri)}\nText${note}:\n---\n${text}`,
    title: name,
    sourceText: text,
    maxChars: TARGET_CHARS.summary,
  }
}

export interface SummaryForOverview {
  readonly name: string
  readonly uri: string
  readonly summary: string
}

export function overviewRequest({ directoryName, summaries, skill, maxInputChars }: { directoryName: string; summaries: ReadonlyArray<SummaryForOverview>; skill: SkillText | undefined; maxInputChars: number }): CompileRequest {
  const linkable = summaries.map((entry) => ({ ...entry, uri: linkableKbUri(entry.uri) }))
  const material = linkable.map((entry) => `## ${entry.name}\nURI: ${entry.uri}\n\n${entry.summary}`).join('\n\n')
  const { text, note } = cut(material, maxInputChars)
  return {
    purpose: 'overview',
    system: systemPrompt({ purpose: 'overview', skill }),
    input: `Directory: ${directoryName}\nSummaries of its documents${note}:\n---\n${text}`,
    title: directoryName,
    sourceText: text,
    parts: linkable,
    maxChars: TARGET_CHARS.overview,
  }
}

export function abstractRequest({ directoryName, overview, skill }: { directoryName: string; overview: string; skill: SkillText | undefined }): CompileRequest {
  return {
    purpose: 'abstract',
    system: systemPrompt({ purpose: 'abstract', skill }),
    input: `Directory: ${directoryName}\nOverview:\n---\n${overview}`,
    title: directoryName,
    sourceText: overview,
    maxChars: TARGET_CHARS.abstract,
  }
}

/** The prompt a CLI receives on stdin: instruction, then the material after a "---" line. */
export function cliPrompt(request: CompileRequest): string {
  return `${request.system}\n\n${request.input}\n`
}

// ── the published pages ───────────────────────────────────────────────────────────────────

const GENERATED_NOTE = 'Generated by a knowagent compile job; compiling again replaces it.'

export function summaryPage({ name, uri, summary, engine }: { name: string; uri: string; summary: string; engine: string }): string {
  return `# Summary: ${name}\n\nSource: ${linkableKbUri(uri)}\n\n${summary.trim()}\n\n---\n${GENERATED_NOTE} (${engine})\n`
}

export function overviewPage({ directoryName, directoryUri, overview, sources, engine }: { directoryName: string; directoryUri: string; overview: string; sources: ReadonlyArray<{ name: string; uri: string; summaryUri: string }>; engine: string }): string {
  const list = sources.map((source) => `- ${source.name}: ${linkableKbUri(source.uri)} (summary: ${linkableKbUri(source.summaryUri)})`).join('\n')
  return `# Overview: ${directoryName}\n\nDirectory: ${linkableKbUri(directoryUri)}\n\n${overview.trim()}\n\n## Sources\n\n${list}\n\n---\n${GENERATED_NOTE} (${engine})\n`
}

export function abstractPage({ directoryName, overviewUri, abstract, engine }: { directoryName: string; overviewUri: string; abstract: string; engine: string }): string {
  return `# Abstract: ${directoryName}\n\n${abstract.trim()}\n\nOverview: ${linkableKbUri(overviewUri)}\n\n---\n${GENERATED_NOTE} (${engine})\n`
}

/** The summary text of a published summary page (what the overview of a later job reads). */
export function summaryFromPage(page: string): string {
  const match = /^# Summary: [^\n]*\n\nSource: [^\n]*\n\n([\s\S]*?)\n\n---\n[^\n]*\n?$/.exec(page.replace(/\r\n?/g, '\n'))
  return (match?.[1] ?? page).trim()
}
