// One system under test, alone in its own process (so its RSS is its own):
//   run-ts.mjs bench/lib/child.ts <raw|floor|knowagent|ai-sdk> <provider base URL> [external PostgreSQL admin URL]
// It listens on 127.0.0.1 (port 0), tells the orchestrator its URL over IPC, and answers
// `reset-peak` / `read-stats` requests. It exits when the orchestrator disconnects.
import { readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import type { ChildMessage, ParentMessage, SystemName, SystemServer } from './protocol.ts'

const [system, providerBaseUrl, databaseUrl] = process.argv.slice(2) as [SystemName | undefined, string | undefined, string | undefined]
if (!process.send) throw new Error('child.ts must be started by the bench orchestrator (IPC channel)')
if (!system || !providerBaseUrl) throw new Error('usage: child.ts <raw|floor|knowagent|ai-sdk> <provider base URL> [PostgreSQL admin URL]')
const send = (message: ChildMessage) => process.send!(message)

// Peak RSS: the kernel's high-water mark (VmHWM), reset before each measured phase through
// /proc/self/clear_refs; if the kernel refuses the reset, a 20 ms sampler of rss stands in (only
// then: reading rss costs the measured process CPU).
let hwmResettable = true
let sampledPeak = 0
let sampler: ReturnType<typeof setInterval> | undefined
const startSampler = (): void => {
  sampler ??= setInterval(() => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss())
  }, 20)
  sampler.unref()
}

const vmHwmBytes = (): number | undefined => {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    return match ? Number(match[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}

const cpuMicros = (): number => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

// GC pauses and event-loop delay of this process, since the last reset.
const LOOP_RESOLUTION_MS = 10
const gc = { count: 0, totalMs: 0, maxMs: 0 }
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count += 1
    gc.totalMs += entry.duration
    gc.maxMs = Math.max(gc.maxMs, entry.duration)
  }
}).observe({ entryTypes: ['gc'] })
const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS })
loopDelay.enable()

let queryCounter: () => number = () => 0

const stats = (id: number): ChildMessage => {
  const rss = process.memoryUsage.rss()
  sampledPeak = Math.max(sampledPeak, rss)
  const hwm = hwmResettable ? vmHwmBytes() : undefined
  return {
    type: 'stats',
    id,
    rssBytes: rss,
    peakRssBytes: hwm ?? sampledPeak,
    peakSource: hwm === undefined ? 'sampled' : 'VmHWM',
    cpuMicros: cpuMicros(),
    gcCount: gc.count,
    gcTotalMs: gc.totalMs,
    gcMaxMs: gc.maxMs,
    // the histogram holds timer periods: the delay is what exceeds the resolution
    loopDelayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
    loopDelayMaxMs: Math.max(0, loopDelay.max / 1e6 - LOOP_RESOLUTION_MS),
    dbQueries: queryCounter(),
  }
}

let profiler: Session | undefined
process.on('message', (message: ParentMessage) => {
  if (message.type === 'profile-start') {
    void (async () => {
      profiler = new Session()
      profiler.connect()
      await profiler.post('Profiler.enable')
      await profiler.post('Profiler.setSamplingInterval', { interval: 100 })
      await profiler.post('Profiler.start')
      send(stats(message.id))
    })()
  } else if (message.type === 'profile-stop') {
    void (async () => {
      if (profiler) {
        const { profile } = await profiler.post('Profiler.stop')
        writeFileSync(message.path, JSON.stringify(profile))
        profiler.disconnect()
        profiler = undefined
      }
      send(stats(message.id))
    })()
  } else if (message.type === 'reset-peak') {
    try {
      writeFileSync('/proc/self/clear_refs', '5')
    } catch {
      hwmResettable = false
      startSampler()
    }
    sampledPeak = process.memoryUsage.rss()
    gc.count = 0
    gc.totalMs = 0
    gc.maxMs = 0
    loopDelay.reset()
    send(stats(message.id))
  } else if (message.type === 'read-stats') {
    send(stats(message.id))
  }
})
// Told to go (the orchestrator disconnects): stop what the system started (knowagent's
// PostgreSQL), then exit.
let stopSystem: () => Promise<void> = async () => {}
process.on('disconnect', () => {
  void stopSystem()
    .catch((error: unknown) => console.error(`${system}: stopping failed:`, error))
    .finally(() => process.exit(0))
})

const started = performance.now()
// Only the system under test is imported, so no other system's modules count in its RSS.
const startedServer: SystemServer & { readonly dbQueries?: () => number; readonly stop?: () => Promise<void> } =
  system === 'raw'
    ? await (await import('./systems/raw-proxy.ts')).startRawProxy({ providerBaseUrl })
    : system === 'knowagent' || system === 'knowagent-observed'
      ? await (await import('./systems/knowagent.ts')).startKnowagentServer({ providerBaseUrl, databaseUrl, observed: system === 'knowagent-observed' })
      : system === 'floor'
        ? await (await import('./systems/floor.ts')).startFloorServer({ providerBaseUrl })
      : system === 'ai-sdk'
        ? await (await import('./systems/ai-sdk.ts')).startAiSdkServer({ providerBaseUrl })
        : (() => {
            throw new Error(`unknown system "${system}"`)
          })()
const { dbQueries, stop, ...server } = startedServer
queryCounter = dbQueries ?? (() => 0)
if (stop) stopSystem = stop
global.gc?.()
send({ type: 'ready', server, rssBytes: process.memoryUsage.rss(), startupMs: performance.now() - started })
