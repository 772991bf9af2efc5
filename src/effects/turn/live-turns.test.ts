import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { TurnOutput, TurnStopReason } from '../../machines/index.ts'
import type { ChangeFeed } from '../db/change-feed.ts'
import type { Db } from '../db/schema.ts'
import { createLogger } from '../logging/logger.ts'
import { createLiveTurns, REMOTE_WATCH_TTL_MS, type TurnRunHost } from './live-turns.ts'
import { formatTurnControl, TURN_CONTROL_CHANNEL } from './turn-control.ts'
import type { TurnEventWriter } from './turn-event-store.ts'
import type { NumberedEvent } from './turn-events.ts'

const TURN = '2da98cb0-1111-4222-8333-444455556666'
const WATCHER = '9f0e0000-1111-4222-8333-444455556666'

/** A writer that keeps what it is given; `finish` resolves at once. */
function recordingWriter() {
  const appended: NumberedEvent[] = []
  const finished: Array<{ terminal: NumberedEvent; status: string }> = []
  const announced = new Set<string>()
  const writer: TurnEventWriter = {
    append: (_turnId, event) => void appended.push(event),
    finish: async (_turnId, terminal, outcome) => {
      finished.push({ terminal, status: outcome.status })
      return true
    },
    announce: (turnId, on) => void (on ? announced.add(turnId) : announced.delete(turnId)),
    announceNow: () => undefined,
    onFlushed: () => () => undefined,
    close: async () => undefined,
  }
  return { writer, appended, finished, announced }
}

/** A change feed whose notifications the test sends. */
function scriptedFeed() {
  const handlers = new Map<string, Set<(payload: string) => void>>()
  const feed: ChangeFeed = {
    connected: () => true,
    on: (channel, handler) => {
      const set = handlers.get(channel) ?? new Set()
      handlers.set(channel, set)
      set.add(handler)
      return () => void set.delete(handler)
    },
    onReset: () => () => undefined,
    ready: async () => undefined,
    close: async () => undefined,
  }
  return { feed, notify: (channel: string, payload: string) => handlers.get(channel)?.forEach((handler) => handler(payload)) }
}

/** A turn that streams one delta (a moment after it starts, as a model does), then runs until stopped, and ends cancelled with the reason. */
const runUntilStopped = ({ signal, onEvent, recordOutcome }: TurnRunHost): Promise<TurnOutput> =>
  new Promise((resolve) => {
    queueMicrotask(() => onEvent({ type: 'delta', text: 'Working' }))
    signal.addEventListener('abort', () => {
      const reason = signal.reason as TurnStopReason
      void recordOutcome({ id: TURN, status: 'cancelled', error: { code: 'cancelled', message: `stopped (${reason})` } }).then(() =>
        resolve({ status: 'cancelled', messages: [], error: { code: 'cancelled', message: `the turn was stopped (${reason})` }, counters: { modelSteps: 1, modelCalls: 1, toolCalls: 0, compactions: 0 }, usage: {} }),
      )
    })
  })

describe('live turns', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  const setup = () => {
    const recorded = recordingWriter()
    const scripted = scriptedFeed()
    const turns = createLiveTurns({ db: {} as Db, feed: scripted.feed, logger: createLogger({ level: 'error', write: () => undefined }), retention: { seconds: 60, maxBytes: 1 }, pruneIntervalMs: 3_600_000, writer: recorded.writer })
    return { turns, ...recorded, ...scripted }
  }
  const reasonOf = (finished: ReturnType<typeof recordingWriter>['finished']) => JSON.parse(finished[0]!.terminal.json).message as string

  it('numbers every event from 1, hands it to the subscriber and the writer, and ends with one stored terminal', async () => {
    const { turns, appended, finished } = setup()
    const turn = turns.start({ turnId: TURN, graceMs: 60_000, run: runUntilStopped })
    const seen: number[] = []
    turn.subscribe({ event: (numbered) => seen.push(numbered.seq), end: (numbered) => seen.push(numbered.seq) })
    await vi.advanceTimersByTimeAsync(0)
    expect(appended.map((event) => [event.seq, event.name])).toEqual([[1, 'delta']])
    turn.stop('user')
    await turn.ended
    expect(seen).toEqual([1, 2])
    expect(finished).toMatchObject([{ status: 'cancelled', terminal: { seq: 2, name: 'error' } }])
    expect(turns.get(TURN)).toBeUndefined()
  })

  it('runs on for its grace period once its last client left, then stops for disconnect; a client back in time keeps it', async () => {
    const { turns, finished } = setup()
    const turn = turns.start({ turnId: TURN, graceMs: 10_000, run: runUntilStopped })
    const leave = turn.subscribe({ event: () => undefined, end: () => undefined })
    leave()
    await vi.advanceTimersByTimeAsync(9_000)
    const detach = turn.attach() // a resumed stream, in time
    await vi.advanceTimersByTimeAsync(60_000)
    expect(finished).toEqual([])
    detach()
    await vi.advanceTimersByTimeAsync(9_999)
    expect(finished).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    await turn.ended
    expect(reasonOf(finished)).toBe('the turn was stopped (disconnect)')
  })

  it("a follower on another instance keeps it attended while its watch is renewed; a lapsed watch starts the grace", async () => {
    const { turns, finished, notify, announced } = setup()
    const turn = turns.start({ turnId: TURN, graceMs: 1_000, run: runUntilStopped })
    turn.subscribe({ event: () => undefined, end: () => undefined })() // its first client left at once
    notify(TURN_CONTROL_CHANNEL, formatTurnControl({ kind: 'watch', turnId: TURN, watcher: WATCHER }))
    expect(announced.has(TURN)).toBe(true) // its flushes now NOTIFY
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(REMOTE_WATCH_TTL_MS / 3)
      notify(TURN_CONTROL_CHANNEL, formatTurnControl({ kind: 'watch', turnId: TURN, watcher: WATCHER }))
    }
    expect(finished).toEqual([])
    await vi.advanceTimersByTimeAsync(REMOTE_WATCH_TTL_MS + 1_000)
    await turn.ended
    expect(announced.has(TURN)).toBe(false)
    expect(reasonOf(finished)).toBe('the turn was stopped (disconnect)')
  })

  it('a stop command by NOTIFY stops it for the user; a command about another turn or a malformed one changes nothing', async () => {
    const { turns, finished, notify } = setup()
    const turn = turns.start({ turnId: TURN, graceMs: 60_000, run: runUntilStopped })
    turn.subscribe({ event: () => undefined, end: () => undefined })
    notify(TURN_CONTROL_CHANNEL, formatTurnControl({ kind: 'stop', turnId: WATCHER }))
    notify(TURN_CONTROL_CHANNEL, `stop ${TURN} now`)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(finished).toEqual([])
    notify(TURN_CONTROL_CHANNEL, formatTurnControl({ kind: 'stop', turnId: TURN }))
    await turn.ended
    expect(reasonOf(finished)).toBe('the turn was stopped (user)')
  })

  it('drains: idle resolves when the last turn ended; stopAll stops the rest with their reason', async () => {
    const { turns, finished } = setup()
    turns.drain()
    expect(turns.draining()).toBe(true)
    const turn = turns.start({ turnId: TURN, graceMs: 60_000, run: runUntilStopped })
    turn.subscribe({ event: () => undefined, end: () => undefined })
    let idle = false
    void turns.idle().then(() => (idle = true))
    await vi.advanceTimersByTimeAsync(1_000)
    expect(idle).toBe(false)
    await turns.stopAll('shutdown')
    await vi.advanceTimersByTimeAsync(0)
    expect(idle).toBe(true)
    expect(reasonOf(finished)).toBe('the turn was stopped (shutdown)')
  })
})
