// The turns this process runs, apart from the requests that started them. A turn's events are
// numbered (the SSE `id:`), stored through the process's writer (turn-event-store.ts) and handed to
// the clients attached here; the turn ends with one terminal event, stored with its outcome row.
// A turn keeps running when its client leaves: only once no client is attached — here, or on
// another instance following its stored events (`watch` by NOTIFY, turn-control.ts) — for its grace
// period is it stopped (`disconnect`). A `stop` NOTIFY from any instance stops it (`user`), through
// the machine's cancel path like every other stop. While the process drains (SIGTERM) it starts
// no new turn; what is left when the drain ends is stopped (`shutdown`). A turn another instance
// closed while this one was unresponsive (its lease lapsed: `endClosedElsewhere`) is stopped, and
// its clients here get the terminal that instance stored, the one every other client reads.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { TurnEmitted, TurnOutput, TurnStopReason, Usage } from '../../machines/index.ts'
import { AppConfigService } from '../config/app-config.ts'
import { type ChangeFeed, ChangeFeedService } from '../db/change-feed.ts'
import { Database } from '../db/database.ts'
import type { Db } from '../db/schema.ts'
import { type Logger, LoggerService } from '../logging/logger.ts'
import { parseTurnControl, TURN_CONTROL_CHANNEL } from './turn-control.ts'
import { createTurnEventWriter, type TurnEventWriter, type TurnFinishRecord } from './turn-event-store.ts'
import { pruneTurnEvents, readTurnEvents } from './stored-turn-events.ts'
import {
  MAX_TURN_EVENTS,
  type NumberedEvent,
  numberedEvent,
  progressJson,
  type TerminalEmitted,
  terminalEventOf,
  terminalJson,
  terminalOf,
  type TurnProgressEvent,
  type TurnTerminal,
  withTurnFields,
} from './turn-events.ts'

/** A client of a turn running here: its live events, then its terminal once stored. */
export interface TurnSubscriber {
  readonly event: (numbered: NumberedEvent, event: TurnProgressEvent) => void
  readonly end: (numbered: NumberedEvent, terminal: TurnTerminal, outcome: { readonly usage: Usage | undefined }) => void
}

/** What `run` is given: the stop signal, where its events go, and where its outcome is recorded. */
export interface TurnRunHost {
  readonly signal: AbortSignal
  readonly onEvent: (event: TurnEmitted) => void
  /** Keeps the outcome: it is written with the terminal event, in one statement. */
  readonly recordOutcome: (outcome: TurnFinishRecord) => Promise<void>
}

export interface StartTurn {
  readonly turnId: string
  /** Runs the turn (runTurn with the host's signal, events and outcome recorder); resolves with its output. */
  readonly run: (host: TurnRunHost) => Promise<TurnOutput>
  /** How long it runs on with no client attached (ms); 0: stopped when its last client leaves. */
  readonly graceMs: number
  readonly logger?: Logger | undefined
}

export interface LiveTurn {
  readonly turnId: string
  /** Attaches a client to the live events from now on; the returned function detaches it. */
  readonly subscribe: (subscriber: TurnSubscriber) => () => void
  /** Counts a client reading the stored events (a resumed stream here) as attached. */
  readonly attach: () => () => void
  readonly stop: (reason: TurnStopReason) => void
  /** Clients attached now: subscribers, resumed streams here, and other instances' followers. */
  readonly clients: () => number
  /** Resolves once the terminal event was handed to the subscribers. */
  readonly ended: Promise<void>
}

export interface LiveTurns {
  readonly start: (turn: StartTurn) => LiveTurn
  readonly get: (turnId: string) => LiveTurn | undefined
  readonly writer: TurnEventWriter
  /** Turns running here now. */
  readonly running: () => number
  /** Stops accepting turns (`draining()` is then true); running ones go on. */
  readonly drain: () => void
  readonly draining: () => boolean
  /** Resolves once no turn runs here. */
  readonly idle: () => Promise<void>
  /** Stops every running turn with `reason` and waits for their terminals. */
  readonly stopAll: (reason: TurnStopReason) => Promise<void>
  /**
   * Ends the turns running here whose rows are no longer `running` (closed by another instance
   * while this one's lease had lapsed): each is stopped, nothing more of it is stored, and its
   * clients get the terminal stored for it. Resolves to how many, once their clients have it.
   */
  readonly endClosedElsewhere: () => Promise<number>
  /** Stops what still runs (`shutdown`), stores what is queued, and stops following the feed. */
  readonly close: () => Promise<void>
}

export interface LiveTurnsOptions {
  readonly db: Db
  readonly feed: ChangeFeed | undefined
  readonly logger: Logger
  /** Events of ended turns: kept this long, and at most this many bytes in all. */
  readonly retention: { readonly seconds: number; readonly maxBytes: number }
  readonly flushMs?: number | undefined
  readonly pruneIntervalMs?: number | undefined
  /** Where the events go (default: a writer on `db`; tests pass their own). */
  readonly writer?: TurnEventWriter | undefined
}

/** A watch from another instance lapses unless renewed within this time (followers renew every third of it). */
export const REMOTE_WATCH_TTL_MS = 15_000

export function createLiveTurns({ db, feed, logger, retention, flushMs, pruneIntervalMs = 60_000, writer = createTurnEventWriter({ db, logger, flushMs }) }: LiveTurnsOptions): LiveTurns {
  const turns = new Map<string, LiveTurn & { readonly watch: (watcher: string, on: boolean) => void; readonly endElsewhere: () => void }>()
  let draining = false
  let idleWaiters: Array<() => void> = []
  const settleIdle = () => {
    if (turns.size > 0) return
    for (const resolve of idleWaiters.splice(0)) resolve()
  }

  const unfollow = feed?.on(TURN_CONTROL_CHANNEL, (payload) => {
    const control = parseTurnControl(payload)
    const turn = control && turns.get(control.turnId)
    if (!control || !turn) return
    if (control.kind === 'stop') turn.stop('user')
    else turn.watch(control.watcher, control.kind === 'watch')
  })

  const prune = setInterval(() => {
    pruneTurnEvents(db, { retentionSeconds: retention.seconds, maxBytes: retention.maxBytes }).catch((error: Error) =>
      logger.warn('could not prune stored turn events', { error: error.message }),
    )
  }, pruneIntervalMs)
  prune.unref()

  const start = ({ turnId, run, graceMs, logger: turnLogger = logger }: StartTurn): LiveTurn => {
    const stopper = new AbortController()
    const subscribers = new Set<TurnSubscriber>()
    const remote = new Map<string, ReturnType<typeof setTimeout>>()
    let attached = 0
    let seq = 0
    let held: TerminalEmitted | undefined
    let recorded: TurnFinishRecord | undefined
    let graceTimer: ReturnType<typeof setTimeout> | undefined
    let over = false
    let overflowed = false
    /** Closed by another instance: its stored terminal, not this one's, ends it. */
    let closedElsewhere = false

    const stop = (reason: TurnStopReason) => {
      if (!over && !stopper.signal.aborted) stopper.abort(reason)
    }
    /** No client attached anywhere: the grace period runs; one attached: it stops. */
    const reconsider = () => {
      const attended = turn.clients() > 0
      if (attended || over) {
        if (graceTimer !== undefined) clearTimeout(graceTimer)
        graceTimer = undefined
        return
      }
      if (graceTimer !== undefined) return
      if (graceMs <= 0) return stop('disconnect')
      graceTimer = setTimeout(() => stop('disconnect'), graceMs)
      graceTimer.unref()
    }

    const onEvent = (event: TurnEmitted) => {
      if (held || over || closedElsewhere) return
      if (event.type === 'done' || event.type === 'error') {
        held = event // sent once the turn's output (its history) is known
        return
      }
      if (seq === MAX_TURN_EVENTS) {
        if (!overflowed) turnLogger.warn('turn past its number of events: the rest of its progress is not sent', { turnId })
        overflowed = true
        return
      }
      seq += 1
      const numbered = numberedEvent({ seq, name: event.type, json: progressJson(event) })
      writer.append(turnId, numbered)
      for (const subscriber of subscribers) {
        try {
          subscriber.event(numbered, event)
        } catch (error) {
          turnLogger.warn('turn subscriber failed', { turnId, error: error instanceof Error ? error.message : String(error) })
        }
      }
    }

    /** The terminal another instance stored for this turn (after anything this one numbered), if any. */
    const storedTerminal = async (): Promise<{ numbered: NumberedEvent; terminal: TurnTerminal } | undefined> => {
      const stored = await readTurnEvents(db, { turnId, after: seq }).catch((error: Error) => {
        turnLogger.warn('could not read the terminal stored for a turn closed elsewhere', { turnId, error: error.message })
        return []
      })
      for (const numbered of stored) {
        const terminal = terminalEventOf(numbered)
        if (terminal) return { numbered, terminal }
      }
      return undefined
    }

    const finish = async (output: TurnOutput | undefined): Promise<void> => {
      const elsewhere = closedElsewhere ? await storedTerminal() : undefined
      const terminal = elsewhere?.terminal ?? withTurnFields(terminalOf({ held, output }), { turnId, history: output?.messages })
      let numbered: NumberedEvent
      if (elsewhere) numbered = elsewhere.numbered // stored already, with the turn's closed row
      else {
        seq += 1
        numbered = numberedEvent({ seq, name: terminal.type, json: terminalJson(terminal) })
        const outcome: TurnFinishRecord = recorded ?? {
          id: turnId,
          status: 'failed',
          error: { code: 'internal_error', message: 'the turn failed unexpectedly' },
        }
        await writer.finish(turnId, numbered, outcome)
      }
      over = true
      if (graceTimer !== undefined) clearTimeout(graceTimer)
      for (const timer of remote.values()) clearTimeout(timer)
      remote.clear()
      turns.delete(turnId)
      for (const subscriber of [...subscribers]) {
        try {
          subscriber.end(numbered, terminal, { usage: elsewhere ? undefined : output?.usage })
        } catch (error) {
          turnLogger.warn('turn subscriber failed', { turnId, error: error instanceof Error ? error.message : String(error) })
        }
      }
      subscribers.clear()
      settleIdle()
    }

    const ended = (async () => {
      let output: TurnOutput | undefined
      try {
        output = await run({
          signal: stopper.signal,
          onEvent,
          recordOutcome: async (outcome) => {
            recorded = outcome
          },
        })
      } catch (error) {
        turnLogger.error('turn crashed', {
          turnId,
          error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
        })
        held = { type: 'error', code: 'internal_error', message: 'the turn failed unexpectedly' }
        recorded = undefined
      }
      await finish(output)
    })()

    const turn = {
      turnId,
      subscribe: (subscriber: TurnSubscriber) => {
        if (over) return () => {}
        subscribers.add(subscriber)
        reconsider()
        return () => {
          if (subscribers.delete(subscriber)) reconsider()
        }
      },
      attach: () => {
        if (over) return () => {}
        attached += 1
        reconsider()
        let detached = false
        return () => {
          if (detached) return
          detached = true
          attached -= 1
          reconsider()
        }
      },
      watch: (watcher: string, on: boolean) => {
        if (over) return
        const previous = remote.get(watcher)
        if (previous !== undefined) clearTimeout(previous)
        remote.delete(watcher)
        if (on) {
          const lapse = setTimeout(() => {
            remote.delete(watcher)
            if (remote.size === 0) writer.announce(turnId, false)
            reconsider()
          }, REMOTE_WATCH_TTL_MS)
          lapse.unref()
          remote.set(watcher, lapse)
          writer.announce(turnId, true)
          if (previous === undefined) writer.announceNow(turnId) // the follower reads what it may have missed
        } else if (remote.size === 0) writer.announce(turnId, false)
        reconsider()
      },
      stop,
      endElsewhere: () => {
        if (over) return
        closedElsewhere = true
        stop('shutdown')
      },
      clients: () => subscribers.size + attached + remote.size,
      ended,
    }
    turns.set(turnId, turn)
    return turn
  }

  const idle = () =>
    new Promise<void>((resolve) => {
      idleWaiters.push(resolve)
      settleIdle()
    })
  const stopAll = async (reason: TurnStopReason) => {
    const running = [...turns.values()]
    for (const turn of running) turn.stop(reason)
    await Promise.all(running.map((turn) => turn.ended))
  }

  const endClosedElsewhere = async (): Promise<number> => {
    const ids = [...turns.keys()]
    if (ids.length === 0) return 0
    const closed = await db.selectFrom('turns').select('id').where('id', 'in', ids).where('status', '<>', 'running').execute()
    const ending = closed.flatMap(({ id }) => {
      const turn = turns.get(id)
      turn?.endElsewhere()
      return turn ? [turn.ended] : []
    })
    await Promise.all(ending)
    return ending.length
  }

  return {
    start: (turn) => {
      if (turns.has(turn.turnId)) throw new Error(`turn ${turn.turnId} is already running here`)
      return start(turn)
    },
    get: (turnId) => turns.get(turnId),
    writer,
    running: () => turns.size,
    drain: () => {
      draining = true
    },
    draining: () => draining,
    idle,
    stopAll,
    endClosedElsewhere,
    close: async () => {
      draining = true
      unfollow?.()
      clearInterval(prune)
      await stopAll('shutdown')
      await writer.close()
      idleWaiters = []
    },
  }
}

/** The process's live turns, from the composition root: closed (remaining turns stopped, events stored) with the runtime. */
export class LiveTurnsService extends Context.Service<LiveTurnsService, LiveTurns>()('knowagent/turn/LiveTurns') {
  static readonly layer: Layer.Layer<LiveTurnsService, never, Database | ChangeFeedService | LoggerService | AppConfigService> = Layer.effect(
    LiveTurnsService,
    Effect.gen(function* () {
      const database = yield* Database
      const feed = yield* ChangeFeedService
      const logger = yield* LoggerService
      const config = yield* AppConfigService
      const retention = { seconds: config.turns.eventRetentionSeconds, maxBytes: config.turns.eventRetentionMb * 1024 * 1024 }
      return yield* Effect.acquireRelease(
        Effect.sync(() => createLiveTurns({ db: database.db, feed, logger, retention })),
        (turns) => Effect.promise(() => turns.close()),
      )
    }),
  )
}
