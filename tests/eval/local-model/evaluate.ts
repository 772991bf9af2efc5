// The evaluation of the built-in local model (issue 15): every question of questions.json goes
// through the real turn (runTurn: turn machine, real tools, real PostgreSQL) and its answer is
// graded from what the user sees — the quoted passages and their citations — checked against the
// tool results of the same turn. Used by `npm run eval:local` (main.ts) and by the score-floor
// test (tests/db/local-model-eval.test.ts).
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { findUserByLogin } from '../../../src/effects/auth/users.ts'
import { makeLocalChatModel } from '../../../src/effects/llm/local/index.ts'
import type { ChatModel } from '../../../src/effects/llm/model.ts'
import { makeToolRegistry } from '../../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../../src/effects/tools/workspace-tools.ts'
import { runTurn } from '../../../src/effects/turn/run-turn.ts'
import { bootstrapDemo } from '../../../src/effects/workspace/bootstrap-demo.ts'
import { importFolder } from '../../../src/effects/workspace/import-folder.ts'
import { makeDocumentParser, type DocumentParser } from '../../../src/effects/workspace/parse/document-parser.ts'
import type { Db, Owner } from '../../../src/effects/db/schema.ts'
import type { ChatMessage } from '../../../src/machines/index.ts'

export const EVAL_CORPUS_DIR = fileURLToPath(new URL('../../fixtures/eval-corpus/', import.meta.url))
/** Each folder of eval-corpus/ is a corpus of its own, imported as kb://users/demo/<folder>/. */
export const EVAL_CORPORA = ['handbook', 'product-team', 'people', 'support', 'finance', 'engineering-wiki', 'it-security', 'sales'] as const
const QUESTIONS_FILE = fileURLToPath(new URL('./questions.json', import.meta.url))
const MAX_FILE_BYTES = 50 * 1024 * 1024
const WORKSPACE_TOOL_REGISTRY = makeToolRegistry(WORKSPACE_TOOLS)

export type EvalQuestion =
  | { readonly id: string; readonly scope: string; readonly question: string; readonly unanswerable: true }
  | {
      readonly id: string
      readonly scope: string
      readonly question: string
      readonly unanswerable?: false
      /**
       * "summary": a question about the folder as a whole ("what are these files about"), graded by
       * `gradeSummary`; else a question of one fact, graded by its passage.
       */
      readonly kind?: 'summary' | undefined
      /** Case-insensitive regular expressions, all of which must be in the quotes from one source (a summary: anywhere in its quotes and titles). */
      readonly facts: ReadonlyArray<string>
      /** Any one of these URIs. */
      readonly sources: ReadonlyArray<string>
    }

export type EvalOutcome =
  /** Answerable, answered: the facts quoted from an expected source. */
  | 'answered'
  /** Answerable, but the answer said honestly that nothing was found. */
  | 'missed'
  /** Unanswerable, answered honestly: nothing cited, nothing found said. */
  | 'honest'
  /** Anything else: a wrong fact or source, a quote that was not read, a citation where none fits, a failed turn. */
  | 'wrong'

export interface EvalResult {
  readonly question: EvalQuestion
  readonly outcome: EvalOutcome
  readonly reason: string
  readonly answer: string
  /** The model's thinking lines, in order (why it read what it read, why it found nothing). */
  readonly thinking: ReadonlyArray<string>
  readonly ms: number
}

export interface EvalReport {
  readonly results: ReadonlyArray<EvalResult>
  readonly answerable: number
  readonly unanswerable: number
  readonly answered: number
  readonly missed: number
  readonly honest: number
  readonly wrong: number
  readonly p50Ms: number
  readonly p95Ms: number
}

export function loadEvalQuestions(): EvalQuestion[] {
  const parsed = JSON.parse(readFileSync(QUESTIONS_FILE, 'utf8')) as { questions: EvalQuestion[] }
  return parsed.questions
}

/** The sample corpus (as on a first start) and the evaluation corpora, all owned by `demo`. */
export async function loadEvalCorpora(db: Db): Promise<Owner> {
  const parser = makeDocumentParser({ processes: 1 })
  try {
    return await loadWith(db, parser)
  } finally {
    await parser.close()
  }
}

async function loadWith(db: Db, parser: DocumentParser): Promise<Owner> {
  const demo = await bootstrapDemo(db, { demoPassword: 'eval-password-1', maxFileBytes: MAX_FILE_BYTES, parser })
  if (!demo.created || demo.report === undefined || demo.report.failed.length > 0) {
    throw new Error(`the sample corpus did not load: ${JSON.stringify(demo.report?.failed ?? 'database not empty')}`)
  }
  const owner = (await findUserByLogin(db, 'demo'))!
  for (const corpus of EVAL_CORPORA) {
    const report = await importFolder(db, { owner, folder: join(EVAL_CORPUS_DIR, corpus), targetSegments: [corpus], maxFileBytes: MAX_FILE_BYTES, parser })
    if (report.failed.length > 0 || report.unparsed.length > 0) {
      throw new Error(`the evaluation corpus ${corpus} did not load: ${JSON.stringify([...report.failed, ...report.unparsed])}`)
    }
  }
  return owner
}

export async function runLocalModelEval({
  db,
  caller,
  questions = loadEvalQuestions(),
  model = makeLocalChatModel({ deltaDelayMs: 0 }),
}: {
  readonly db: Db
  readonly caller: Owner
  readonly questions?: ReadonlyArray<EvalQuestion>
  readonly model?: ChatModel
}): Promise<EvalReport> {
  // One untimed turn first, so the timings measure answering rather than module loading and JIT.
  await askOnce({ db, caller, model, question: questions[0]! })
  const results: EvalResult[] = []
  for (const question of questions) {
    const started = performance.now()
    const turn = await askOnce({ db, caller, model, question })
    const ms = performance.now() - started
    results.push({ question, ms, answer: turn.answer, thinking: turn.thinking, ...gradeAnswer({ question, ...turn }) })
  }
  return summarise(results)
}

async function askOnce({ db, caller, model, question }: { db: Db; caller: Owner; model: ChatModel; question: EvalQuestion }) {
  const thinking: string[] = []
  const output = await runTurn({
    db,
    caller,
    tools: WORKSPACE_TOOL_REGISTRY,
    model,
    turnId: randomUUID(),
    uri: question.scope,
    question: question.question,
    history: [],
    onEvent: (event) => {
      if (event.type === 'thinking') thinking.push(event.text)
    },
    signal: new AbortController().signal,
  })
  const answer = output.messages.findLast((m) => m.role === 'assistant' && (m.tool_calls ?? []).length === 0)
  return {
    status: output.status,
    error: output.error?.message,
    answer: answer?.role === 'assistant' ? (answer.content ?? '') : '',
    thinking,
    messages: output.messages,
  }
}

// ---------------------------------------------------------------------------------------------
// Grading

export interface Citation {
  readonly uri: string
  readonly offset: number
  /** The quoted text, block-quote markers removed, whitespace collapsed. */
  readonly quote: string
}

const CITATION_LINE = /^> — (kb:\/\/\S+) (?:\(offset (\d+)\)|（偏移 (\d+)）)$/u

/** The quotes of an answer: `> …` lines, each block ending with a `> — kb://… (offset N)` line. */
export function parseCitations(answer: string): Citation[] {
  const citations: Citation[] = []
  let block: string[] = []
  for (const line of answer.split('\n')) {
    const citation = CITATION_LINE.exec(line)
    if (citation !== null) {
      citations.push({ uri: citation[1]!, offset: Number(citation[2] ?? citation[3]), quote: collapse(block.join(' ')) })
      block = []
    } else if (line.startsWith('>')) {
      block.push(line.replace(/^>\s?/u, ''))
    } else {
      block = []
    }
  }
  return citations
}

interface ReadPage {
  readonly uri: string
  readonly offset: number
  readonly text: string
}

/** The pages the `read` tool returned in the turn. */
export function readPagesOf(messages: ReadonlyArray<ChatMessage>): ReadPage[] {
  const readCalls = new Set(
    messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).filter((c) => c.function.name === 'read').map((c) => c.id),
  )
  return messages.flatMap((m): ReadPage[] => {
    if (m.role !== 'tool' || !readCalls.has(m.tool_call_id)) return []
    const result = JSON.parse(m.content) as { uri?: unknown; offset?: unknown; text?: unknown }
    return typeof result.uri === 'string' && typeof result.text === 'string'
      ? [{ uri: result.uri, offset: Number(result.offset ?? 0), text: result.text }]
      : []
  })
}

/** Whether the quote is the text at its offset in a page read in the turn (whitespace collapsed). */
export function isQuoteRead(citation: Citation, pages: ReadonlyArray<ReadPage>): boolean {
  return pages.some((page) => {
    if (page.uri !== citation.uri) return false
    const chars = Array.from(page.text)
    const start = citation.offset - page.offset
    if (start < 0 || start >= chars.length) return false
    return collapse(chars.slice(start).join('')).startsWith(citation.quote)
  })
}

const NOTHING_FOUND = /nothing in|没有.*(内容|涉及|相关)/iu

export function gradeAnswer({
  question,
  status,
  error,
  answer,
  messages,
}: {
  readonly question: EvalQuestion
  readonly status: string
  readonly error: string | undefined
  readonly answer: string
  readonly messages: ReadonlyArray<ChatMessage>
}): { outcome: EvalOutcome; reason: string } {
  if (status !== 'done') return { outcome: 'wrong', reason: `the turn ended ${status}: ${error ?? ''}` }
  const citations = parseCitations(answer)
  const saysNothing = citations.length === 0 && NOTHING_FOUND.test(answer)
  const pages = readPagesOf(messages)
  const unread = citations.find((c) => !isQuoteRead(c, pages))
  if (unread !== undefined) return { outcome: 'wrong', reason: `quote not read in this turn: ${unread.uri} @${unread.offset}` }
  if (question.unanswerable === true) {
    if (saysNothing) return { outcome: 'honest', reason: 'nothing cited, nothing found said' }
    return { outcome: 'wrong', reason: citations.length > 0 ? `cited ${citations.map((c) => c.uri).join(', ')}` : 'no honest "nothing found"' }
  }
  if (saysNothing) return { outcome: 'missed', reason: 'said nothing was found' }
  if (citations.length === 0) return { outcome: 'wrong', reason: 'no citation' }
  if (question.kind === 'summary') return gradeSummary({ question, answer, citations })
  const answeredFrom = question.sources.find((source) => {
    const quoted = citations.filter((c) => c.uri === source).map((c) => c.quote).join(' ')
    return question.facts.every((fact) => new RegExp(fact, 'iu').test(quoted))
  })
  if (answeredFrom !== undefined) return { outcome: 'answered', reason: `quoted from ${answeredFrom}` }
  return { outcome: 'wrong', reason: `facts not quoted from an expected source; cited ${[...new Set(citations.map((c) => c.uri))].join(', ')}` }
}

/** A summary's listed titles: its list lines outside the quotes ("- **Release process** — kb://…"). */
export function listedTitles(answer: string): string[] {
  return answer.split('\n').flatMap((line) => (/^\s*[-*] /u.test(line) ? [collapse(line.replace(/^\s*[-*] /u, '').replace(/\*\*/gu, ''))] : []))
}

/**
 * A summary of a folder is answered when every fact is somewhere in its quoted text or its listed
 * titles (facts span the folder's files, not one passage), and it cites at least one expected source.
 */
export function gradeSummary({
  question,
  answer,
  citations,
}: {
  readonly question: { readonly facts: ReadonlyArray<string>; readonly sources: ReadonlyArray<string> }
  readonly answer: string
  readonly citations: ReadonlyArray<Citation>
}): { outcome: EvalOutcome; reason: string } {
  const cited = citations.filter((c) => question.sources.includes(c.uri))
  if (cited.length === 0) return { outcome: 'wrong', reason: `no expected source cited; cited ${[...new Set(citations.map((c) => c.uri))].join(', ')}` }
  const text = [...citations.map((c) => c.quote), ...listedTitles(answer)].join('\n')
  const missing = question.facts.filter((fact) => !new RegExp(fact, 'iu').test(text))
  if (missing.length > 0) return { outcome: 'wrong', reason: `not in the quotes or titles: ${missing.join(', ')}` }
  return { outcome: 'answered', reason: `summary citing ${[...new Set(cited.map((c) => c.uri))].length} expected source(s)` }
}

const CJK = '[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3000-\\u303f\\uff00-\\uffef]'
const SPACE_BETWEEN_CJK = new RegExp(`(?<=${CJK})\\s+(?=${CJK})`, 'gu')

/** Whitespace collapsed, and none kept between CJK characters (a quote may join lines either way). */
function collapse(text: string): string {
  return text.replace(SPACE_BETWEEN_CJK, '').replace(/\s+/gu, ' ').trim()
}

// ---------------------------------------------------------------------------------------------
// Report

function summarise(results: ReadonlyArray<EvalResult>): EvalReport {
  const count = (outcome: EvalOutcome) => results.filter((r) => r.outcome === outcome).length
  const times = results.map((r) => r.ms).sort((a, b) => a - b)
  return {
    results,
    answerable: results.filter((r) => r.question.unanswerable !== true).length,
    unanswerable: results.filter((r) => r.question.unanswerable === true).length,
    answered: count('answered'),
    missed: count('missed'),
    honest: count('honest'),
    wrong: count('wrong'),
    p50Ms: percentile(times, 0.5),
    p95Ms: percentile(times, 0.95),
  }
}

/** Sorted times per corpus: the first folder of the question's scope (samples, handbook). */
function timesByCorpus(results: ReadonlyArray<EvalResult>): Map<string, number[]> {
  const byCorpus = new Map<string, number[]>()
  for (const result of results) {
    const corpus = /^kb:\/\/users\/[^/]+\/([^/]+)/u.exec(result.question.scope)?.[1] ?? result.question.scope
    byCorpus.set(corpus, [...(byCorpus.get(corpus) ?? []), result.ms])
  }
  for (const times of byCorpus.values()) times.sort((a, b) => a - b)
  return byCorpus
}

function percentile(sorted: ReadonlyArray<number>, p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}

/**
 * The report: totals, times, then the misses and wrong answers with their thinking (every answer
 * with `verbose`). `totalsOnly` prints the totals and times alone — the frozen set's default, so
 * that nobody tuning the model reads its questions and answers by the way.
 */
export function formatEvalReport(report: EvalReport, { verbose = false, totalsOnly = false }: { verbose?: boolean; totalsOnly?: boolean } = {}): string {
  const percent = (n: number, of: number) => (of === 0 ? '–' : `${((100 * n) / of).toFixed(1)} %`)
  const wrongAnswerable = report.results.filter((r) => r.question.unanswerable !== true && r.outcome === 'wrong').length
  const lines = [
    `Local model evaluation: ${report.results.length} questions (${report.answerable} answerable, ${report.unanswerable} with no answer in scope)`,
    '',
    `answerable    answered with the fact and its source  ${report.answered}/${report.answerable}  ${percent(report.answered, report.answerable)}`,
    `              honest "nothing found" (missed)        ${report.missed}/${report.answerable}`,
    `              wrong                                  ${wrongAnswerable}/${report.answerable}`,
    `unanswerable  honest "nothing found", no citation    ${report.honest}/${report.unanswerable}  ${percent(report.honest, report.unanswerable)}`,
    `              wrong                                  ${report.unanswerable - report.honest}/${report.unanswerable}`,
    `time per question  p50 ${report.p50Ms.toFixed(1)} ms   p95 ${report.p95Ms.toFixed(1)} ms`,
    ...[...timesByCorpus(report.results)].map(
      ([corpus, times]) => `  ${corpus.padEnd(16)} p50 ${percentile(times, 0.5).toFixed(1)} ms   p95 ${percentile(times, 0.95).toFixed(1)} ms   (${times.length} questions)`,
    ),
  ]
  const shown = verbose ? report.results : totalsOnly ? [] : report.results.filter((r) => r.outcome === 'wrong' || r.outcome === 'missed')
  if (shown.length > 0) lines.push('')
  for (const result of shown) {
    lines.push(`[${result.outcome}] ${result.question.id} (${result.ms.toFixed(0)} ms): ${result.reason}`)
    if (verbose || result.outcome !== 'answered') {
      lines.push(...result.thinking.map((line) => `    (thinking) ${line}`), ...result.answer.split('\n').map((line) => `    ${line}`))
    }
  }
  return lines.join('\n')
}
