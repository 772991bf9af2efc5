// The local model's evaluation (npm run eval:local) as a test: the same question set through the
// real turn on real PostgreSQL, asserting today's score as a floor — raise the floors when the
// score goes up, never lower them. Times are printed by `npm run eval:local`, never asserted here.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { formatEvalReport, loadEvalCorpora, loadEvalQuestions, runLocalModelEval, type EvalReport } from '../eval/local-model/evaluate.ts'
import { openTestDatabase, type TestDatabase } from '../support/test-database.ts'

/** The questions of dev set 2 (finance/, engineering-wiki/, it-security/, sales/; written blind to the model, issue 41). */
const DEV_SET_2 = /^(?:fin|eng|sec|sales)-/u
/** The first set: answerable questions answered with the fact quoted from its source (of 134; 12 are summaries of a folder). */
const ANSWERED_FLOOR = 131
/** The first set: unanswerable questions answered "nothing covers this" with no citation (of 54): all of them, always. */
const HONEST_FLOOR = 54
/** The first set: answers that quote the wrong fact or source: none. */
const WRONG_CEILING = 0
/** Dev set 2 (104 answerable, 16 of them summaries; 52 unanswerable): today's score as floors and a ceiling. */
const SET_2_ANSWERED_FLOOR = 87
const SET_2_HONEST_FLOOR = 52
const SET_2_WRONG_CEILING = 0

let database: TestDatabase
let report: EvalReport
let set2: EvalReport
beforeAll(async () => {
  database = await openTestDatabase('postgres')
  const caller = await loadEvalCorpora(database.db)
  const questions = loadEvalQuestions()
  report = await runLocalModelEval({ db: database.db, caller, questions: questions.filter((q) => !DEV_SET_2.test(q.id)) })
  set2 = await runLocalModelEval({ db: database.db, caller, questions: questions.filter((q) => DEV_SET_2.test(q.id)) })
}, 180_000)
afterAll(async () => {
  await database?.close()
})

it('keeps the question set as the issue asks: ≥ 30 questions, ≥ 8 with no answer in scope, ≥ 5 in Chinese', () => {
  const questions = loadEvalQuestions()
  expect(questions.length).toBeGreaterThanOrEqual(30)
  expect(questions.filter((q) => q.unanswerable === true).length).toBeGreaterThanOrEqual(8)
  expect(questions.filter((q) => /\p{Script=Han}/u.test(q.question)).length).toBeGreaterThanOrEqual(5)
  expect(new Set(questions.map((q) => q.id)).size).toBe(questions.length)
})

it('keeps the questions of the team corpora as issue 41 asks: ≥ 60, a third unanswerable, lists, rows, steps and summaries among them', () => {
  const team = loadEvalQuestions().filter((q) => /^(team|people|support)-/u.test(q.id))
  expect(team.length).toBeGreaterThanOrEqual(60)
  expect(team.filter((q) => q.unanswerable === true).length * 3).toBeGreaterThanOrEqual(team.length)
  const answerable = team.flatMap((q) => (q.unanswerable === true ? [] : [q]))
  expect(answerable.filter((q) => q.sources.some((s) => s.endsWith('.csv'))).length).toBeGreaterThanOrEqual(5)
  expect(answerable.filter((q) => q.facts.some((f) => /^\d\\\./u.test(f))).length).toBeGreaterThanOrEqual(3)
  expect(answerable.filter((q) => q.kind === 'summary').length).toBeGreaterThanOrEqual(3)
})

it('answers the answerable questions with the fact and its source, at least as many as before', () => {
  expect(report.answered, formatEvalReport(report)).toBeGreaterThanOrEqual(ANSWERED_FLOOR)
})

it('answers every unanswerable question honestly, citing nothing', () => {
  expect(report.honest, formatEvalReport(report)).toBeGreaterThanOrEqual(HONEST_FLOOR)
  expect(report.honest).toBe(report.unanswerable)
})

it('never quotes a passage it did not read in the turn, and quotes a wrong fact or source no more often than today', () => {
  const wrong = report.results.filter((r) => r.outcome === 'wrong')
  expect(wrong.filter((r) => r.reason.startsWith('quote not read')).map((r) => `${r.question.id}: ${r.reason}`)).toEqual([])
  expect(wrong.length, wrong.map((r) => `${r.question.id}: ${r.reason}`).join('\n')).toBeLessThanOrEqual(WRONG_CEILING)
})

it('keeps dev set 2 at least at today\'s score: answered, honest, and no more wrong answers', () => {
  expect(set2.answerable + set2.unanswerable).toBeGreaterThanOrEqual(150)
  expect(set2.answered, formatEvalReport(set2)).toBeGreaterThanOrEqual(SET_2_ANSWERED_FLOOR)
  expect(set2.honest, formatEvalReport(set2)).toBeGreaterThanOrEqual(SET_2_HONEST_FLOOR)
  const wrong = set2.results.filter((r) => r.outcome === 'wrong')
  expect(wrong.filter((r) => r.reason.startsWith('quote not read')).map((r) => `${r.question.id}: ${r.reason}`)).toEqual([])
  expect(wrong.length, wrong.map((r) => `${r.question.id}: ${r.reason}`).join('\n')).toBeLessThanOrEqual(SET_2_WRONG_CEILING)
})
