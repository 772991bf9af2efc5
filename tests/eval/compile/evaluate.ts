// The evaluation of the built-in local model's compile pages (issue 35): each corpus folder goes
// through the same steps a compile job of that folder takes with the local model — every file
// parsed (parseDocument), summarised (summaryRequest → the local channel), the summaries made into
// the folder's overview (overviewRequest), the overview into its abstract (abstractRequest) — and
// the pages are scored against the corpus's expectations.json. Used by `npm run eval:compile`
// (main.ts) and by tests/unit/compile-eval.test.ts (the structural properties only).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { makeLocalChannel } from '../../../src/effects/compile/compile-channel.ts'
import { abstractRequest, overviewRequest, summaryRequest, type CompileRequest } from '../../../src/effects/compile/compile-prompts.ts'
import { parseDocument } from '../../../src/effects/workspace/parse/parse-document.ts'

export const DEV_CORPORA_DIR = fileURLToPath(new URL('../../fixtures/compile-eval/dev/', import.meta.url))
export const FROZEN_CORPORA_DIR = fileURLToPath(new URL('../../fixtures/compile-eval/frozen/', import.meta.url))
export const EXPECTATIONS_FILE = 'expectations.json'

const KeyFact = Schema.Struct({
  file: Schema.String,
  fact: Schema.String,
  mustContainAny: Schema.Array(Schema.String),
})

const Corpus = Schema.Struct({
  folder: Schema.String,
  files: Schema.optional(Schema.Array(Schema.String)),
  keyFacts: Schema.optional(Schema.Array(KeyFact)),
  abstractMustMentionAny: Schema.optional(Schema.Array(Schema.Array(Schema.String))),
})

const Expectations = Schema.Struct({
  about: Schema.optional(Schema.String),
  corpora: Schema.Array(Corpus),
})

export type CorpusExpectations = typeof Corpus.Type

export function loadExpectations(corporaDir: string): ReadonlyArray<CorpusExpectations> {
  const json: unknown = JSON.parse(readFileSync(join(corporaDir, EXPECTATIONS_FILE), 'utf8'))
  return Schema.decodeUnknownSync(Expectations)(json, { errors: 'all' }).corpora
}

export interface CompiledFolder {
  readonly files: ReadonlyArray<{ readonly name: string; readonly summary: string }>
  /** Files the parser could not read (they are not compile inputs). */
  readonly unreadable: ReadonlyArray<{ readonly name: string; readonly reason: string }>
  readonly overview: string
  readonly abstract: string
  readonly ms: number
}

const channel = makeLocalChannel()

/** One step on the local model's channel, as the compile pipeline calls it (without a thread). */
const complete = (request: CompileRequest): string => Effect.runSync(channel.complete(request))

/** A folder compiled as a compile job of it would be: its files in name order, the summaries into an overview, the overview into an abstract. */
export async function compileFolder({ dir, folder, owner = 'eval' }: { readonly dir: string; readonly folder: string; readonly owner?: string }): Promise<CompiledFolder> {
  const started = performance.now()
  const names = readdirSync(dir)
    .filter((name) => !name.startsWith('.') && statSync(join(dir, name)).isFile())
    .sort()
  const files: Array<{ name: string; uri: string; summary: string }> = []
  const unreadable: Array<{ name: string; reason: string }> = []
  for (const name of names) {
    const parsed = await parseDocument({ name, bytes: readFileSync(join(dir, name)) })
    if (!parsed.ok) {
      unreadable.push({ name, reason: parsed.error })
      continue
    }
    if (parsed.text.trim() === '') {
      unreadable.push({ name, reason: 'the parsed body is empty' })
      continue
    }
    const uri = `kb://users/${owner}/${folder}/${name}`
    const summary = complete(summaryRequest({ name, uri, body: parsed.text, skill: undefined, maxInputChars: channel.maxInputChars }))
    files.push({ name, uri, summary })
  }
  const overview = complete(overviewRequest({ directoryName: folder, summaries: files, skill: undefined, maxInputChars: channel.maxInputChars }))
  const abstract = complete(abstractRequest({ directoryName: folder, overview, skill: undefined }))
  return { files, unreadable, overview, abstract, ms: performance.now() - started }
}

// ── scoring ──────────────────────────────────────────────────────────────────────────────────

const normalise = (text: string): string => text.replace(/\s+/gu, ' ').trim().toLowerCase()

/** Sentences of prose: a full stop, question or exclamation mark followed by space and a capital, a digit or the end. */
export function sentencesOf(text: string): string[] {
  return text
    .replace(/\s+/gu, ' ')
    .trim()
    .split(/(?<=[.!?。！？]["'”’)\]]*)\s+(?=["'“‘(\[*]*[\p{Lu}\p{N}])|(?<=[。！？])/u)
    .map((sentence) => sentence.trim())
    .filter((sentence) => /[\p{L}\p{N}]/u.test(sentence))
}

/** Lines (and, for prose, sentences) that occur more than once, normalised. */
export function repeatedLines(text: string, { sentences = false }: { readonly sentences?: boolean } = {}): string[] {
  const units = text
    .split('\n')
    .map(normalise)
    .filter((line) => /[\p{L}\p{N}]/u.test(line))
  if (sentences) units.push(...sentencesOf(text).map(normalise).filter((s) => !units.includes(s)))
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const unit of units) (seen.has(unit) ? repeated : seen).add(unit)
  return [...repeated]
}

export interface CorpusScore {
  readonly folder: string
  readonly files: number
  readonly filesNamed: ReadonlyArray<string>
  readonly filesMissing: ReadonlyArray<string>
  readonly facts: number
  readonly factsFound: ReadonlyArray<string>
  readonly factsMissing: ReadonlyArray<{ readonly file: string; readonly fact: string }>
  readonly repeated: ReadonlyArray<string>
  readonly abstractSentences: number
  readonly mentionGroups: number
  readonly mentionsMissing: ReadonlyArray<ReadonlyArray<string>>
  /** The mean of the five parts, each 0–1: files named, facts present, no repeated line, 3–5 abstract sentences, abstract mentions. */
  readonly score: number
  readonly compiled: CompiledFolder
}

export const abstractSentencesOk = (count: number): boolean => count >= 3 && count <= 5

export function scoreCorpus({ corpus, compiled }: { readonly corpus: CorpusExpectations; readonly compiled: CompiledFolder }): CorpusScore {
  const overview = normalise(compiled.overview)
  const abstract = normalise(compiled.abstract)
  const expectedFiles = corpus.files ?? [...compiled.files.map((f) => f.name), ...compiled.unreadable.map((f) => f.name)]
  const filesNamed = expectedFiles.filter((file) => overview.includes(file.toLowerCase()))
  const facts = corpus.keyFacts ?? []
  const found = facts.filter((fact) => fact.mustContainAny.some((text) => overview.includes(normalise(text))))
  const groups = corpus.abstractMustMentionAny ?? []
  const mentionsMissing = groups.filter((group) => !group.some((text) => abstract.includes(normalise(text))))
  const repeated = [...repeatedLines(compiled.overview), ...repeatedLines(compiled.abstract, { sentences: true })]
  const abstractSentences = sentencesOf(compiled.abstract).length
  const ratio = (part: number, whole: number): number => (whole === 0 ? 1 : part / whole)
  const parts = [
    ratio(filesNamed.length, expectedFiles.length),
    ratio(found.length, facts.length),
    repeated.length === 0 ? 1 : 0,
    abstractSentencesOk(abstractSentences) ? 1 : 0,
    ratio(groups.length - mentionsMissing.length, groups.length),
  ]
  return {
    folder: corpus.folder,
    files: expectedFiles.length,
    filesNamed,
    filesMissing: expectedFiles.filter((file) => !filesNamed.includes(file)),
    facts: facts.length,
    factsFound: found.map((fact) => fact.fact),
    factsMissing: facts.filter((fact) => !found.includes(fact)).map(({ file, fact }) => ({ file, fact })),
    repeated,
    abstractSentences,
    mentionGroups: groups.length,
    mentionsMissing,
    score: parts.reduce((sum, part) => sum + part, 0) / parts.length,
    compiled,
  }
}

export interface CorpusSetReport {
  readonly label: string
  readonly dir: string
  readonly corpora: ReadonlyArray<CorpusScore>
  /** The mean of the corpora's scores. */
  readonly score: number
}

export async function evaluateCorpora({ dir, label }: { readonly dir: string; readonly label: string }): Promise<CorpusSetReport> {
  const corpora: CorpusScore[] = []
  for (const corpus of loadExpectations(dir)) {
    const compiled = await compileFolder({ dir: join(dir, corpus.folder), folder: corpus.folder })
    corpora.push(scoreCorpus({ corpus, compiled }))
  }
  const score = corpora.length === 0 ? 0 : corpora.reduce((sum, corpus) => sum + corpus.score, 0) / corpora.length
  return { label, dir, corpora, score }
}

/** The corpora a run without `--corpora` evaluates: the development set, and the frozen set when it is there. */
export function defaultCorpusSets(): Array<{ dir: string; label: string }> {
  const sets = [{ dir: DEV_CORPORA_DIR, label: 'development (tuned on)' }]
  if (existsSync(join(FROZEN_CORPORA_DIR, EXPECTATIONS_FILE))) sets.push({ dir: FROZEN_CORPORA_DIR, label: 'frozen (not tuned on)' })
  return sets
}

export function labelFor(dir: string): string {
  const resolved = dir.replace(/\/+$/u, '')
  if (resolved === DEV_CORPORA_DIR.replace(/\/+$/u, '')) return 'development (tuned on)'
  if (resolved === FROZEN_CORPORA_DIR.replace(/\/+$/u, '')) return 'frozen (not tuned on)'
  return dir
}

// ── the report ───────────────────────────────────────────────────────────────────────────────

function table(rows: ReadonlyArray<ReadonlyArray<string>>): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => Array.from(row[column] ?? '').length)))
  return rows.map((row) => row.map((cell, column) => cell + ' '.repeat(widths[column]! - Array.from(cell).length)).join('  ').trimEnd()).join('\n')
}

const fraction = (part: number, whole: number): string => `${part}/${whole}`

export function formatReport(sets: ReadonlyArray<CorpusSetReport>, { verbose = false }: { readonly verbose?: boolean } = {}): string {
  const out: string[] = []
  for (const set of sets) {
    out.push(`Compile pages of the local model — ${set.label}: ${set.dir} (${set.corpora.length} corpora)`, '')
    const sum = (pick: (c: CorpusScore) => number): number => set.corpora.reduce((total, corpus) => total + pick(corpus), 0)
    const rows = [
      ['corpus', 'files named', 'key facts', 'repeated lines', 'abstract sentences', 'abstract mentions', 'score'],
      ...set.corpora.map((c) => [
        c.folder,
        fraction(c.filesNamed.length, c.files),
        fraction(c.factsFound.length, c.facts),
        String(c.repeated.length),
        `${c.abstractSentences} ${abstractSentencesOk(c.abstractSentences) ? 'ok' : 'NOT 3–5'}`,
        fraction(c.mentionGroups - c.mentionsMissing.length, c.mentionGroups),
        c.score.toFixed(2),
      ]),
      [
        'total',
        fraction(sum((c) => c.filesNamed.length), sum((c) => c.files)),
        fraction(sum((c) => c.factsFound.length), sum((c) => c.facts)),
        String(sum((c) => c.repeated.length)),
        `${set.corpora.filter((c) => abstractSentencesOk(c.abstractSentences)).length}/${set.corpora.length} ok`,
        fraction(sum((c) => c.mentionGroups - c.mentionsMissing.length), sum((c) => c.mentionGroups)),
        set.score.toFixed(2),
      ],
    ]
    out.push(table(rows), '')
    for (const corpus of set.corpora) {
      const problems = [
        ...corpus.filesMissing.map((file) => `file not named: ${file}`),
        ...corpus.factsMissing.map(({ file, fact }) => `fact missing (${file}): ${fact}`),
        ...corpus.repeated.map((line) => `repeated: ${line}`),
        ...corpus.mentionsMissing.map((group) => `abstract mentions none of: ${group.join(' | ')}`),
        ...corpus.compiled.unreadable.map(({ name, reason }) => `unreadable: ${name} (${reason})`),
      ]
      if (problems.length > 0) out.push(`[${corpus.folder}]`, ...problems.map((p) => `  - ${p}`))
      if (verbose) {
        out.push(`[${corpus.folder}] overview (${Math.round(corpus.compiled.ms)} ms):`, indent(corpus.compiled.overview), `[${corpus.folder}] abstract:`, indent(corpus.compiled.abstract), '')
      }
    }
    out.push('')
  }
  return out.join('\n').trimEnd()
}

const indent = (text: string): string =>
  text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')
