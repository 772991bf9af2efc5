// Start-up of `knowagent serve` through different entry points (issue 10, "lean process"):
//
//   node bin/run-ts.mjs bench/start.bench.ts [--runs 5] [--bin bin/knowagent.mjs,bin/other.mjs]
//
// For each entry point: one cold start on an empty data dir, then --runs warm starts on it,
// alternating between entry points so that machine noise hits all alike. Reports spawn → /readyz
// and the idle memory of the process tree (server RSS + its children's PSS), median of the warm runs.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { startOnce, type StartRun } from './lib/serve-start.ts'
import { formatNumber, markdownTable, percentileSorted, sortedCopy } from './lib/stats.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, bin: { type: 'string', default: 'bin/knowagent.mjs' } } })
const runs = Number(values.runs)
const bins = values.bin.split(',').map((bin) => bin.trim())
const env = { KNOWAGENT_DEMO_PASSWORD: 'bench-demo-password-0123' }
const base = mkdtempSync(join(tmpdir(), 'knowagent-start-bench-'))
chmodSync(base, 0o755) // as root, the embedded PostgreSQL runs as "postgres" and must reach the data dirs
const results = new Map<string, StartRun[]>(bins.map((bin) => [bin, []]))
const MB = 1024 * 1024
console.log(`start-up of knowagent serve, Node ${process.version}, load average ${loadavg().map((l) => formatNumber(l, 2)).join(' ')}`)
try {
  for (const [index, bin] of bins.entries()) {
    const cold = await startOnce({ root: ROOT, kind: 'cold', dataDir: join(base, `data-${index}`), nodeArgs: [], bin, env, timeoutMs: 180_000 })
    results.get(bin)!.push(cold)
    console.log(`  ${bin} cold: ${formatNumber(cold.readyMs, 0)} ms, orphans ${cold.orphans}${cold.orphans > 0 ? ` (${cold.orphanCommands.join(', ')})` : ''}`)
  }
  for (let run = 0; run < runs; run += 1) {
    for (const [index, bin] of bins.entries()) {
      const warm = await startOnce({ root: ROOT, kind: 'warm', dataDir: join(base, `data-${index}`), nodeArgs: [], bin, env, timeoutMs: 180_000 })
      results.get(bin)!.push(warm)
      console.log(`  ${bin} warm: ${formatNumber(warm.readyMs, 0)} ms, idle ${formatNumber((warm.idleMemory?.totalBytes ?? Number.NaN) / MB, 0)} MB, orphans ${warm.orphans}${warm.orphans > 0 ? ` (${warm.orphanCommands.join(', ')})` : ''}`)
    }
  }
} finally {
  rmSync(base, { recursive: true, force: true })
}
const median = (values: number[]) => percentileSorted(sortedCopy(values), 50)
console.log(
  '\n' +
    markdownTable(
      ['entry point', 'cold → /readyz ms', `warm → /readyz ms (median of ${runs})`, 'warm min / max ms', 'server RSS MB', 'children PSS MB', 'tree MB'],
      bins.map((bin) => {
        const all = results.get(bin)!
        const cold = all.find((run) => run.kind === 'cold')!
        const warm = all.filter((run) => run.kind === 'warm')
        const ready = warm.map((run) => run.readyMs)
        return [
          bin,
          formatNumber(cold.readyMs, 0),
          formatNumber(median(ready), 0),
          `${formatNumber(Math.min(...ready), 0)} / ${formatNumber(Math.max(...ready), 0)}`,
          formatNumber(median(warm.map((run) => run.idleMemory?.rootRssBytes ?? Number.NaN)) / MB, 0),
          formatNumber(median(warm.map((run) => run.idleMemory?.descendantsPssBytes ?? Number.NaN)) / MB, 0),
          formatNumber(median(warm.map((run) => run.idleMemory?.totalBytes ?? Number.NaN)) / MB, 0),
        ]
      }),
      [false, true, true, true, true, true, true],
    ),
)
console.log(`load average at the end: ${loadavg().map((l) => formatNumber(l, 2)).join(' ')}`)
