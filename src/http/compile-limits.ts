// The live job streams one person may hold open in this process. (Their compile requests — queue,
// and a retry that queues work — are limited by the feature's use case, compile-requests.ts,
// counted in PostgreSQL across every process.)
import { HttpError } from './http-errors.ts'

/** Live job streams one person may hold open at once in one server process (tabs × task center and compile dialog). */
export const MAX_JOB_STREAMS_PER_USER = 10

/** Counts open streams per person; `hold` throws 429 `too_many_streams` at the cap, else returns the function that gives the place back (idempotent). */
export function createStreamCap(max: number = MAX_JOB_STREAMS_PER_USER): { readonly hold: (userId: string) => () => void; readonly open: (userId: string) => number } {
  const open = new Map<string, number>()
  return {
    open: (userId) => open.get(userId) ?? 0,
    hold: (userId) => {
      const count = open.get(userId) ?? 0
      if (count >= max) throw new HttpError(429, 'too_many_streams', `at most ${max} live job streams at once; close a task center tab or compile dialog`)
      open.set(userId, count + 1)
      let released = false
      return () => {
        if (released) return
        released = true
        const left = (open.get(userId) ?? 1) - 1
        if (left > 0) open.set(userId, left)
        else open.delete(userId)
      }
    },
  }
}
