// The frozen held-out question set of the built-in local model (issue 41): three team folders and
// 93 questions (a third unanswerable but near a topic the folders touch) written by someone who never
// read the model's code, in tests/fixtures/local-eval-frozen/. It is never tuned on: `npm run
// eval:local` reports it apart from the development set. Its questions name a corpus and sources
// relative to the set's folder; here they become the development set's shape, with the corpora
// imported under kb://users/demo/frozen/<corpus>/. Questions of kind "summary" ("what are these
// files about") are reported apart and graded by the summary rule (gradeSummary: their facts span
// several files, so the grader of one passage does not fit them).
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { findUserByLogin } from '../../../src/effects/auth/users.ts'
import type { Db, Owner } from '../../../src/effects/db/schema.ts'
import { importFolder } from '../../../src/effects/workspace/import-folder.ts'
import { makeDocumentParser } from '../../../src/effects/workspace/parse/document-parser.ts'
import type { EvalQuestion } from './evaluate.ts'

export const FROZEN_DIR = fileURLToPath(new URL('../../fixtures/local-eval-frozen/', import.meta.url))
const FROZEN_ROOT = 'frozen'

interface FrozenQuestion {
  readonly id: string
  readonly corpus: string
  readonly question: string
  readonly unanswerable?: boolean
  readonly kind?: 'summary'
  readonly facts?: ReadonlyArray<string>
  readonly sources?: ReadonlyArray<string>
}

export interface FrozenSet {
  readonly questions: ReadonlyArray<EvalQuestion>
  /** "Summarise …" questions (kind "summary"): graded by the summary rule, not the one-passage rule. */
  readonly summaries: ReadonlyArray<EvalQuestion>
}

export function loadFrozenSet(login = 'demo'): FrozenSet {
  const parsed = JSON.parse(readFileSync(`${FROZEN_DIR}questions.json`, 'utf8')) as { questions: FrozenQuestion[] }
  const base = `kb://users/${login}/${FROZEN_ROOT}/`
  const toEval = (q: FrozenQuestion): EvalQuestion =>
    q.unanswerable === true
      ? { id: `frozen-${q.id}`, scope: `${base}${q.corpus}/`, question: q.question, unanswerable: true }
      : {
          id: `frozen-${q.id}`,
          scope: `${base}${q.corpus}/`,
          question: q.question,
          ...(q.kind === 'summary' ? { kind: 'summary' as const } : {}),
          facts: q.facts ?? [],
          sources: (q.sources ?? []).map((source) => `${base}${source}`),
        }
  return {
    questions: parsed.questions.filter((q) => q.kind !== 'summary').map(toEval),
    summaries: parsed.questions.filter((q) => q.kind === 'summary').map(toEval),
  }
}

/** Imports the frozen corpora for `demo` (after loadEvalCorpora made the account). */
export async function loadFrozenCorpora(db: Db): Promise<Owner> {
  const owner = (await findUserByLogin(db, 'demo'))!
  const parser = makeDocumentParser({ processes: 1 })
  try {
    const report = await importFolder(db, { owner, folder: FROZEN_DIR, targetSegments: [FROZEN_ROOT], maxFileBytes: 50 * 1024 * 1024, parser })
    if (report.failed.length > 0 || report.unparsed.length > 0) throw new Error(`the frozen corpus did not load: ${JSON.stringify([...report.failed, ...report.unparsed])}`)
  } finally {
    await parser.close()
  }
  return owner
}
