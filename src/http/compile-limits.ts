// Limits on compile work per person: queue/retry requests counted in PostgreSQL (every server
// process shares them), and the live job streams one person may hold open in this process.
import type { User } from '../effects/auth/users.ts'
import { createRateLimiter } from '../effects/limits/rate-limiter.ts'
import type { AppContext } from './app-context.ts'
import { HttpError } from './http-errors.ts'

/** Live job streams one person may hold open at once in one server process (tabs × task center and compile dialog). */
export const MAX_JOB_STREAMS_PER_USER = 10

/**
 * Queueing or retrying starts model work: at most `limits.compileRequestsPerMinute` per person in
 * any 60 s, counted in PostgreSQL so the limit holds across every server process (429 + Retry-After).
 */
export async function admitCompileRequest(ctx: AppContext, user: User): Promise<void> {
  const limit = ctx.config.compileRequestsPerMinute
  const waitMs = await createRateLimiter({ db: ctx.db, limit, windowMs: 60_000, now: ctx.now }).take(`compile:${user.id}`)
  if (waitMs === 0) return
  const seconds = Math.ceil(waitMs / 1000)
  throw new HttpError(429, 'rate_limited', `at most ${limit} compile requests per minute; retry in ${seconds} s`, { 'Retry-After': String(seconds) })
}

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
