// Memory of a whole process tree, as the machine sees it: the root process (a system under test
// or `knowagent serve`) by its RSS, every descendant (the embedded PostgreSQL's postmaster and
// backends) by its PSS from /proc/<pid>/smaps_rollup — PostgreSQL processes share their shared
// buffers and binary, so their RSS would count those pages once per process. Linux only; other
// platforms report undefined.
import { readdirSync, readFileSync } from 'node:fs'

export interface TreeMemory {
  readonly rootRssBytes: number
  /** Sum of the descendants' PSS. */
  readonly descendantsPssBytes: number
  readonly descendants: number
  /** rootRssBytes + descendantsPssBytes */
  readonly totalBytes: number
}

/** `Rss:` and `Pss:` of one process in bytes; undefined once it is gone or unreadable. */
export function readRssPss(pid: number): { readonly rss: number; readonly pss: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
    const rss = /^Rss:\s+(\d+) kB/m.exec(text)
    const pss = /^Pss:\s+(\d+) kB/m.exec(text)
    if (!rss || !pss) return undefined
    return { rss: Number(rss[1]) * 1024, pss: Number(pss[1]) * 1024 }
  } catch {
    return undefined
  }
}

/** Every descendant of `rootPid` (children, grandchildren …), from each task's `children` list. */
export function descendantsOf(rootPid: number): number[] {
  const found: number[] = []
  const pending = [rootPid]
  while (pending.length > 0) {
    const pid = pending.pop()!
    for (const child of childrenOf(pid)) {
      found.push(child)
      pending.push(child)
    }
  }
  return found
}

function childrenOf(pid: number): number[] {
  const children: number[] = []
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return children
  }
  for (const task of tasks) {
    try {
      for (const item of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/)) {
        if (item !== '') children.push(Number(item))
      }
    } catch {
      // the task ended meanwhile
    }
  }
  return children
}

/**
 * The fields of /proc/<pid>/stat after `comm` (fields[0] is field 3, the state), and `comm`;
 * undefined once the process is gone. `comm` may hold spaces and parentheses: split after its
 * last ')'.
 */
function readStat(pid: number): { readonly command: string; readonly fields: ReadonlyArray<string> } | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  const close = stat.lastIndexOf(')')
  return { command: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') }
}

/**
 * A process as the kernel identifies it over time: its start time (clock ticks since boot) and
 * command name, from /proc/<pid>/stat; undefined once it is gone or a zombie (exited, not yet
 * reaped). Comparing start times tells a process that lives on from a recycled pid.
 */
export function processIdentity(pid: number): { readonly startTicks: string; readonly command: string } | undefined {
  const stat = readStat(pid)
  if (stat === undefined || stat.fields[0] === 'Z' || stat.fields[0] === 'X') return undefined
  const startTicks = stat.fields[19] // field 22
  return startTicks === undefined ? undefined : { startTicks, command: stat.command }
}

/** /proc reports CPU time in USER_HZ clock ticks, 100 per second on Linux. */
const MICROS_PER_TICK = 10_000

/**
 * CPU time of every descendant of `rootPid` (the embedded PostgreSQL's processes), in µs: each
 * live one's user + system time, plus the time of the children it has reaped (a backend that
 * ended during a phase is counted in its postmaster's). Undefined when it has no descendant (a
 * system with no child process, or knowagent on an external database) or /proc is not readable.
 */
export function readDescendantsCpuMicros(rootPid: number): number | undefined {
  let ticks: number | undefined
  for (const pid of descendantsOf(rootPid)) {
    const stat = readStat(pid)
    if (stat === undefined) continue // gone meanwhile: its time is in its parent's reaped children
    const [utime, stime, cutime, cstime] = stat.fields.slice(11, 15).map(Number) // fields 14–17
    ticks = (ticks ?? 0) + utime! + stime! + cutime! + cstime!
  }
  return ticks === undefined ? undefined : ticks * MICROS_PER_TICK
}

export function readTreeMemory(rootPid: number): TreeMemory | undefined {
  const root = readRssPss(rootPid)
  if (root === undefined) return undefined
  let descendantsPssBytes = 0
  let descendants = 0
  for (const pid of descendantsOf(rootPid)) {
    const memory = readRssPss(pid)
    if (memory === undefined) continue
    descendantsPssBytes += memory.pss
    descendants += 1
  }
  return { rootRssBytes: root.rss, descendantsPssBytes, descendants, totalBytes: root.rss + descendantsPssBytes }
}

export interface TreeSampler {
  /** The sample with the largest total so far (undefined if none could be read). */
  readonly peak: () => TreeMemory | undefined
  /** The largest descendants' PSS seen in any sample. */
  readonly peakDescendantsPssBytes: () => number
  readonly stop: () => TreeMemory | undefined
}

/** Samples the tree every `everyMs` until stopped (the timer does not keep the process alive). */
export function sampleTreeMemory(rootPid: number, { everyMs = 200 }: { everyMs?: number } = {}): TreeSampler {
  let peak: TreeMemory | undefined
  let peakDescendants = 0
  const sample = (): void => {
    const now = readTreeMemory(rootPid)
    if (now === undefined) return
    if (peak === undefined || now.totalBytes > peak.totalBytes) peak = now
    peakDescendants = Math.max(peakDescendants, now.descendantsPssBytes)
  }
  sample()
  const timer = setInterval(sample, everyMs)
  timer.unref()
  return {
    peak: () => peak,
    peakDescendantsPssBytes: () => peakDescendants,
    stop: () => {
      clearInterval(timer)
      sample()
      return peak
    },
  }
}
