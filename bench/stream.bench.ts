// `npm run bench` — the streaming benchmark (issues 5 and 10). See docs/performance.md for the
// method and the recorded results.
//
// One local OpenAI-compatible provider (in this process) streams a fixed answer — N deltas of
// 8 bytes, paced per stream or as fast as possible — optionally after a tool call. Four systems
// sit between it and the clients (also in this process), each in its own child process:
//   raw        a minimal Node http proxy piping the provider's bytes (the stateless floor)
//   floor      a bare node:http server doing only what the spec makes a turn do at its start and
//              end (token hash, knowagent's admission statement, its outcome row) on its own
//              embedded PostgreSQL, the provider's stream re-encoded as knowagent's SSE
//   knowagent  the real app on a real PostgreSQL it starts itself, POST /api/v1/knowledge-agent/stream
//   ai-sdk     Vercel AI SDK streamText + createOpenAICompatible, as a UI message stream
// For every delta the client computes receive time − provider send time (same clock). Per system
// the bench reports what users feel: time to first delta at 1 and at many concurrent streams,
// per-delta latency over the whole run, throughput of burst streams, and the memory of the whole
// process tree (the system + its database); then many instances — three `knowagent serve` on one
// PostgreSQL, 1,000 streams at once spread over them, every delta verified, the memory of the
// whole set (bench/lib/instances.ts); then the start-up of `knowagent serve` itself.
//
//   npm run bench                 full run
//   npm run bench -- --quick      smoke run of the whole harness
//   npm run bench -- --help       all options (profiles, timelines, JSON output)
//
// bench/delta-path.bench.ts measures the per-delta CPU and allocation of each layer in-process.
import { execFileSync, fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { closeIdleClientConnections, destroyClientAgent, runStream, verifyStream, type StreamOutcome } from './lib/client.ts'
import { readDescendantsCpuMicros, readTreeMemory, sampleTreeMemory } from './lib/process-memory.ts'
import {
  expectedAnswer,
  streamRequestBody,
  SYSTEMS,
  ALL_SYSTEMS,
  isKnowagent,
  speaksKnowagent,
  VARIANTS,
  type ChildMessage,
  type ParentMessage,
  type SystemName,
  type SystemServer,
  type Variant,
} from './lib/protocol.ts'
import { startBenchProvider, type BenchProvider } from './lib/provider.ts'
import { report, SYSTEM_LABEL } from './lib/report.ts'
import type { BenchResults, IdleMemory, PhaseKind, PhaseResult } from './lib/results.ts'
import { measureServeStart, type StartMeasurement } from './lib/serve-start.ts'
import { type InstancesResult, runInstancesPhase } from './lib/instances.ts'
import { SERVER_NODE_FLAGS } from '../bin/server-node-flags.mjs'
import { serverEntry } from '../bin/server-bundle.mjs'
import { concatSamples, formatNumber, percentileSorted, sortedCopy } from './lib/stats.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const RUN_TS = resolve(ROOT, 'bin/run-ts.mjs')
const CHILD_TS = resolve(ROOT, 'bench/lib/child.ts')

// ── options ────────────────────────────────────────────────────────────────────────────────

const HELP = `usage: npm run bench -- [options]
  --quick                 smoke run: 200 deltas, concurrency 1 and 10, short warm-up, one warm start
  --deltas N              answer deltas per stream (default 2000)
  --concurrency A,B       concurrent streams per paced phase (default 1,100); the burst phase
                          runs at the largest
  --interval-ms A,B       provider pace per stream, one value per concurrency or one for all
                          (default 1 ms at concurrency 1, 10 ms above)
  --min-streams N         streams per paced phase when the concurrency is lower (default 3)
  --ttfd-streams N        streams, one after the other, of the time-to-first-delta phase at
                          1 stream (default 30; 0 skips it)
  --ttfd-deltas N         deltas per stream of that phase (default 20; 1 makes its CPU per
                          stream the cost of a turn's start and end)
  --burst-deltas N        deltas per stream of the unpaced burst phase (default: --deltas;
                          0 skips it)
  --systems a,b           raw,floor,knowagent,ai-sdk (raw and floor are needed for the ratios;
                          floor: the stateful floor of issue 42, always on its own embedded
                          PostgreSQL); knowagent-observed
                          (metrics and tracing on, spans sent to the bench's provider) on request
  --variants a,b          text,tools
  --database-url URL      knowagent on an external PostgreSQL (admin URL; a database is created
                          in it) instead of the embedded PostgreSQL its process starts
  --instances N           the many-instances phase: N \`knowagent serve\` processes on one PostgreSQL
                          (default 3; 0 skips it; needs knowagent among --systems)
  --instances-streams N   its streams, all at once, spread over the instances in turn
                          (default 1000; quick 60)
  --instances-deltas N    deltas per stream of that phase (default 100; quick 20)
  --instances-interval-ms MS  their pace (default 50)
  --start-runs N          warm starts of \`knowagent serve\` after the cold one (default 3; quick 1)
  --skip-start            do not measure the start-up of \`knowagent serve\`
  --serve-node-args "…"   Node flags for the measured \`knowagent serve\`
  --json FILE             also write every number as JSON
  --cpu-prof DIR          CPU-profile each system during each measured phase (node:inspector),
                          one <system>-<variant>-<phase>-c<concurrency>.cpuprofile per phase in DIR
  --timeline MS           print latency p50/p99 per MS window of send time, per phase
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
  readonly ttfdStreams: number
  readonly ttfdDeltas: number
  readonly burstDeltas: number
  readonly systems: ReadonlyArray<SystemName>
  readonly variants: ReadonlyArray<Variant>
  readonly databaseUrl: string | undefined
  readonly startRuns: number
  readonly skipStart: boolean
  readonly serveNodeArgs: ReadonlyArray<string>
  readonly json: string | undefined
  readonly cpuProfDir: string | undefined
  readonly warmup: { readonly streams: number; readonly deltas: number }
  readonly timelineMs: number | undefined
  readonly maxOtherLoad: number
  readonly retries: number
  readonly quietWaitMs: number
  readonly noiseBudgetMs: number
  readonly childNodeOptions: ReadonlyArray<string>
  readonly instances: { readonly count: number; readonly streams: number; readonly deltas: number; readonly intervalMs: number }
}

/** Options whose value is Node flags: `--node-options "--x"` is read as `--node-options=--x` (parseArgs would refuse a value that starts with a dash). */
const FLAG_VALUED = new Set(['--serve-node-args', '--node-options'])

function joinFlagValues(argv: ReadonlyArray<string>): string[] {
  const joined: string[] = []
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!
    const value = argv[index + 1]
    if (FLAG_VALUED.has(arg) && value !== undefined) {
      joined.push(`${arg}=${value}`)
      index += 1
    } else joined.push(arg)
  }
  return joined
}

function parseOptions(argv: ReadonlyArray<string>): Options {
  const { values } = parseArgs({
    args: joinFlagValues(argv),
    options: {
      quick: { type: 'boolean', default: false },
      deltas: { type: 'string' },
      concurrency: { type: 'string' },
      'interval-ms': { type: 'string' },
      'min-streams': { type: 'string' },
      'ttfd-streams': { type: 'string' },
      'ttfd-deltas': { type: 'string' },
      'burst-deltas': { type: 'string' },
      systems: { type: 'string' },
      variants: { type: 'string' },
      'database-url': { type: 'string' },
      'start-runs': { type: 'string' },
      'skip-start': { type: 'boolean', default: false },
      'serve-node-args': { type: 'string', default: '' },
      json: { type: 'string' },
      'cpu-prof': { type: 'string' },
      timeline: { type: 'string' },
      'max-other-load': { type: 'string' },
      retries: { type: 'string' },
      'quiet-wait-s': { type: 'string' },
      'noise-budget-s': { type: 'string' },
      'node-options': { type: 'string', default: '' },
      instances: { type: 'string' },
      'instances-streams': { type: 'string' },
      'instances-deltas': { type: 'string' },
      'instances-interval-ms': { type: 'string' },
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
  const names = <T extends string>(raw: string | undefined, defaults: ReadonlyArray<T>, what: string, known: ReadonlyArray<T> = defaults): T[] => {
    if (raw === undefined) return [...defaults]
    const list = raw.split(',').map((item) => item.trim()) as T[]
    const unknown = list.filter((item) => !known.includes(item))
    if (unknown.length > 0) throw new Error(`--${what}: unknown ${unknown.join(', ')} (known: ${known.join(', ')})`)
    return list
  }
  const deltas = numbers(values.deltas, [quick ? 200 : 2000], 'deltas', 1)[0]!
  const concurrencies = numbers(values.concurrency, quick ? [1, 10] : [1, 100], 'concurrency', 1).map(Math.floor)
  const defaultIntervals = concurrencies.map((c) => (c === 1 || quick ? 1 : 10))
  let intervals = numbers(values['interval-ms'], defaultIntervals, 'interval-ms')
  if (intervals.length === 1) intervals = concurrencies.map(() => intervals[0]!)
  if (intervals.length !== concurrencies.length) throw new Error('--interval-ms: give one value, or one per --concurrency entry')
  const flags = (raw: string) => raw.split(/\s+/).filter((flag) => flag !== '')
  return {
    quick,
    deltas,
    concurrencies,
    intervals,
    minStreams: numbers(values['min-streams'], [quick ? 2 : 3], 'min-streams', 1)[0]!,
    ttfdStreams: Math.floor(numbers(values['ttfd-streams'], [quick ? 6 : 30], 'ttfd-streams')[0]!),
    ttfdDeltas: Math.floor(numbers(values['ttfd-deltas'], [20], 'ttfd-deltas', 1)[0]!),
    burstDeltas: Math.floor(numbers(values['burst-deltas'], [deltas], 'burst-deltas')[0]!),
    systems: names(values.systems, SYSTEMS, 'systems', ALL_SYSTEMS),
    variants: names(values.variants, VARIANTS, 'variants'),
    databaseUrl: values['database-url'],
    startRuns: Math.floor(numbers(values['start-runs'], [quick ? 1 : 3], 'start-runs')[0]!),
    skipStart: values['skip-start'],
    serveNodeArgs: flags(values['serve-node-args']),
    json: values.json,
    cpuProfDir: values['cpu-prof'] ? resolve(values['cpu-prof']) : undefined,
    warmup: quick ? { streams: 4, deltas: 100 } : { streams: 10, deltas: 500 },
    timelineMs: values.timeline === undefined ? undefined : numbers(values.timeline, [], 'timeline', 1)[0],
    maxOtherLoad: numbers(values['max-other-load'], [0.25], 'max-other-load')[0]!,
    retries: Math.floor(numbers(values.retries, [quick ? 0 : 2], 'retries')[0]!),
    quietWaitMs: numbers(values['quiet-wait-s'], [quick ? 0 : 60], 'quiet-wait-s')[0]! * 1000,
    noiseBudgetMs: numbers(values['noise-budget-s'], [quick ? 0 : 180], 'noise-budget-s')[0]! * 1000,
    childNodeOptions: flags(values['node-options']),
    instances: {
      count: Math.floor(numbers(values.instances, [3], 'instances')[0]!),
      streams: Math.floor(numbers(values['instances-streams'], [quick ? 60 : 1000], 'instances-streams', 1)[0]!),
      deltas: Math.floor(numbers(values['instances-deltas'], [quick ? 20 : 100], 'instances-deltas', 1)[0]!),
      intervalMs: numbers(values['instances-interval-ms'], [50], 'instances-interval-ms')[0]!,
    },
  }
}

// ── child processes ────────────────────────────────────────────────────────────────────────

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

interface Child {
  readonly process: ChildProcess
  readonly pid: number
  readonly server: SystemServer
  readonly startupMs: number
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
  // knowagent and the stateful floor run with the flags `npm start` gives the server.
  const execArgv = ['--expose-gc', ...(speaksKnowagent(system) ? SERVER_NODE_FLAGS : []), ...nodeOptions]
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
    pid: child.pid!,
    server: ready.server,
    startupMs: ready.startupMs,
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
      if (child.connected) child.disconnect() // the child stops its database and exits on disconnect
      else child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    },
  }
}

// ── one phase: `streams` streams, `concurrency` at a time ───────────────────────────────────

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
}): Promise<{ outcomes: StreamOutcome[]; toProviderMs: number[]; wallMs: number }> {
  const expectedText = expectedAnswer(deltas)
  const outcomes: StreamOutcome[] = []
  const toProviderMs: number[] = [] // per stream: request start → the provider got its first model request
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
        toProviderMs.push(record.firstRequestAt - outcome.startedAt)
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
  return { outcomes, toProviderMs, wallMs }
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
  kind: PhaseKind
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
  closeIdleClientConnections()
  global.gc?.()
  if (args.profilePath) await args.child.request({ type: 'profile-start' })
  const before = await args.child.request({ type: 'reset-peak' })
  const tree = sampleTreeMemory(args.child.pid, { everyMs: 200 })
  const descendantsCpuBefore = readDescendantsCpuMicros(args.child.pid)
  const orchestratorCpu = process.cpuUsage()
  const machineBefore = machineBusyMicros()
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS })
  loopDelay.enable()
  let outcomes: StreamOutcome[]
  let toProviderMs: number[]
  let wallMs: number
  try {
    ;({ outcomes, toProviderMs, wallMs } = await runStreams(args))
  } finally {
    loopDelay.disable()
    tree.stop()
  }
  const orchestratorUsage = process.cpuUsage(orchestratorCpu)
  const descendantsCpuAfter = readDescendantsCpuMicros(args.child.pid)
  const after = await args.child.request({ type: 'read-stats' })
  if (args.profilePath) await args.child.request({ type: 'profile-stop', path: args.profilePath })
  const machineAfter = machineBusyMicros()
  const totalDeltas = args.deltas * outcomes.length
  const latencies = sortedCopy(concatSamples(outcomes.map((outcome) => outcome.latencyMs)))
  const ttfd = sortedCopy(outcomes.map((outcome) => outcome.ttfdMs))
  const toProvider = sortedCopy(toProviderMs)
  const afterProvider = sortedCopy(outcomes.map((outcome, index) => outcome.ttfdMs - toProviderMs[index]!))
  const perStream = sortedCopy(outcomes.map((outcome) => ((args.deltas - 1) * 1000) / outcome.answerSpanMs))
  const childCpuMicros = after.cpuMicros - before.cpuMicros
  const descendantsCpuMicros =
    descendantsCpuBefore === undefined || descendantsCpuAfter === undefined ? undefined : Math.max(0, descendantsCpuAfter - descendantsCpuBefore)
  const steady = steadyWindow(outcomes)
  return {
    kind: args.kind,
    system: args.system,
    variant: args.variant,
    concurrency: args.concurrency,
    intervalMs: args.intervalMs,
    streams: outcomes.length,
    deltasPerStream: args.deltas,
    ttfdP50Ms: percentileSorted(ttfd, 50),
    ttfdP99Ms: percentileSorted(ttfd, 99),
    ttfdMaxMs: percentileSorted(ttfd, 100),
    toProviderP50Ms: percentileSorted(toProvider, 50),
    toProviderMaxMs: percentileSorted(toProvider, 100),
    afterProviderP50Ms: percentileSorted(afterProvider, 50),
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
    descendantsCpuMicrosPerStream: descendantsCpuMicros === undefined ? undefined : descendantsCpuMicros / outcomes.length,
    peakRssBytes: after.peakRssBytes,
    peakRssSource: after.peakSource,
    treePeakBytes: Math.max(after.peakRssBytes + tree.peakDescendantsPssBytes(), tree.peak()?.totalBytes ?? 0),
    descendantsPeakPssBytes: tree.peakDescendantsPssBytes(),
    orchestratorCpuShare: (orchestratorUsage.user + orchestratorUsage.system) / 1000 / wallMs,
    otherLoadCores:
      machineBefore === undefined || machineAfter === undefined
        ? undefined
        : Math.max(0, machineAfter - machineBefore - childCpuMicros - (descendantsCpuMicros ?? 0) - orchestratorUsage.user - orchestratorUsage.system) / 1000 / wallMs,
    orchestratorLoopDelayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_DELAY_RESOLUTION_MS),
    wallMs,
  }
}

/** Runs one phase, again while the machine was busy (bounded), and keeps the quietest attempt. */
async function measuredPhase(
  options: Options,
  base: { provider: BenchProvider; child: Child; system: SystemName; variant: Variant },
  phase: { kind: PhaseKind; deltas: number; concurrency: number; streams: number; intervalMs: number },
): Promise<PhaseResult> {
  let result: PhaseResult | undefined
  for (let attempt = 0; attempt <= options.retries; attempt += 1) {
    await waitForQuietMachine(base.child, options)
    const profilePath = options.cpuProfDir ? join(options.cpuProfDir, `${base.system}-${base.variant}-${phase.kind}-c${phase.concurrency}.cpuprofile`) : undefined
    const run = await runPhase({ ...base, ...phase, timelineMs: options.timelineMs, profilePath })
    if (run.timeline) {
      console.log(`    latency by send time (window ${options.timelineMs} ms): ` + run.timeline.map((w) => `${formatNumber(w.fromMs / 1000, 1)}s ${formatNumber(w.p50Ms, 2)}/${formatNumber(w.p99Ms, 2)}`).join(', '))
    }
    console.log(
      `  ${phase.kind.padEnd(5)} ${String(phase.concurrency).padStart(3)} concurrent × ${phase.streams} streams × ${phase.deltas} deltas: TTFD p50 ${formatNumber(run.ttfdP50Ms, 1)} / p99 ${formatNumber(run.ttfdP99Ms, 1)} ms, ` +
        `${formatNumber(run.deltasPerSecond, 0)} deltas/s, latency p50 ${formatNumber(run.latencyP50Ms, 3)} / p99 ${formatNumber(run.latencyP99Ms, 3)} ms, ` +
        `CPU ${formatNumber(run.childCpuMicrosPerDelta, 1)} µs/delta, tree peak ${formatNumber(run.treePeakBytes / MB, 0)} MB (${formatNumber(run.wallMs / 1000, 1)} s)` +
        (run.otherLoadCores !== undefined && run.otherLoadCores > options.maxOtherLoad ? ` — other processes used ${formatNumber(run.otherLoadCores, 2)} cores` : ''),
    )
    if (result === undefined || (run.otherLoadCores ?? 0) < (result.otherLoadCores ?? 0)) result = run
    if ((run.otherLoadCores ?? 0) <= options.maxOtherLoad) break
    if (attempt === options.retries || noiseBudget.remainingMs < run.wallMs) break
    noiseBudget.remainingMs -= run.wallMs
    console.log('    the machine was busy: running this phase again')
  }
  return result!
}

// ── main ───────────────────────────────────────────────────────────────────────────────────

const MB = 1024 * 1024

/** The knowagent revision measured (read-only git; GIT_OPTIONAL_LOCKS=0 keeps `status` from touching the index). */
function revision(): string {
  try {
    const run = (args: string[]) => execFileSync('git', args, { cwd: ROOT, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const head = run(['rev-parse', '--short', 'HEAD'])
    return run(['status', '--porcelain', '--', 'src', 'bin']) === '' ? head : `${head} + uncommitted changes in src/ or bin/`
  } catch {
    return 'unknown revision'
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const benchStarted = performance.now()
  const machine = `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Math.round(totalmem() / MB / 1024)} GB, Node ${process.version}, ${process.platform}`
  const load = () => loadavg().map((value) => formatNumber(value, 2)).join(' ')
  const entry = serverEntry()
  const compiled = entry.kind === 'bundle' ? 'the server bundle' : `the sources (no bundle: ${entry.reason})`
  console.log(`knowagent streaming benchmark${options.quick ? ' (--quick)' : ''}: ${machine}; knowagent ${revision()} from ${compiled}, database ${options.databaseUrl ? 'external PostgreSQL' : 'embedded PostgreSQL (started by the knowagent process)'}; load average ${load()}`)
  if (options.cpuProfDir) console.log('profiling is on: CPU and latency figures of this run include the profiler\'s overhead')
  const top = Math.max(...options.concurrencies)
  console.log(
    `${options.deltas} deltas × 8 bytes per stream; paced phases at concurrency ${options.concurrencies.join(', ')} (pace ${options.intervals.map((ms) => `${ms} ms`).join(', ')}); ` +
      `TTFD phase ${options.ttfdStreams} × 1 stream; burst phase ${top} × ${options.burstDeltas} deltas; systems ${options.systems.join(', ')}; variants ${options.variants.join(', ')}`,
  )
  if (options.cpuProfDir) mkdirSync(options.cpuProfDir, { recursive: true })
  noiseBudget.remainingMs = options.noiseBudgetMs
  const provider = await startBenchProvider()
  const phases: PhaseResult[] = []
  const idle: IdleMemory[] = []
  let instances: InstancesResult | undefined
  let start: StartMeasurement | undefined
  let startError: string | undefined
  let failure: unknown
  try {
    for (const variant of options.variants) {
      for (const system of options.systems) {
        const databaseUrl = isKnowagent(system) ? options.databaseUrl : undefined
        const child = await startChild({ system, provider, databaseUrl, nodeOptions: options.childNodeOptions })
        try {
          await new Promise((resolveSettle) => setTimeout(resolveSettle, 500))
          const idleMemory = readTreeMemory(child.pid)
          idle.push({ system, variant, startupMs: child.startupMs, memory: idleMemory })
          console.log(
            `\n${SYSTEM_LABEL[system]} / ${variant}: started${child.server.note ? ` ${child.server.note}` : ''} in ${formatNumber(child.startupMs, 0)} ms, idle ${formatNumber((idleMemory?.totalBytes ?? Number.NaN) / MB, 0)} MB` +
              (idleMemory && idleMemory.descendants > 0 ? ` (process RSS ${formatNumber(idleMemory.rootRssBytes / MB, 0)} MB + ${idleMemory.descendants} child processes PSS ${formatNumber(idleMemory.descendantsPssBytes / MB, 0)} MB)` : ''),
          )
          // Warm-up (JIT, connection pools), unpaced, then verified like the real phases.
          const { streams, deltas } = options.warmup
          await runStreams({ provider, child, system, variant, deltas, concurrency: streams, streams, intervalMs: 0 })
          const base = { provider, child, system, variant }
          if (options.ttfdStreams > 0) {
            phases.push(await measuredPhase(options, base, { kind: 'ttfd', deltas: options.ttfdDeltas, concurrency: 1, streams: options.ttfdStreams, intervalMs: 1 }))
          }
          for (const [index, concurrency] of options.concurrencies.entries()) {
            const streamCount = Math.max(concurrency, options.minStreams)
            phases.push(await measuredPhase(options, base, { kind: 'paced', deltas: options.deltas, concurrency, streams: streamCount, intervalMs: options.intervals[index]! }))
          }
          if (options.burstDeltas > 0) {
            phases.push(await measuredPhase(options, base, { kind: 'burst', deltas: options.burstDeltas, concurrency: top, streams: top, intervalMs: 0 }))
          }
        } finally {
          await child.stop()
        }
      }
    }
    if (options.instances.count > 0 && options.systems.includes('knowagent')) {
      const { count, streams, deltas, intervalMs } = options.instances
      console.log(`\nmany instances: ${count} \`knowagent serve\` processes on one PostgreSQL, ${streams} streams at once × ${deltas} deltas paced at ${intervalMs} ms`)
      instances = await runInstancesPhase({
        root: ROOT,
        provider,
        instances: count,
        streams,
        deltas,
        intervalMs,
        databaseUrl: options.databaseUrl,
        nodeArgs: options.serveNodeArgs,
        nextStreamId: () => nextStreamId++,
      })
      console.log(
        `  every stream verified (${instances.perInstance.join(' / ')} per instance): TTFD p50 ${formatNumber(instances.ttfdP50Ms, 1)} / p99 ${formatNumber(instances.ttfdP99Ms, 1)} ms, ` +
          `latency p50 ${formatNumber(instances.latencyP50Ms, 2)} / p99 ${formatNumber(instances.latencyP99Ms, 2)} ms, ${formatNumber(instances.deltasPerSecond, 0)} deltas/s, ` +
          `memory of the set idle ${formatNumber(instances.idle.totalBytes / MB, 0)} MB, peak ${formatNumber(instances.peak.totalBytes / MB, 0)} MB (${formatNumber(instances.wallMs / 1000, 1)} s)`,
      )
    }
  } catch (error) {
    failure = error
  } finally {
    destroyClientAgent()
    await provider.close()
  }
  if (!options.skipStart && failure === undefined) {
    console.log(`\nstart-up of knowagent serve: one cold start, ${options.startRuns} warm (load average ${load()})`)
    try {
      start = await measureServeStart({ root: ROOT, warmRuns: options.startRuns, nodeArgs: options.serveNodeArgs })
      for (const run of start.runs) console.log(`  ${run.kind}: ready in ${formatNumber(run.readyMs, 0)} ms, idle ${formatNumber((run.idleMemory?.totalBytes ?? Number.NaN) / MB, 0)} MB, orphans ${run.orphans}${run.orphans > 0 ? ` (${run.orphanCommands.join(', ')})` : ''}`)
      if (start.runs.some((run) => run.orphans > 0)) failure = new BenchFailure('processes of `knowagent serve` outlived it (orphans after SIGTERM)')
    } catch (error) {
      startError = error instanceof Error ? error.message : String(error)
      console.log(`  failed: ${startError}`)
    }
  }
  const results: BenchResults = { phases, idle, instances, start, startError }
  if (phases.length > 0 || start || instances) console.log('\n' + report(results, options))
  console.log(`\nload average at the end: ${load()}`)
  if (options.json) {
    writeFileSync(options.json, JSON.stringify({ machine, node: process.version, revision: revision(), options, ...results, failed: failure ? String(failure) : undefined }, null, 2) + '\n')
    console.log(`\nJSON written to ${options.json}`)
  }
  if (options.cpuProfDir) console.log(`CPU profiles in ${options.cpuProfDir}`)
  console.log(`\ntotal ${formatNumber((performance.now() - benchStarted) / 1000, 1)} s`)
  if (failure) {
    console.error(`\nBENCHMARK FAILED: ${failure instanceof Error ? failure.message : String(failure)}`)
    await new Promise<void>((resolveFlush) => process.stdout.write('', () => process.stderr.write('', () => resolveFlush())))
    process.exit(1)
  }
  console.log('all streams verified: every delta, the exact text, exactly one terminal event')
}

await main()
