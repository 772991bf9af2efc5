// Start-up as a user meets it: `node bin/knowagent.mjs serve` as a child process with its own
// data dir (KNOWAGENT_DATA_DIR) and port, timed from spawn to the first 200 from /readyz.
// Cold = an empty data dir (database initialised, migrations, the demo workspace imported);
// warm = the same data dir again after a clean stop (SIGTERM). After each start the whole
// process tree's memory is read while idle, and after each stop the bench checks that no
// process of the tree outlived the server (an orphaned database would be a bug).
import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { descendantsOf, processIdentity, readTreeMemory, type TreeMemory } from './process-memory.ts'
import { SERVER_NODE_FLAGS } from '../../bin/server-node-flags.mjs'

export interface StartRun {
  readonly kind: 'cold' | 'warm'
  /** Spawn → first HTTP 200 from /readyz. */
  readonly readyMs: number
  /** The tree's memory ~1 s after ready, idle. */
  readonly idleMemory: TreeMemory | undefined
  /** Processes of the tree still alive after the server exited (must be none). */
  readonly orphans: number
  /** Their command names (e.g. `postgres`). */
  readonly orphanCommands: ReadonlyArray<string>
  /** SIGTERM → exit of the server process. */
  readonly stopMs: number
}

export interface StartMeasurement {
  readonly command: string
  readonly runs: ReadonlyArray<StartRun>
  /** What the server printed on stderr/stdout during the cold start (for the report's notes). */
  readonly coldOutput: string
}

async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no free port'))))
    })
  })
}

function readyzOk(port: number): Promise<boolean> {
  return new Promise((resolveOk) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', method: 'GET', agent: false, timeout: 1000 }, (res) => {
      res.resume()
      resolveOk(res.statusCode === 200)
    })
    req.on('error', () => resolveOk(false))
    req.on('timeout', () => req.destroy())
    req.end()
  })
}

const sleep = (ms: number) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms))

export async function startOnce({
  root,
  kind,
  dataDir,
  nodeArgs,
  bin = 'bin/knowagent.mjs',
  env,
  timeoutMs,
}: {
  root: string
  kind: 'cold' | 'warm'
  dataDir: string
  nodeArgs: ReadonlyArray<string>
  /** The entry point, relative to `root`. */
  bin?: string
  env: Readonly<Record<string, string>>
  timeoutMs: number
}): Promise<StartRun & { readonly output: string }> {
  const port = await freePort()
  let output = ''
  const started = performance.now()
  // As `npm start` runs it: the server's Node flags, then any the caller adds.
  const child: ChildProcess = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...nodeArgs, resolve(root, bin), 'serve'], {
    cwd: root,
    env: { ...process.env, ...env, KNOWAGENT_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.on('data', (part: Buffer) => (output += part.toString('utf8')))
  child.stderr!.on('data', (part: Buffer) => (output += part.toString('utf8')))
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
  let readyMs = Number.NaN
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`knowagent serve exited before it was ready:\n${output}`)
      if (performance.now() - started > timeoutMs) throw new Error(`knowagent serve was not ready within ${timeoutMs} ms:\n${output}`)
      if (await readyzOk(port)) {
        readyMs = performance.now() - started
        break
      }
      await sleep(10)
    }
    await sleep(1000)
    const idleMemory = readTreeMemory(child.pid!)
    const tree = descendantsOf(child.pid!).flatMap((pid) => {
      const identity = processIdentity(pid)
      return identity ? [{ pid, ...identity }] : []
    })
    const stopStarted = performance.now()
    child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    await exited
    clearTimeout(killer)
    const stopMs = performance.now() - stopStarted
    await sleep(200)
    // The same process (pid and start time) still running after the server exited: a leak, not a recycled pid.
    const survivors = tree.filter(({ pid, startTicks }) => processIdentity(pid)?.startTicks === startTicks)
    return { kind, readyMs, idleMemory, orphans: survivors.length, orphanCommands: survivors.map(({ command }) => command), stopMs, output }
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  }
}


/** One cold start on an empty data dir, then `warmRuns` warm starts on the same dir. */
export async function measureServeStart({
  root,
  warmRuns,
  nodeArgs = [],
  timeoutMs = 180_000,
}: {
  root: string
  warmRuns: number
  nodeArgs?: ReadonlyArray<string>
  timeoutMs?: number
}): Promise<StartMeasurement> {
  const base = mkdtempSync(join(tmpdir(), 'knowagent-bench-serve-'))
  chmodSync(base, 0o755) // as root, the embedded PostgreSQL runs as "postgres" and must reach the data dir
  const dataDir = join(base, 'data')
  const env = { KNOWAGENT_DEMO_PASSWORD: 'bench-demo-password-0123' }
  try {
    const cold = await startOnce({ root, kind: 'cold', dataDir, nodeArgs, env, timeoutMs })
    const runs: StartRun[] = [withoutOutput(cold)]
    for (let run = 0; run < warmRuns; run += 1) runs.push(withoutOutput(await startOnce({ root, kind: 'warm', dataDir, nodeArgs, env, timeoutMs })))
    return { command: `node ${[...SERVER_NODE_FLAGS, ...nodeArgs, 'bin/knowagent.mjs', 'serve'].join(' ')}`, runs, coldOutput: cold.output }
  } finally {
    rmSync(base, { recursive: true, force: true })
  }
}

function withoutOutput({ output: _output, ...run }: StartRun & { readonly output: string }): StartRun {
  return run
}
