// Bounds how many password hashes run at once. scrypt runs on libuv's thread pool (4 threads by
// default), which file reads, DNS lookups and zlib share: an unbounded burst of sign-ins would
// queue behind it all of them. Past `maxWaiting` queued tasks the gate refuses at once.
export class GateBusy extends Error {
  override readonly name = 'GateBusy'
}

export interface ConcurrencyGate {
  readonly run: <T>(task: () => Promise<T>) => Promise<T>
  readonly active: () => number
  readonly waiting: () => number
}

export function createConcurrencyGate({ concurrency, maxWaiting }: { concurrency: number; maxWaiting: number }): ConcurrencyGate {
  let active = 0
  const queue: Array<() => void> = []
  const release = () => {
    const next = queue.shift()
    if (next) next()
    else active--
  }
  return {
    run: async (task) => {
      if (active >= concurrency) {
        if (queue.length >= maxWaiting) throw new GateBusy('too many sign-ins are being checked at once; try again in a moment')
        await new Promise<void>((resolve) => queue.push(resolve)) // the slot is handed over, `active` unchanged
      } else {
        active++
      }
      try {
        return await task()
      } finally {
        release()
      }
    },
    active: () => active,
    waiting: () => queue.length,
  }
}
