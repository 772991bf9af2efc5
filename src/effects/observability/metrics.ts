// The service's metrics, for the people who run it: turns, provider requests, tools, compile jobs,
// retrieval, HTTP, streams and the process, rendered in the Prometheus text format at /metrics.
//
// Built on effect's own metrics (`effect/Metric`, rendered by `effect/observability`'s
// PrometheusMetrics): one registry per service instance (a `Context` holding its own map, so two
// servers in one test process never share series), updated synchronously with `updateUnsafe` from
// the plain-async hosts (express, the turn host) as well as from effects. Switched off
// (`metrics.enabled: false`, the default) the service gets `NO_METRICS`, whose methods do nothing.
//
// Labels are bounded by construction: model ids, outcomes, error codes, tool names, route templates
// and HTTP statuses — never a user, a URI or a message. Every label value also goes through a guard
// that admits at most MAX_VALUES_PER_LABEL distinct values (later ones become "other"), so a bug or
// a hostile model (a made-up tool name) cannot grow the series without bound.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import * as Context from 'effect/Context'
import * as Metric from 'effect/Metric'
import { PrometheusMetrics } from 'effect/observability'

export type TurnOutcome = 'done' | 'failed' | 'cancelled' | 'interrupted'

export interface TurnEnded {
  readonly model: string
  readonly outcome: TurnOutcome
  /** The failure's code (`model.rate_limited`, `limit.turn_time`…) or the cancel reason. */
  readonly code?: string | undefined
  readonly seconds: number
  readonly modelSteps: number
  readonly toolCalls: number
}

/** Gauges read when /metrics is scraped (the pool, the compile queue). */
export type MetricsCollector = () => Promise<ReadonlyArray<{ readonly name: string; readonly help: string; readonly value: number; readonly labels?: Readonly<Record<string, string>> }>>

export interface ServiceMetrics {
  readonly enabled: boolean
  readonly turnStarted: (model: string) => void
  readonly firstDelta: (model: string, seconds: number) => void
  readonly turnEnded: (turn: TurnEnded) => void
  /** A dead instance's turn this one closed as `turn.interrupted` (it has no duration or steps to count here). */
  readonly turnInterrupted: (model: string) => void
  readonly compaction: (model: string) => void
  readonly toolCall: (tool: string, result: string) => void
  /** One request to a provider (each attempt): `ok` or the failure's code. */
  readonly providerRequest: (model: string, result: string) => void
  readonly providerRetry: (model: string) => void
  readonly streamIdleTimeout: (model: string) => void
  readonly compileJob: (state: string) => void
  readonly compileAttempt: (result: string) => void
  readonly cliExit: (code: string) => void
  readonly catalogRefresh: (result: string) => void
  readonly retrievalCall: (tool: string, result: string) => void
  /** A stream opened; call the returned function when it closes. */
  readonly streamOpened: () => () => void
  readonly httpRequest: (method: string, route: string, status: number, seconds: number) => void
  readonly addCollector: (collector: MetricsCollector) => void
  /** This process's time to first delta over the last hour (the admin Status page). */
  readonly recentFirstDeltas: () => ReadonlyArray<number>
  readonly openStreams: () => number
  readonly render: () => Promise<string>
  /** Stops the event-loop monitor. */
  readonly close: () => void
}

export const MAX_VALUES_PER_LABEL = 64
const SECONDS = Metric.boundariesFromIterable([0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600])
const COUNTS = Metric.boundariesFromIterable([1, 2, 3, 4, 6, 8, 12, 16, 24])
const RECENT_WINDOW_MS = 60 * 60 * 1000
const RECENT_MAX = 2000

const noop = () => {}
export const NO_METRICS: ServiceMetrics = {
  enabled: false,
  turnStarted: noop,
  firstDelta: noop,
  turnEnded: noop,
  turnInterrupted: noop,
  compaction: noop,
  toolCall: noop,
  providerRequest: noop,
  providerRetry: noop,
  streamIdleTimeout: noop,
  compileJob: noop,
  compileAttempt: noop,
  cliExit: noop,
  catalogRefresh: noop,
  retrievalCall: noop,
  streamOpened: () => noop,
  httpRequest: noop,
  addCollector: noop,
  recentFirstDeltas: () => [],
  openStreams: () => 0,
  render: async () => '',
  close: noop,
}

/** A label's value as it may appear: short, printable, and one of at most MAX_VALUES_PER_LABEL. */
function labelGuard() {
  const seen = new Map<string, Set<string>>()
  return (label: string, raw: string): string => {
    const value = raw.replace(/[^A-Za-z0-9_.:/{}-]/g, '_').slice(0, 64) || 'none'
    let values = seen.get(label)
    if (values === undefined) seen.set(label, (values = new Set()))
    if (values.has(value)) return value
    if (values.size >= MAX_VALUES_PER_LABEL) return 'other'
    values.add(value)
    return value
  }
}

export function createServiceMetrics({ now = () => Date.now() }: { now?: () => number } = {}): ServiceMetrics {
  const context = Context.make(Metric.MetricRegistry, new Map()) as Context.Context<never>
  const guard = labelGuard()
  const series = new Map<string, Metric.Metric<number, unknown>>()
  const labelled = (metric: Metric.Metric<number, unknown>, labels: Record<string, string>) => {
    const safe: Record<string, string> = {}
    for (const [name, value] of Object.entries(labels)) safe[name] = guard(name, value)
    const key = `${metric.id}\u0000${Object.values(safe).join('\u0000')}`
    let one = series.get(key)
    if (one === undefined) series.set(key, (one = Metric.withAttributes(metric, safe)))
    return one
  }
  const add = (metric: Metric.Metric<number, unknown>, labels: Record<string, string>, value = 1) => labelled(metric, labels).updateUnsafe(value, context)

  const counter = (name: string, description: string) => Metric.counter(`knowagent_${name}`, { description, incremental: true })
  const histogram = (name: string, description: string, boundaries: ReadonlyArray<number>) => Metric.histogram(`knowagent_${name}`, { description, boundaries })

  const turnsStarted = counter('turns_started_total', 'Turns started, by model')
  const turnsEnded = counter('turns_ended_total', 'Turns ended, by model, outcome (done, failed, cancelled, interrupted) and code (the failure code or the cancel reason)')
  const firstDelta = histogram('turn_first_delta_seconds', 'Time from a turn’s start to its first answer delta', SECONDS)
  const turnDuration = histogram('turn_duration_seconds', 'Turn duration, by model and outcome', SECONDS)
  const modelSteps = histogram('turn_model_steps', 'Model steps per turn', COUNTS)
  const toolCallsPerTurn = histogram('turn_tool_calls', 'Tool calls per turn', COUNTS)
  const compactions = counter('turn_compactions_total', 'History compactions, by model')
  const toolCalls = counter('tool_calls_total', 'Tool calls, by tool and result (ok or the tool error code)')
  const providerRequests = counter('provider_requests_total', 'Requests to model providers (each attempt), by model and result (ok or the failure code)')
  const providerRetries = counter('provider_retries_total', 'Retried provider requests, by model')
  const idleTimeouts = counter('provider_stream_idle_timeouts_total', 'Provider streams ended by the idle timeout, by model')
  const compileJobs = counter('compile_jobs_total', 'Compile job state changes, by the state entered')
  const compileAttempts = counter('compile_attempts_total', 'Compile attempts, by result')
  const cliExits = counter('compile_cli_exits_total', 'Compile CLI processes ended, by exit code')
  const catalogRefreshes = counter('retrieval_catalog_refreshes_total', 'Retrieval catalog refreshes, by result')
  const retrievalCalls = counter('retrieval_calls_total', 'kb_* calls to the retrieval services, by tool and result')
  const streamsOpen = Metric.gauge('knowagent_sse_streams_open', { description: 'SSE streams open on this instance' })
  const httpRequests = counter('http_requests_total', 'HTTP requests, by method, route template and status')
  const httpDuration = histogram('http_request_duration_seconds', 'HTTP request duration (to the end of the response), by method and route template', SECONDS)

  let open = 0
  const recent: Array<{ at: number; seconds: number }> = []
  const collectors: Array<MetricsCollector> = []
  const loopDelay = monitorEventLoopDelay({ resolution: 20 })
  loopDelay.enable()

  return {
    enabled: true,
    turnStarted: (model) => add(turnsStarted, { model }),
    firstDelta: (model, seconds) => {
      add(firstDelta, { model }, seconds)
      recent.push({ at: now(), seconds })
      if (recent.length > RECENT_MAX) recent.splice(0, recent.length - RECENT_MAX)
    },
    turnEnded: (turn) => {
      add(turnsEnded, { model: turn.model, outcome: turn.outcome, code: turn.code ?? 'none' })
      add(turnDuration, { model: turn.model, outcome: turn.outcome }, turn.seconds)
      add(modelSteps, { model: turn.model }, turn.modelSteps)
      add(toolCallsPerTurn, { model: turn.model }, turn.toolCalls)
    },
    turnInterrupted: (model) => add(turnsEnded, { model, outcome: 'interrupted', code: 'turn.interrupted' }),
    compaction: (model) => add(compactions, { model }),
    toolCall: (tool, result) => add(toolCalls, { tool, result }),
    providerRequest: (model, result) => add(providerRequests, { model, result }),
    providerRetry: (model) => add(providerRetries, { model }),
    streamIdleTimeout: (model) => add(idleTimeouts, { model }),
    compileJob: (state) => add(compileJobs, { state }),
    compileAttempt: (result) => add(compileAttempts, { result }),
    cliExit: (code) => add(cliExits, { code }),
    catalogRefresh: (result) => add(catalogRefreshes, { result }),
    retrievalCall: (tool, result) => add(retrievalCalls, { tool, result }),
    streamOpened: () => {
      open += 1
      streamsOpen.updateUnsafe(open, context)
      let closed = false
      return () => {
        if (closed) return
        closed = true
        open -= 1
        streamsOpen.updateUnsafe(open, context)
      }
    },
    httpRequest: (method, route, status, seconds) => {
      add(httpRequests, { method, route, status: String(status) })
      add(httpDuration, { method, route }, seconds)
    },
    addCollector: (collector) => void collectors.push(collector),
    recentFirstDeltas: () => {
      const since = now() - RECENT_WINDOW_MS
      return recent.filter((sample) => sample.at >= since).map((sample) => sample.seconds)
    },
    openStreams: () => open,
    render: async () => {
      const lines = [PrometheusMetrics.formatUnsafe(context).trimEnd()]
      const gauge = (name: string, help: string, samples: ReadonlyArray<{ value: number; labels?: Readonly<Record<string, string>> | undefined }>) => {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`)
        for (const sample of samples) {
          const labels = sample.labels ? Object.entries(sample.labels).map(([key, value]) => `${key}="${guard(key, value)}"`) : []
          lines.push(`${name}${labels.length > 0 ? `{${labels.join(',')}}` : ''} ${Number.isFinite(sample.value) ? sample.value : 0}`)
        }
      }
      const memory = process.memoryUsage()
      gauge('knowagent_process_resident_memory_bytes', 'Resident memory of this process', [{ value: memory.rss }])
      gauge('knowagent_process_heap_used_bytes', 'V8 heap in use', [{ value: memory.heapUsed }])
      gauge('knowagent_event_loop_delay_seconds', 'Event-loop delay since the last scrape, by quantile', [
        { value: loopDelay.percentile(50) / 1e9, labels: { quantile: '0.5' } },
        { value: loopDelay.percentile(99) / 1e9, labels: { quantile: '0.99' } },
      ])
      loopDelay.reset()
      const byName = new Map<string, { help: string; samples: Array<{ value: number; labels?: Readonly<Record<string, string>> | undefined }> }>()
      for (const collector of collectors) {
        for (const sample of await collector()) {
          const entry = byName.get(sample.name) ?? { help: sample.help, samples: [] }
          if (entry.help === '') entry.help = sample.help
          entry.samples.push({ value: sample.value, labels: sample.labels })
          byName.set(sample.name, entry)
        }
      }
      for (const [name, entry] of byName) gauge(name, entry.help, entry.samples)
      return lines.filter((line) => line !== '').join('\n') + '\n'
    },
    close: () => loopDelay.disable(),
  }
}

