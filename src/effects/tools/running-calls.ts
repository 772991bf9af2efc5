// Tool calls that programs run from outside a turn (the MCP face), as a process keeps them: each
// under a key its client can name again to cancel it, at most `perUser` at once per user in this
// process. A cancel may reach any server process (a stateless face behind several instances):
// the process that runs the call aborts it at once, and any other one NOTIFYs the key on
// CALL_CANCEL_CHANNEL, which every process's change feed hands back here.
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { ChangeFeed } from '../db/change-feed.ts'
import type { Db } from '../db/schema.ts'

/** The NOTIFY channel of cancels; the payload is a call's key (a SHA-256, never a credential). */
export const CALL_CANCEL_CHANNEL = 'knowagent_call_cancel'

/** How many calls one user may have running at once in one process (more are refused). */
export const CALLS_PER_USER = 8

/**
 * A call's key: one credential's, one client connection's (its MCP session id, if any), one
 * request id's. Hashed, so the NOTIFY payload carries nothing of the token.
 */
export function callKey({ credential, session, requestId }: { credential: string; session: string; requestId: string | number }): string {
  return createHash('sha256').update(JSON.stringify([credential, session, typeof requestId, String(requestId)])).digest('hex')
}

export interface RunningCall {
  /** Aborted when a cancel for this key arrives (from this process or another one). */
  readonly signal: AbortSignal
  readonly release: () => void
}

export interface RunningCalls {
  /** Registers a call; undefined when the user already has `perUser` running here. */
  readonly start: (input: { readonly key: string; readonly userId: string }) => RunningCall | undefined
  /** Aborts the call with this key here, or tells the other processes to. */
  readonly cancel: (key: string, reason: string) => Promise<void>
  /** How many calls run in this process (tests, diagnostics). */
  readonly size: () => number
  readonly close: () => void
}

export function makeRunningCalls({ db, feed, perUser = CALLS_PER_USER }: { readonly db: Db; readonly feed: ChangeFeed | undefined; readonly perUser?: number }): RunningCalls {
  const calls = new Map<string, { readonly controller: AbortController; readonly userId: string }>()
  const perUserCount = new Map<string, number>()
  const abortHere = (key: string, reason: string): boolean => {
    const call = calls.get(key)
    if (call === undefined) return false
    call.controller.abort(reason)
    return true
  }
  const unfollow = feed?.on(CALL_CANCEL_CHANNEL, (key) => void abortHere(key, 'cancelled by the client'))
  return {
    start: ({ key, userId }) => {
      const count = perUserCount.get(userId) ?? 0
      if (count >= perUser) return undefined
      const controller = new AbortController()
      const entry = { controller, userId }
      // A request id reused while its first call runs: the newer call is the one a cancel names.
      calls.set(key, entry)
      perUserCount.set(userId, count + 1)
      let released = false
      return {
        signal: controller.signal,
        release: () => {
          if (released) return
          released = true
          if (calls.get(key) === entry) calls.delete(key)
          const left = (perUserCount.get(userId) ?? 1) - 1
          if (left <= 0) perUserCount.delete(userId)
          else perUserCount.set(userId, left)
        },
      }
    },
    cancel: async (key, reason) => {
      if (abortHere(key, reason)) return
      if (feed !== undefined) await sql`select pg_notify(${CALL_CANCEL_CHANNEL}, ${key})`.execute(db)
    },
    size: () => calls.size,
    close: () => {
      unfollow?.()
      for (const { controller } of calls.values()) controller.abort('shutdown')
      calls.clear()
      perUserCount.clear()
    },
  }
}
