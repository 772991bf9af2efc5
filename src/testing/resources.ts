// Which timers, sockets and promises an actor left behind. Each run of a provided actor starts
// inside its own async context; an async hook notes every timer, handle and promise created in
// that context (directly or by its continuations) and forgets it when it is cleared, closed or
// settled. What is still there once the machine has stopped the actor is what it failed to release.
// Promises and timers that Node's own internals create (a web stream's reader waiting for a chunk
// that an abort made never come) are garbage, not held work: only those the actor's code (or a
// library it calls) created count; handles count whoever created them.
import { AsyncLocalStorage, createHook } from 'node:async_hooks'

/** Resource types that keep work alive: timers, sockets and other handles, promises. */
const TRACKED = new Set([
  'Timeout',
  'Immediate',
  'PROMISE',
  'TCPWRAP',
  'TCPCONNECTWRAP',
  'TLSWRAP',
  'PIPEWRAP',
  'PIPECONNECTWRAP',
  'PROCESSWRAP',
  'UDPWRAP',
  'HTTPCLIENTREQUEST',
  'HTTPINCOMINGMESSAGE',
  'FSREQCALLBACK',
  'FILEHANDLE',
  'WORKER',
  'MESSAGEPORT',
])

/** Types whose creation site decides whether they count. */
const SCHEDULED = new Set(['PROMISE', 'Timeout', 'Immediate'])

/** Whether the first frame below the async hook and built-ins is inside Node itself. */
function createdByNodeInternals(): boolean {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 16
  const stack = new Error().stack ?? ''
  Error.stackTraceLimit = limit
  const frames = stack.split('\n').slice(1)
  const plumbing = ['node:internal/async_hooks', 'node:internal/timers', 'node:timers', '/testing/resources.ts', '(<anonymous>)', '(native)']
  const creator = frames.find((frame) => !plumbing.some((part) => frame.includes(part)))
  return creator !== undefined && creator.includes('node:internal/')
}

export interface ResourceTracker {
  /** Runs `fn` (and everything it schedules) as `owner`. */
  readonly run: <A>(owner: string, fn: () => A) => A
  /** What `owner` still holds, by type, e.g. `{ Timeout: 1, PROMISE: 2 }`. */
  readonly held: (owner: string) => Readonly<Record<string, number>>
  /** Stops tracking. */
  readonly dispose: () => void
}

export function createResourceTracker(): ResourceTracker {
  const context = new AsyncLocalStorage<string>()
  const live = new Map<number, { readonly type: string; readonly owner: string }>()
  const hook = createHook({
    init: (asyncId, type) => {
      const owner = context.getStore()
      if (owner === undefined || !TRACKED.has(type)) return
      if (SCHEDULED.has(type) && createdByNodeInternals()) return
      live.set(asyncId, { type, owner })
    },
    destroy: (asyncId) => {
      live.delete(asyncId)
    },
    promiseResolve: (asyncId) => {
      live.delete(asyncId)
    },
  })
  hook.enable()
  return {
    run: (owner, fn) => context.run(owner, fn),
    held: (owner) => {
      const counts: Record<string, number> = {}
      for (const resource of live.values()) if (resource.owner === owner) counts[resource.type] = (counts[resource.type] ?? 0) + 1
      return counts
    },
    dispose: () => {
      hook.disable()
      live.clear()
    },
  }
}

/** Lets closes and clears that are already on their way happen (a few turns of the event loop, no clock). */
export async function settleEventLoop(turns = 20): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise((resolve) => setImmediate(resolve))
}

export function describeHeld(held: Readonly<Record<string, number>>): string {
  return Object.entries(held)
    .map(([type, count]) => `${count} ${type === 'PROMISE' ? 'pending promise' : type}${count > 1 ? 's' : ''}`)
    .join(', ')
}
