// `npm run eval:compile [-- --corpora DIR] [-- --verbose] [-- --json FILE]`: the local model's
// compile pages (per-file summaries, the folder's overview and abstract) over corpus folders,
// scored against their expectations.json. Without --corpora: the development corpora, and the
// frozen ones when they are there, reported apart. See evaluate.ts.
import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { defaultCorpusSets, evaluateCorpora, formatReport, labelFor, type CorpusSetReport } from './evaluate.ts'

const { values } = parseArgs({
  options: {
    corpora: { type: 'string', multiple: true },
    verbose: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
})

const sets = values.corpora === undefined ? defaultCorpusSets() : values.corpora.map((dir) => ({ dir: resolve(dir), label: labelFor(resolve(dir)) }))
const reports: CorpusSetReport[] = []
for (const set of sets) reports.push(await evaluateCorpora(set))
console.log(formatReport(reports, { verbose: values.verbose }))
if (values.json !== undefined) {
  const plain = reports.map((report) => ({
    ...report,
    corpora: report.corpora.map(({ compiled, ...score }) => ({ ...score, overview: compiled.overview, abstract: compiled.abstract, summaries: compiled.files })),
  }))
  writeFileSync(values.json, JSON.stringify(plain, null, 2))
}
