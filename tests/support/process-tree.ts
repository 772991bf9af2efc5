// What is running, read from /proc (Linux): used to prove that a killed CLI left nothing behind.
// A zombie (state Z) has exited and holds no resources but its pid entry; reaping orphans is
// the init process's job, so zombies count as gone.
import { readdirSync, readFileSync } from 'node:fs'

interface ProcStat {
  readonly pid: number
  readonly state: string
  readonly pgrp: number
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // "pid (comm) state ppid pgrp …" — comm may hold spaces and parentheses: cut at the last ")"
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { pid, state: fields[0]!, pgrp: Number(fields[2]) }
  } catch {
    return undefined
  }
}

export function isRunning(pid: number): boolean {
  const stat = readStat(pid)
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X'
}

/** Live processes whose process group is `pgid`. */
export function runningInGroup(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((stat): stat is ProcStat => stat !== undefined && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X')
    .map((stat) => stat.pid)
}
