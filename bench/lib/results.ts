// The numbers one phase of the benchmark produces, shared by the orchestrator and the report.
import type { InstancesResult } from './instances.ts'
import type { SystemName, Variant } from './protocol.ts'
import type { StartMeasurement } from './serve-start.ts'
import type { TreeMemory } from './process-memory.ts'

/**
 * `ttfd`: short streams one after the other, for time to first delta at 1 stream;
 * `paced`: `concurrency` streams at the provider's pace, for per-delta latency and TTFD;
 * `burst`: `concurrency` streams as fast as the provider can send, for throughput.
 */
export type PhaseKind = 'ttfd' | 'paced' | 'burst'

export interface PhaseResult {
  readonly kind: PhaseKind
  readonly system: SystemName
  readonly variant: Variant
  readonly concurrency: number
  readonly intervalMs: number
  readonly streams: number
  readonly deltasPerStream: number
  readonly ttfdP50Ms: number
  readonly ttfdP99Ms: number
  readonly ttfdMaxMs: number
  /**
   * Where the first delta waits: request start → the provider got the stream's first model
   * request (the system's own turn start: parsing, auth, admission, the request it builds)…
   */
  readonly toProviderP50Ms: number
  readonly toProviderMaxMs: number
  /** …and the rest of each stream's TTFD: the provider's answer, the system's forwarding, the client's read. */
  readonly afterProviderP50Ms: number
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
   * one started, before the first one ended): no turn set-up or tear-down in the window.
   */
  readonly steadyP50Ms: number
  readonly steadyP99Ms: number
  readonly steadyShare: number
  /** p50/p99 per window of send time, from the phase start (with --timeline). */
  readonly timeline: ReadonlyArray<{ readonly fromMs: number; readonly count: number; readonly p50Ms: number; readonly p99Ms: number }> | undefined
  /** Answer-text events decoded per stream (one per provider delta unless a system merges). */
  readonly textEventsPerStream: number
  readonly bytesPerStream: number
  /** The system process's CPU time (user + system) per delta delivered, µs. */
  readonly childCpuMicrosPerDelta: number
  /** The system process's CPU time / wall time of the phase (1 = one core busy). */
  readonly childCpuShare: number
  /** The system process alone: its peak RSS in the phase (VmHWM, reset before the phase). */
  readonly peakRssBytes: number
  readonly peakRssSource: string
  /**
   * The whole process tree of the system (the process + its database's processes): the
   * process's peak RSS + the largest PSS sum of its descendants sampled during the phase.
   */
  readonly treePeakBytes: number
  readonly descendantsPeakPssBytes: number
  readonly childGcCount: number
  readonly childGcTotalMs: number
  readonly childGcMaxMs: number
  readonly childLoopDelayP99Ms: number
  readonly childLoopDelayMaxMs: number
  /** Database queries per stream (knowagent). */
  readonly dbQueriesPerStream: number
  /**
   * CPU of the system's descendants (knowagent's embedded PostgreSQL) during the phase, µs per
   * stream; undefined for a system with no child process (or an external database) or where
   * /proc is not readable.
   */
  readonly descendantsCpuMicrosPerStream: number | undefined
  /** This process (provider + clients): CPU share and event-loop delay, to show it kept up. */
  readonly orchestratorCpuShare: number
  readonly orchestratorLoopDelayP99Ms: number
  /** CPU used by every other process on the machine during the phase, in cores (from /proc/stat). */
  readonly otherLoadCores: number | undefined
  readonly wallMs: number
}

/** Per system and variant: what the process tree holds right after start, before any stream. */
export interface IdleMemory {
  readonly system: SystemName
  readonly variant: Variant
  readonly startupMs: number
  readonly memory: TreeMemory | undefined
}

export interface BenchResults {
  readonly phases: ReadonlyArray<PhaseResult>
  readonly idle: ReadonlyArray<IdleMemory>
  /** The many-instances phase (several serve processes on one PostgreSQL), when it ran. */
  readonly instances?: InstancesResult | undefined
  readonly start: StartMeasurement | undefined
  readonly startError: string | undefined
}
