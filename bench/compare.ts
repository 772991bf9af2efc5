// Compares this checkout with another revision on the streaming benchmark, in alternating pairs:
//
//   npm run bench:compare -- --base <rev> [--pairs 5] [--keep-worktree] [-- <bench/stream.bench.ts options>]
//
// On a shared machine a figure moves more between runs than most changes move it, so one run
// per build says little. Here each pair is two back-to-back runs, one per build (which one goes
// first alternates), and every figure is compared within its pair: the median of the
// differences, in how many pairs this checkout was lower, and a sign test of that split.
//
// The base revision is checked out in a temporary git worktree (sharing this checkout's
// node_modules), gets this checkout's bench/ (so both builds are measured by the same harness)
// and its own server bundle. Default bench options: the sequential one-delta phase (a turn's
// start and end: CPU per turn) and 100 paced streams of 300 deltas (TTFD and p99 at 100).
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { summarisePairs, type Pair } from './lib/compare-stats.ts'
import type { BenchResults, PhaseResult } from './lib/results.ts'
import { formatNumber, markdownTable } from './lib/stats.ts'
import { cpuPerTurnMs } from './lib/report.ts'

const MB = 1024 * 1024

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DEFAULT_BENCH_ARGS = [
  '--systems', 'raw,knowagent', '--variants', 'text', '--skip-start',
  '--deltas', '300', '--concurrency', '100', '--ttfd-streams', '300', '--ttfd-deltas', '1', '--burst-deltas', '0',
]
const USAGE = `usage: npm run bench:compare -- --base <rev> [--pairs N] [--keep-worktree] [-- <bench options>]
  --base REV        the revision to compare this checkout with (a commit, branch or tag)
  --pairs N         alternating pairs of runs (default 5)
  --keep-worktree   leave the base's worktree in place (its path is printed)
  -- …              options for bench/stream.bench.ts instead of the default:
                    ${DEFAULT_BENCH_ARGS.join(' ')}`

interface Options {
  readonly base: string
  readonly pairs: number
  readonly keepWorktree: boolean
  readonly benchArgs: ReadonlyArray<string>
}

function parseOptions(argv: ReadonlyArray<string>): Options {
  let base: string | undefined
  let pairs = 5
  let keepWorktree = false
  let benchArgs: string[] = [...DEFAULT_BENCH_ARGS]
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!
    if (arg === '--') {
      benchArgs = argv.slice(index + 1)
      break
    } else if (arg === '--base') base = argv[++index]
    else if (arg === '--pairs') pairs = Number(argv[++index])
    else if (arg === '--keep-worktree') keepWorktree = true
    else if (arg === '--help') {
      console.log(USAGE)
      process.exit(0)
    } else throw new Error(`unknown option ${arg}\n${USAGE}`)
  }
  if (!base) throw new Error(`--base is required\n${USAGE}`)
  if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`--pairs: expected a whole number ≥ 1\n${USAGE}`)
  if (benchArgs.some((arg) => arg === '--json' || arg.startsWith('--json='))) throw new Error('--json is set by the comparison; leave it out')
  return { base, pairs, keepWorktree, benchArgs }
}

function run(command: string, args: ReadonlyArray<string>, cwd: string, what = `${command} ${args.join(' ')} in ${cwd}`): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (result.status !== 0) throw new Error(`${what} failed:\n${(result.stdout + result.stderr).slice(-4000)}`)
  return result.stdout.trim()
}

interface Build {
  readonly label: string
  readonly dir: string
}

/** One bench run of a build; its results (the bench verifies every stream and exits 1 otherwise). */
function benchOnce(build: Build, benchArgs: ReadonlyArray<string>, jsonPath: string): BenchResults {
  run(process.execPath, ['bin/run-ts.mjs', 'bench/stream.bench.ts', ...benchArgs, '--json', jsonPath], build.dir, `the bench for ${build.label}`)
  return JSON.parse(readFileSync(jsonPath, 'utf8')) as BenchResults
}

interface Figure {
  readonly name: string
  readonly read: (results: BenchResults) => number
}

/** The phase of a run for one variant, system and kind (at the given concurrency, else the highest). */
function phaseOf(results: BenchResults, variant: string, system: string, kind: string, concurrency?: number): PhaseResult | undefined {
  return results.phases
    .filter((phase) => phase.variant === variant && phase.system === system && phase.kind === kind && (concurrency === undefined || phase.concurrency === concurrency))
    .sort((a, b) => b.concurrency - a.concurrency)[0]
}

/** The figures a run reports, per variant, for the phases it has. */
function figuresFor(results: BenchResults): Figure[] {
  const figures: Figure[] = []
  for (const variant of new Set(results.phases.map((phase) => phase.variant))) {
    const knowagent = (r: BenchResults, kind: string, concurrency?: number) => phaseOf(r, variant, 'knowagent', kind, concurrency)
    const raw = (r: BenchResults, kind: string, concurrency?: number) => phaseOf(r, variant, 'raw', kind, concurrency)
    const ttfd = knowagent(results, 'ttfd')
    if (ttfd) {
      const per = ttfd.deltasPerStream === 1 ? 'turn' : `stream of ${ttfd.deltasPerStream} deltas`
      figures.push({ name: `${variant}: server CPU ms per sequential ${per}`, read: (r) => cpuPerStreamMs(knowagent(r, 'ttfd')) })
      figures.push({ name: `${variant}: GCs in the sequential phase`, read: (r) => knowagent(r, 'ttfd')?.childGcCount ?? Number.NaN })
      figures.push({ name: `${variant}: TTFD p50 ms @1`, read: (r) => knowagent(r, 'ttfd')?.ttfdP50Ms ?? Number.NaN })
    }
    const paced = knowagent(results, 'paced')
    if (paced) {
      const c = paced.concurrency
      figures.push({ name: `${variant}: TTFD p50 ms @${c}`, read: (r) => knowagent(r, 'paced', c)?.ttfdP50Ms ?? Number.NaN })
      figures.push({ name: `${variant}: TTFD p50 @${c} / raw`, read: (r) => ratio(knowagent(r, 'paced', c)?.ttfdP50Ms, raw(r, 'paced', c)?.ttfdP50Ms) })
      figures.push({ name: `${variant}: TTFD max ms @${c}`, read: (r) => knowagent(r, 'paced', c)?.ttfdMaxMs ?? Number.NaN })
      figures.push({ name: `${variant}: to the provider p50 ms @${c}`, read: (r) => knowagent(r, 'paced', c)?.toProviderP50Ms ?? Number.NaN })
      // ~0.5 when the streams that start together get their first delta in turn (first come, first
      // served), ~1 when every one waits for about as long as the last
      figures.push({ name: `${variant}: TTFD p50 / max @${c}`, read: (r) => ratio(knowagent(r, 'paced', c)?.ttfdP50Ms, knowagent(r, 'paced', c)?.ttfdMaxMs) })
      figures.push({
        name: `${variant}: added p99 ms @${c} (whole run)`,
        read: (r) => difference(knowagent(r, 'paced', c)?.latencyP99Ms, raw(r, 'paced', c)?.latencyP99Ms),
      })
      figures.push({ name: `${variant}: server CPU µs per delta @${c}`, read: (r) => knowagent(r, 'paced', c)?.childCpuMicrosPerDelta ?? Number.NaN })
      figures.push({ name: `${variant}: memory peak MB @${c} (server + PostgreSQL)`, read: (r) => (knowagent(r, 'paced', c)?.treePeakBytes ?? Number.NaN) / MB })
    }
    // issue 42: against the stateful floor, when the runs have it (`-- --systems raw,floor,knowagent …`)
    const floor = (r: BenchResults, kind: string, concurrency?: number) => phaseOf(r, variant, 'floor', kind, concurrency)
    if (ttfd && floor(results, 'ttfd')) {
      figures.push({ name: `${variant}: CPU per turn @1 / floor (server + PostgreSQL)`, read: (r) => ratio(cpuPerTurnMs(knowagent(r, 'ttfd')), cpuPerTurnMs(floor(r, 'ttfd'))) })
    }
    if (paced && floor(results, 'paced', paced.concurrency)) {
      const c = paced.concurrency
      figures.push({ name: `${variant}: TTFD p50 @${c} / floor`, read: (r) => ratio(knowagent(r, 'paced', c)?.ttfdP50Ms, floor(r, 'paced', c)?.ttfdP50Ms) })
      figures.push({ name: `${variant}: added p99 ms @${c} over the floor's`, read: (r) => difference(knowagent(r, 'paced', c)?.latencyP99Ms, floor(r, 'paced', c)?.latencyP99Ms) })
    }
    const burst = knowagent(results, 'burst')
    if (burst) {
      figures.push({ name: `${variant}: burst / raw @${burst.concurrency}`, read: (r) => ratio(knowagent(r, 'burst')?.deltasPerSecond, raw(r, 'burst')?.deltasPerSecond) })
      figures.push({ name: `${variant}: server CPU µs per delta in the burst`, read: (r) => knowagent(r, 'burst')?.childCpuMicrosPerDelta ?? Number.NaN })
      figures.push({ name: `${variant}: memory peak MB in the burst (server + PostgreSQL)`, read: (r) => (knowagent(r, 'burst')?.treePeakBytes ?? Number.NaN) / MB })
    }
  }
  return figures
}

function cpuPerStreamMs(phase: PhaseResult | undefined): number {
  return phase ? (phase.childCpuMicrosPerDelta * phase.deltasPerStream) / 1000 : Number.NaN
}

function ratio(a: number | undefined, b: number | undefined): number {
  return a === undefined || b === undefined || b === 0 ? Number.NaN : a / b
}

function difference(a: number | undefined, b: number | undefined): number {
  return a === undefined || b === undefined ? Number.NaN : a - b
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  // Ctrl-C reaches the running bench too (it exits, and its run fails); without a listener this
  // process would die at once and leave the base's worktree behind. With one, the failed run
  // throws and the worktree is removed below.
  let stopRequested = false
  const interrupted = () => {
    stopRequested = true
    console.error('interrupted: stopping after the running step, then removing the worktree')
  }
  process.on('SIGINT', interrupted)
  process.on('SIGTERM', interrupted)
  const baseCommit = run('git', ['rev-parse', '--short', `${options.base}^{commit}`], ROOT)
  const headCommit = run('git', ['rev-parse', '--short', 'HEAD'], ROOT)
  const dirty = run('git', ['status', '--porcelain', '--', 'src', 'bin', 'views', 'migrations'], ROOT) !== ''
  const work = mkdtempSync(join(tmpdir(), 'knowagent-compare-'))
  const baseDir = join(work, 'base')
  const base: Build = { label: `base ${baseCommit}`, dir: baseDir }
  const head: Build = { label: `this checkout (${headCommit}${dirty ? ' + changes' : ''})`, dir: ROOT }
  let worktreeAdded = false
  try {
    run('git', ['worktree', 'add', '--detach', baseDir, baseCommit], ROOT)
    worktreeAdded = true
    symlinkSync(join(ROOT, 'node_modules'), join(baseDir, 'node_modules'), 'dir')
    cpSync(join(ROOT, 'bench'), join(baseDir, 'bench'), { recursive: true, force: true }) // one harness for both
    for (const build of [base, head]) {
      console.log(`building ${build.label} …`)
      run(process.execPath, ['bin/build-cache.mjs'], build.dir)
    }
    console.log(`bench options: ${options.benchArgs.join(' ')}`)
    const runs: Array<{ base: BenchResults; head: BenchResults }> = []
    for (let pair = 0; pair < options.pairs; pair += 1) {
      const order = pair % 2 === 0 ? [base, head] : [head, base]
      const results = new Map<Build, BenchResults>()
      for (const build of order) {
        await new Promise((resolve) => setImmediate(resolve)) // the runs are synchronous: let a signal's listener run
        if (stopRequested) throw new Error('interrupted')
        const started = performance.now()
        results.set(build, benchOnce(build, options.benchArgs, join(work, `pair-${pair}-${build === base ? 'base' : 'head'}.json`)))
        console.log(`pair ${pair + 1}/${options.pairs}: ${build.label} in ${((performance.now() - started) / 1000).toFixed(0)} s`)
      }
      runs.push({ base: results.get(base)!, head: results.get(head)! })
    }
    const figures = figuresFor(runs[0]!.head)
    const rows = figures.map((figure) => {
      const pairs: Pair[] = runs.map((pairRuns) => ({ base: figure.read(pairRuns.base), head: figure.read(pairRuns.head) }))
      const summary = summarisePairs(pairs)
      return [
        figure.name,
        formatNumber(summary.baseMedian),
        formatNumber(summary.headMedian),
        (summary.medianDifference > 0 ? '+' : '') + formatNumber(summary.medianDifference),
        `${summary.lower} of ${summary.pairs}${summary.equal > 0 ? ` (${summary.equal} equal)` : ''}`,
        formatNumber(summary.signTestP, 3),
        pairs.map((pair) => `${formatNumber(pair.base)} → ${formatNumber(pair.head)}`).join(', '),
      ]
    })
    console.log(`\n${head.label} against ${base.label}, ${runs.length} alternating pairs (lower is better, except burst / raw):`)
    console.log(
      markdownTable(
        ['figure', 'base median', 'this median', 'median difference', 'this lower in', 'sign test p', 'pairs (base → this)'],
        rows,
        [false, true, true, true, true, true, false],
      ),
    )
    console.log('\nA sign test p under 0.05 needs at least 6 pairs that all go the same way.')
  } finally {
    if (worktreeAdded && !options.keepWorktree) spawnSync('git', ['worktree', 'remove', '--force', baseDir], { cwd: ROOT })
    if (options.keepWorktree) console.log(`base worktree kept at ${baseDir}`)
    else rmSync(work, { recursive: true, force: true })
    process.off('SIGINT', interrupted)
    process.off('SIGTERM', interrupted)
  }
}

await main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error))
  process.exit(1)
})
