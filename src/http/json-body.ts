// JSON request bodies: express's parser (a body over the route's limit answered 413 at once), then one check of every string (keys too) for the NUL
// character, which no field may hold (PostgreSQL cannot store it, and a message or query with it
// would be echoed into a turn, a history or a model request). Refused as 400 invalid_request
// before any handler runs, for every JSON route alike.
import type { RequestHandler } from 'express'
import { limitedJson } from './body-limit.ts'
import { badRequest } from './http-errors.ts'

export const NUL_MESSAGE = 'text must not contain the NUL character (U+0000)'

/** Whether `value` (a parsed JSON body) holds a NUL character in any string or key. Iterative: a deeply nested body cannot overflow the stack. */
export function holdsNul(value: unknown): boolean {
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next === 'string') {
      if (next.includes('\u0000')) return true
    } else if (Array.isArray(next)) {
      for (const item of next) pending.push(item) // not push(...next): a long array would overflow the call's arguments
    } else if (typeof next === 'object' && next !== null) {
      for (const [key, inner] of Object.entries(next)) {
        if (key.includes('\u0000')) return true
        pending.push(inner)
      }
    }
  }
  return false
}

const refuseNul: RequestHandler = (req, _res, next) => {
  next(holdsNul(req.body) ? badRequest(NUL_MESSAGE, 'invalid_request') : undefined)
}

/** express's `json()` with the limit held as the body arrives (body-limit.ts), then the NUL check. */
export function jsonBody(options: { limit: string; strict?: boolean }): RequestHandler[] {
  return [limitedJson(options), refuseNul]
}
