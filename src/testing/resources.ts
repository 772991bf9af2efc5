// Which timers, sockets and promises an actor left behind. Each run of a provided actor starts
// inside its own async context; an async hook notes every timer, handle and promise created in
// that context (directly or by its continuations) and forgets it when it is cleared, closed or
// settled. What is still there once the machine has stopped the actor is what it failed to release.
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
      if (owner !== undefined && TRACKED.has(type)) live.set(asyncId, { type, owner })
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
