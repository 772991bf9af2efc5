// Follows a turn's stored events from any instance (a client that reconnected with Last-Event-ID):
// everything after `after`, in order and exactly once, until the terminal event. It reads the store
// (turn-event-store.ts) again whenever there may be more: the turn's own writer flushed (the turn
// runs here), its instance NOTIFYed it (it runs elsewhere: the follower asks it to with `watch`,
// which also keeps the turn from being stopped as unattended), the feed reconnected, or the poll
// came round (nothing is left waiting on a lost notification or a dead instance).
import { randomUUID } from 'node:crypto'
import type { ChangeFeed } from '../db/change-feed.ts'
import type { Db } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import { type LiveTurns, REMOTE_WATCH_TTL_MS } from './live-turns.ts'
import { sendTurnControl } from './turn-control.ts'
import { readTurnEvents } from './stored-turn-events.ts'
import { TURN_EVENTS_CHANNEL } from './turn-event-store.ts'
import { isTerminalName, type NumberedEvent } from './turn-events.ts'

export interface FollowTurnOptions {
  readonly db: Db
  readonly feed: ChangeFeed | undefined
  readonly turns: LiveTurns
  readonly turnId: string
  /** The last event the client has; the next one it gets is `after + 1`. */
  readonly after: number
  readonly signal: AbortSignal
  /** Each read's new events, in order; called synchronously, never twice for one event. */
  readonly onEvents: (events: ReadonlyArray<NumberedEvent>) => void
  /** After the first read: what was stored when the follow began has been delivered. */
  readonly onCaughtUp?: (() => void) | undefined
  readonly logger?: Logger | undefined
  /** How often the store is read with no notification (default 2 s). */
  readonly pollMs?: number | undefined
}

/**
 * Resolves `ended` once the terminal event was delivered, `aborted` when `signal` ends the follow,
 * `gone` when the turn is over and nothing more is stored for it (its events expired meanwhile).
 */
export async function followTurn({ db, feed, turns, turnId, after, signal, onEvents, onCaughtUp, logger, pollMs = 2_000 }: FollowTurnOptions): Promise<'ended' | 'aborted' | 'gone'> {
  let delivered = after
  let dirty = true
  let wake = (): void => undefined
  const poke = () => {
    dirty = true
    wake()
  }
  const cleanup: Array<() => void> = []
  const local = turns.get(turnId)
  if (local) {
    cleanup.push(local.attach(), turns.writer.onFlushed((ids) => ids.has(turnId) && poke()))
  } else {
    const watcher = randomUUID()
    const watch = (kind: 'watch' | 'unwatch') =>
      sendTurnControl(db, { kind, turnId, watcher }).catch((error: Error) => logger?.warn('could not reach the turn\'s instance', { turnId, error: error.message }))
    void watch('watch')
    const renew = setInterval(() => void watch('watch'), Math.floor(REMOTE_WATCH_TTL_MS / 3))
    renew.unref()
    cleanup.push(
      () => clearInterval(renew),
      () => void watch('unwatch'),
      feed?.on(TURN_EVENTS_CHANNEL, (payload) => payload.includes(turnId) && poke()) ?? (() => undefined),
      feed?.onReset(() => {
        poke()
        void watch('watch')
      }) ?? (() => undefined),
    )
  }
  const poll = setInterval(poke, pollMs)
  poll.unref()
  const onAbort = () => wake()
  signal.addEventListener('abort', onAbort)
  let first = true
  try {
    while (!signal.aborted) {
      if (!dirty) {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = () => undefined
        continue
      }
      dirty = false
      const events = await readTurnEvents(db, { turnId, after: delivered })
      if (signal.aborted) break
      // In order, each once. Numbers are consecutive, except before the terminal of a turn whose
      // instance died (turn-events.ts, INTERRUPTED_TERMINAL_SEQ); a turn's events are removed all at once.
      const fresh = events.filter((event) => event.seq > delivered)
      if (fresh.length > 0) delivered = fresh.at(-1)!.seq
      if (fresh.length > 0) onEvents(fresh)
      if (first) {
        first = false
        onCaughtUp?.()
      }
      if (fresh.length > 0 && isTerminalName(fresh.at(-1)!.name)) return 'ended'
      if (fresh.length === 0 && !(await stillRunning(db, turnId))) {
        // Ended meanwhile: its terminal was stored with its outcome, so one more read finds it, or nothing will.
        const last = await readTurnEvents(db, { turnId, after: delivered })
        if (last.length === 0) return 'gone'
        onEvents(last)
        delivered = last.at(-1)!.seq
        return isTerminalName(last.at(-1)!.name) ? 'ended' : 'gone'
      }
    }
    return 'aborted'
  } finally {
    signal.removeEventListener('abort', onAbort)
    clearInterval(poll)
    for (const release of cleanup) release()
  }
}

async function stillRunning(db: Db, turnId: string): Promise<boolean> {
  const row = await db.selectFrom('turns').select('status').where('id', '=', turnId).executeTakeFirst()
  return row?.status === 'running'
}
