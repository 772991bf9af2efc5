// The benchmark's report: what users feel first (time to first delta, per-delta latency,
// throughput, memory of the whole service, start-up), then the targets of issue 10 as ratios to
// the raw pass-through of the same run, then the per-phase details and the run's health.
import { speaksKnowagent, type SystemName, type Variant } from './protocol.ts'
import type { BenchResults, PhaseKind, PhaseResult } from './results.ts'
import { formatNumber, markdownTable, percentileSorted, sortedCopy } from './stats.ts'

const MB = 1024 * 1024
export const SYSTEM_LABEL: Record<SystemName, string> = { raw: 'raw pass-through', floor: 'stateful floor', knowagent: 'knowagent', 'knowagent-observed': 'knowagent, metrics + tracing on', 'ai-sdk': 'AI SDK' }

export interface ReportOptions {
  readonly systems: ReadonlyArray<SystemName>
  readonly variants: ReadonlyArray<Variant>
  readonly concurrencies: ReadonlyArray<number>
  readonly maxOtherLoad: number
}

/** The targets of issue 10 (ratios to the raw pass-through in the same run). */
export const TARGETS = {
  burstThroughputRatio: 0.9,
  pacedAddedP99Ms: 2,
  ttfdP50Ratio: 2,
  idleMemoryMb: 150,
  streamingMemoryMb: 250,
  coldStartMs: 5000,
  warmStartMs: 1500,
  /** issue 40: throughput with metrics and tracing on, as a share of off. */
  observedThroughputRatio: 0.95,
} as const

/** The targets of issue 42: knowagent against the stateful floor of the same run. */
export const FLOOR_TARGETS = {
  /** CPU of a turn at one stream (the server and its PostgreSQL), as a multiple of the floor's. */
  cpuPerTurnRatio: 1.5,
  /** TTFD p50 at the largest concurrency, as a multiple of the floor's. */
  ttfdP50Ratio: { text: 1.3, tools: 1.6 },
  /** Added p99 per delta over the whole paced run at the largest concurrency, at most the floor's + this. */
  addedP99OverFloorMs: 3,
} as const

/** CPU ms of one turn at one stream (the sequential TTFD phase): the server process and its embedded PostgreSQL. */
export function cpuPerTurnMs(phase: PhaseResult | undefined): number | undefined {
  if (phase === undefined) return undefined
  return (phase.childCpuMicrosPerDelta * phase.deltasPerStream + (phase.descendantsCpuMicrosPerStream ?? 0)) / 1000
}

function find(results: ReadonlyArray<PhaseResult>, kind: PhaseKind, system: SystemName, variant: Variant, concurrency?: number) {
  return results.find((r) => r.kind === kind && r.system === system && r.variant === variant && (concurrency === undefined || r.concurrency === concurrency))
}

const ms = (value: number | undefined, digits = 1) => (value === undefined ? '–' : formatNumber(value, digits))
const mb = (bytes: number | undefined) => (bytes === undefined ? '–' : formatNumber(bytes / MB, 0))
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '–' : `${formatNumber(a / b, 2)}×`)

function floorTargets(results: ReadonlyArray<PhaseResult>, variants: ReadonlyArray<Variant>, top: number, verdict: (ok: boolean | undefined) => string): string[][] {
  const rows: string[][] = []
  for (const variant of variants) {
    const k = { ttfd: find(results, 'ttfd', 'knowagent', variant), paced: find(results, 'paced', 'knowagent', variant, top) }
    const f = { ttfd: find(results, 'ttfd', 'floor', variant), paced: find(results, 'paced', 'floor', variant, top) }
    const raw = find(results, 'paced', 'raw', variant, top)
    const kCpu = cpuPerTurnMs(k.ttfd)
    const fCpu = cpuPerTurnMs(f.ttfd)
    if (kCpu !== undefined && fCpu !== undefined) {
      const value = kCpu / fCpu
      rows.push([variant, `CPU per turn at 1 stream (${k.ttfd!.deltasPerStream} deltas; server + PostgreSQL)`, `≤ ${FLOOR_TARGETS.cpuPerTurnRatio}× floor`, `${ms(kCpu, 2)} ms`, `${ms(fCpu, 2)} ms`, `${formatNumber(value, 2)}×`, verdict(value <= FLOOR_TARGETS.cpuPerTurnRatio)])
    }
    if (k.paced && f.paced) {
      const limit = FLOOR_TARGETS.ttfdP50Ratio[variant]
      const value = k.paced.ttfdP50Ms / f.paced.ttfdP50Ms
      rows.push([variant, `TTFD p50, ${top} concurrent`, `≤ ${limit}× floor`, `${ms(k.paced.ttfdP50Ms)} ms`, `${ms(f.paced.ttfdP50Ms)} ms`, `${formatNumber(value, 2)}×`, verdict(value <= limit)])
      if (raw) {
        const kAdded = k.paced.latencyP99Ms - raw.latencyP99Ms
        const fAdded = f.paced.latencyP99Ms - raw.latencyP99Ms
        const over = kAdded - fAdded
        rows.push([variant, `added p99 per delta, ${top} streams, whole run`, `≤ floor + ${FLOOR_TARGETS.addedP99OverFloorMs} ms`, `raw + ${formatNumber(kAdded, 2)} ms`, `raw + ${formatNumber(fAdded, 2)} ms`, `floor + ${formatNumber(over, 2)} ms`, verdict(over <= FLOOR_TARGETS.addedP99OverFloorMs)])
      }
    }
  }
  return rows
}

export function report(bench: BenchResults, options: ReportOptions): string {
  const results = bench.phases
  const top = Math.max(...options.concurrencies)
  const lines: string[] = []

  // ── what users feel ──
  const feelRows: string[][] = []
  for (const variant of options.variants) {
    const raw = { paced: find(results, 'paced', 'raw', variant, top), burst: find(results, 'burst', 'raw', variant, top), ttfd: find(results, 'paced', 'raw', variant, top) }
    for (const system of options.systems) {
      const ttfd1 = find(results, 'ttfd', system, variant)
      const paced = find(results, 'paced', system, variant, top)
      const burst = find(results, 'burst', system, variant, top)
      const idle = bench.idle.find((i) => i.system === system && i.variant === variant)
      const peak = Math.max(paced?.treePeakBytes ?? 0, burst?.treePeakBytes ?? 0)
      feelRows.push([
        variant,
        SYSTEM_LABEL[system],
        ttfd1 ? `${ms(ttfd1.ttfdP50Ms)} / ${ms(ttfd1.ttfdP99Ms)}` : '–',
        paced ? `${ms(paced.ttfdP50Ms)} / ${ms(paced.ttfdP99Ms)}` : '–',
        system === 'raw' ? '–' : ratio(paced?.ttfdP50Ms, raw.ttfd?.ttfdP50Ms),
        paced ? `${ms(paced.latencyP50Ms, 2)} / ${ms(paced.latencyP99Ms, 2)}` : '–',
        system === 'raw' || !paced || !raw.paced ? '–' : formatNumber(paced.latencyP99Ms - raw.paced.latencyP99Ms, 2),
        burst ? formatNumber(burst.deltasPerSecond, 0) : '–',
        system === 'raw' ? '–' : ratio(burst?.deltasPerSecond, raw.burst?.deltasPerSecond),
        paced ? formatNumber(paced.childCpuMicrosPerDelta, 1) : '–',
        mb(idle?.memory?.totalBytes),
        peak > 0 ? mb(peak) : '–',
      ])
    }
  }
  lines.push(
    `What users feel (${top} concurrent unless marked @1):`,
    markdownTable(
      ['variant', 'system', 'TTFD p50 / p99 ms @1', `TTFD p50 / p99 ms`, 'TTFD p50 / raw', 'paced latency p50 / p99 ms', 'added p99 ms', 'burst deltas/s', 'burst / raw', 'CPU µs/delta (paced)', 'memory idle MB', `memory peak MB`],
      feelRows,
      [false, false, true, true, true, true, true, true, true, true, true, true],
    ),
    '',
    'TTFD = request sent → first answer delta received; paced latency = client receive − provider send per delta, over the whole run (turn starts and ends included); ' +
      'burst = every stream as fast as the provider sends (deltas of the phase / its wall time); memory = the process tree (the system process by RSS, ' +
      'its children — the embedded PostgreSQL — by PSS): idle = right after start, peak = the largest at ' + `${top} streams (paced or burst; the process's VmHWM + its children's largest sampled PSS).`,
  )

  // ── targets ──
  const verdicts: string[][] = []
  const verdict = (ok: boolean | undefined) => (ok === undefined ? '–' : ok ? 'met' : 'MISSED')
  for (const variant of options.variants) {
    const k = { paced: find(results, 'paced', 'knowagent', variant, top), burst: find(results, 'burst', 'knowagent', variant, top) }
    const r = { paced: find(results, 'paced', 'raw', variant, top), burst: find(results, 'burst', 'raw', variant, top) }
    const idle = bench.idle.find((i) => i.system === 'knowagent' && i.variant === variant)?.memory?.totalBytes
    if (k.burst && r.burst) {
      const value = k.burst.deltasPerSecond / r.burst.deltasPerSecond
      verdicts.push([variant, `throughput, ${top} burst streams`, `≥ ${TARGETS.burstThroughputRatio}× raw`, `${formatNumber(value, 2)}×`, verdict(value >= TARGETS.burstThroughputRatio)])
    }
    if (k.paced && r.paced) {
      const added = k.paced.latencyP99Ms - r.paced.latencyP99Ms
      verdicts.push([variant, `paced p99 per delta, ${top} streams, whole run`, `≤ raw + ${TARGETS.pacedAddedP99Ms} ms`, `raw + ${formatNumber(added, 2)} ms`, verdict(added <= TARGETS.pacedAddedP99Ms)])
      const ttfdRatio = k.paced.ttfdP50Ms / r.paced.ttfdP50Ms
      verdicts.push([variant, `TTFD p50, ${top} concurrent`, `≤ ${TARGETS.ttfdP50Ratio}× raw`, `${formatNumber(ttfdRatio, 2)}× (${ms(k.paced.ttfdP50Ms)} vs ${ms(r.paced.ttfdP50Ms)} ms)`, verdict(ttfdRatio <= TARGETS.ttfdP50Ratio)])
    }
    if (idle !== undefined) verdicts.push([variant, 'memory, server + database, idle after start', `≤ ${TARGETS.idleMemoryMb} MB`, `${mb(idle)} MB`, verdict(idle / MB <= TARGETS.idleMemoryMb)])
    // issue 40: what metrics and tracing cost (both on: /metrics counted, every span exported over OTLP/HTTP)
    const observed = find(results, 'burst', 'knowagent-observed', variant, top)
    if (k.burst && observed) {
      const value = observed.deltasPerSecond / k.burst.deltasPerSecond
      verdicts.push([variant, `throughput with metrics + tracing on, ${top} burst streams`, `≥ ${TARGETS.observedThroughputRatio}× off`, `${formatNumber(value, 3)}×`, verdict(value >= TARGETS.observedThroughputRatio)])
    }
    const peak = Math.max(k.paced?.treePeakBytes ?? 0, k.burst?.treePeakBytes ?? 0)
    if (peak > 0) verdicts.push([variant, `memory, server + database, ${top} streams`, `≤ ${TARGETS.streamingMemoryMb} MB`, `${mb(peak)} MB`, verdict(peak / MB <= TARGETS.streamingMemoryMb)])
  }
  const cold = bench.start?.runs.find((run) => run.kind === 'cold')
  const warm = bench.start?.runs.filter((run) => run.kind === 'warm') ?? []
  if (cold) verdicts.push(['–', 'cold start to /readyz (empty data dir)', `≤ ${TARGETS.coldStartMs / 1000} s`, `${formatNumber(cold.readyMs / 1000, 2)} s`, verdict(cold.readyMs <= TARGETS.coldStartMs)])
  if (warm.length > 0) {
    const median = percentileSorted(sortedCopy(warm.map((run) => run.readyMs)), 50)
    verdicts.push(['–', `warm start to /readyz (median of ${warm.length})`, `≤ ${TARGETS.warmStartMs / 1000} s`, `${formatNumber(median / 1000, 2)} s`, verdict(median <= TARGETS.warmStartMs)])
  }
  if (verdicts.length > 0) lines.push('', 'Targets (issue 10; ratios to the raw pass-through of this run):', markdownTable(['variant', 'what', 'target', 'measured', 'verdict'], verdicts))
  const floorVerdicts = floorTargets(results, options.variants, top, verdict)
  if (floorVerdicts.length > 0) lines.push('', 'Targets (issue 42; against the stateful floor of this run):', markdownTable(['variant', 'what', 'target', 'knowagent', 'floor', 'measured', 'verdict'], floorVerdicts))

  // ── many instances ──
  const many = bench.instances
  if (many) {
    const part = (memory: { servesBytes: number; databaseBytes: number | undefined; totalBytes: number }) =>
      `${mb(memory.totalBytes)} (serves ${mb(memory.servesBytes)} + PostgreSQL ${memory.databaseBytes === undefined ? 'not counted' : mb(memory.databaseBytes)})`
    lines.push(
      '',
      `Many instances (issue 38): ${many.instances} \`knowagent serve\` processes on one PostgreSQL (${many.database}), ${many.streams} streams at once spread over them in turn (${many.perInstance.join(' / ')}), ${many.deltasPerStream} deltas each paced at ${many.intervalMs} ms — every stream verified:`,
      markdownTable(
        ['TTFD p50 / p99 ms', 'latency p50 / p99 ms', 'deltas/s', 'wall s', 'memory of the set idle MB', 'memory of the set peak MB'],
        [[`${ms(many.ttfdP50Ms)} / ${ms(many.ttfdP99Ms)}`, `${ms(many.latencyP50Ms, 2)} / ${ms(many.latencyP99Ms, 2)}`, formatNumber(many.deltasPerSecond, 0), formatNumber(many.wallMs / 1000, 1), part(many.idle), part(many.peak)]],
        [true, true, true, true, false, false],
      ),
      '',
      'Memory of the set = every serve process tree (RSS, and its children by PSS) + the PostgreSQL processes (PSS), sampled together every 250 ms; peak = the largest total sampled.',
    )
  }

  // ── start-up ──
  if (bench.start) {
    const startRows = bench.start.runs.map((run) => [
      run.kind,
      formatNumber(run.readyMs, 0),
      mb(run.idleMemory?.rootRssBytes),
      mb(run.idleMemory?.descendantsPssBytes),
      String(run.idleMemory?.descendants ?? '–'),
      mb(run.idleMemory?.totalBytes),
      formatNumber(run.stopMs, 0),
      String(run.orphans),
    ])
    lines.push(
      '',
      `Start-up of \`${bench.start.command}\` (KNOWAGENT_DATA_DIR = a fresh temporary dir; cold = empty dir, warm = the same dir after SIGTERM):`,
      markdownTable(['start', 'spawn → /readyz 200 ms', 'server RSS MB', 'children PSS MB', 'children', 'tree MB', 'SIGTERM → exit ms', 'orphans'], startRows, [false, true, true, true, true, true, true, true]),
    )
  } else if (bench.startError) {
    lines.push('', `Start-up not measured: ${bench.startError}`)
  }

  // ── details ──
  const rows: string[][] = []
  for (const r of results) {
    const raw = find(results, r.kind, 'raw', r.variant, r.concurrency)
    const added = (value: number, base: number | undefined) => (raw && r.system !== 'raw' && base !== undefined ? formatNumber(value - base, 3) : '–')
    rows.push([
      r.variant,
      r.kind,
      String(r.concurrency),
      SYSTEM_LABEL[r.system],
      `${ms(r.ttfdP50Ms)} / ${ms(r.ttfdP99Ms)} / ${ms(r.ttfdMaxMs)}`,
      formatNumber(r.deltasPerSecond, 0),
      formatNumber(r.latencyP50Ms, 3),
      formatNumber(r.latencyP99Ms, 3),
      r.concurrency > 1 ? formatNumber(r.steadyP99Ms, 3) : '″',
      added(r.latencyP50Ms, raw?.latencyP50Ms),
      added(r.latencyP99Ms, raw?.latencyP99Ms),
      r.concurrency > 1 ? added(r.steadyP99Ms, raw?.steadyP99Ms) : '″',
      formatNumber(r.childCpuMicrosPerDelta, 1),
      mb(r.peakRssBytes),
      mb(r.treePeakBytes),
    ])
  }
  lines.push(
    '',
    'Every phase:',
    markdownTable(
      ['variant', 'phase', 'streams', 'system', 'TTFD p50 / p99 / max ms', 'deltas/s', 'latency p50 ms', 'p99 ms', 'p99 steady ms', 'added p50 ms', 'added p99 ms', 'added p99 steady ms', 'CPU µs/delta', 'process peak RSS MB', 'tree peak MB'],
      rows,
      [false, false, true, false, true, true, true, true, true, true, true, true, true, true, true],
    ),
    '',
    '"steady" = only deltas sent while every stream of the phase was running; added = the percentile minus the raw pass-through\'s in the same phase.',
  )

  // ── where the first delta waits ──
  const storms = results.filter((r) => r.kind === 'paced' && r.concurrency > 1)
  if (storms.length > 0) {
    lines.push(
      '',
      'Where the first delta waits (paced phases above 1 stream): "to the provider" = request sent → the provider got the stream\'s first model request (the system\'s own turn start — for all the streams that started together); "after" = the rest of each stream\'s TTFD (the provider\'s answer — the tool call and the second request in the tools variant — the system\'s forwarding, the client\'s read):',
      markdownTable(
        ['variant', 'streams', 'system', 'TTFD p50 ms', 'to the provider p50 / max ms', 'after p50 ms'],
        storms.map((r) => [r.variant, String(r.concurrency), SYSTEM_LABEL[r.system], ms(r.ttfdP50Ms), `${ms(r.toProviderP50Ms)} / ${ms(r.toProviderMaxMs)}`, ms(r.afterProviderP50Ms)]),
        [false, true, false, true, true, true],
      ),
    )
  }

  const healthRows = results.map((r) => [
    r.variant,
    r.kind,
    String(r.concurrency),
    SYSTEM_LABEL[r.system],
    `${r.intervalMs} ms`,
    String(r.streams),
    formatNumber(r.perStreamDeltasPerSecond, 0),
    formatNumber(r.textEventsPerStream, 0),
    formatNumber(r.childCpuShare * 100, 0) + ' %',
    `${formatNumber(r.childLoopDelayP99Ms, 1)} / ${formatNumber(r.childLoopDelayMaxMs, 0)}`,
    `${r.childGcCount} / ${formatNumber(r.childGcMaxMs, 1)} / ${formatNumber(r.childGcTotalMs, 0)}`,
    speaksKnowagent(r.system) ? formatNumber(r.dbQueriesPerStream, 1) : '–',
    r.descendantsCpuMicrosPerStream === undefined ? '–' : formatNumber(r.descendantsCpuMicrosPerStream / 1000, 2),
    formatNumber(r.orchestratorCpuShare * 100, 0) + ' %',
    formatNumber(r.orchestratorLoopDelayP99Ms, 2),
    r.otherLoadCores === undefined ? '–' : formatNumber(r.otherLoadCores, 2),
    r.peakRssSource,
    formatNumber(r.wallMs / 1000, 1),
  ])
  lines.push(
    '',
    'Run health (pace = provider interval per stream, 0 = burst; "system" = the process under test; loop delay = event-loop delay beyond a 10 ms timer; DB CPU = user + system time of the embedded PostgreSQL\'s processes (the system\'s descendants) per stream, 10 ms resolution; the orchestrator runs the provider and every client):',
    markdownTable(
      ['variant', 'phase', 'streams', 'system', 'pace', 'streams run', 'deltas/s per stream', 'text events/stream', 'system CPU', 'system loop delay p99 / max ms', 'system GCs / max / total ms', 'DB queries/stream', 'DB CPU ms/stream', 'orchestrator CPU', 'orch. loop delay p99 ms', 'other load (cores)', 'peak from', 'wall s'],
      healthRows,
      [false, false, true, false, true, true, true, true, true, true, true, true, true, true, true, true, false, true],
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
