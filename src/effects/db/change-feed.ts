// A change feed: LISTEN on a few channels through ONE dedicated `pg.Client` (the pool is for
// queries), reconnecting with backoff when the connection drops. Notifications sent while
// disconnected are lost, so every reset — each (re)connect and each disconnect — tells whoever
// keeps state from them to forget it; while it is down they trust nothing from memory. `close()`
// ends the client and clears the reconnect timer. A server process has one, made by the composition
// root (app-layer.ts, FEED_CHANNELS) and shared: the retrieval catalog and settings (with
// `makeFeedCache` below) and the compile job events (job-events.ts), each through `followFeed`.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import pg from 'pg'
import { type Logger, LoggerService } from '../logging/logger.ts'
import { Database } from './database.ts'

export interface ChangeFeed {
  /** True while LISTEN is in effect (notifications are being received). */
  readonly connected: () => boolean
  /** Calls `onNotify` with each payload sent on `channel` (one of the feed's channels). */
  readonly on: (channel: string, onNotify: (payload: string) => void) => () => void
  /** After every (re)connect and on every disconnect: whatever was kept from notifications may be stale. */
  readonly onReset: (listener: () => void) => () => void
  /** Resolves once LISTEN is in effect (now, or at the next connect); `close()` resolves it too. */
  readonly ready: () => Promise<void>
  readonly close: () => Promise<void>
}

export interface ChangeFeedOptions {
  /** The database's connection settings (`DatabaseHandle.connection`); holds the password. */
  readonly connection: pg.ClientConfig
  readonly channels: ReadonlyArray<string>
  readonly logger: Logger
  readonly reconnectDelayMs?: { readonly initial: number; readonly max: number } | undefined
  /** How its backend shows in pg_stat_activity (default LISTENER_APPLICATION_NAME). */
  readonly applicationName?: string | undefined
}

export const LISTENER_APPLICATION_NAME = 'knowagent-listener'

export function startChangeFeed(options: ChangeFeedOptions): ChangeFeed {
  for (const channel of options.channels) if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`)
  const handlers = new Map<string, Set<(payload: string) => void>>(options.channels.map((channel) => [channel, new Set()]))
  const resetListeners = new Set<() => void>()
  const reset = (): void => {
    for (const listener of [...resetListeners]) listener()
  }
  let markReady = (): void => undefined
  let readyPromise = new Promise<void>((resolve) => (markReady = resolve))
  const delays = options.reconnectDelayMs ?? { initial: 250, max: 10_000 }
  let client: pg.Client | undefined
  let isConnected = false
  let closed = false
  let attempt = 0
  let timer: ReturnType<typeof setTimeout> | undefined

  const lost = (current: pg.Client, reason: unknown): void => {
    if (client !== current) return
    client = undefined
    const wasConnected = isConnected
    isConnected = false
    current.removeAllListeners('notification')
    current.end().catch(() => undefined)
    if (wasConnected) {
      readyPromise = new Promise<void>((resolve) => (markReady = resolve))
      reset()
    }
    if (closed) return
    const delay = Math.min(delays.max, delays.initial * 2 ** Math.min(attempt, 16))
    attempt += 1
    options.logger.warn('change feed disconnected; reconnecting', { channels: options.channels, delayMs: delay, reason: describe(reason) })
    timer = setTimeout(() => {
      timer = undefined
      void connect()
    }, delay)
  }

  const connect = async (): Promise<void> => {
    if (closed) return
    const current = new pg.Client({ ...options.connection, application_name: options.applicationName ?? LISTENER_APPLICATION_NAME, keepAlive: true })
    client = current
    current.on('error', (error) => lost(current, error))
    current.on('end', () => lost(current, 'connection ended'))
    current.on('notification', (message) => {
      for (const onNotify of [...(handlers.get(message.channel) ?? [])]) onNotify(message.payload ?? '')
    })
    try {
      await current.connect()
      await current.query(options.channels.map((channel) => `LISTEN ${channel}`).join('; '))
    } catch (error) {
      lost(current, error)
      return
    }
    if (client !== current || closed) return
    isConnected = true
    attempt = 0
    markReady()
    reset()
  }

  void connect()

  return {
    connected: () => isConnected,
    on: (channel, onNotify) => {
      const set = handlers.get(channel)
      if (set === undefined) throw new Error(`the feed does not listen on ${channel}`)
      set.add(onNotify)
      return () => void set.delete(onNotify)
    },
    onReset: (listener) => {
      resetListeners.add(listener)
      return () => void resetListeners.delete(listener)
    },
    ready: () => readyPromise,
    close: async () => {
      closed = true
      markReady()
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      const current = client
      client = undefined
      isConnected = false
      if (current !== undefined) {
        current.removeAllListeners()
        current.on('error', () => undefined)
        await current.end().catch(() => undefined)
      }
    },
  }
}

/** A feature's feed: the process's shared one, or one of its own (closed by `release`), or none. */
export interface FollowedFeed {
  readonly feed: ChangeFeed | undefined
  /** Closes the feed if it is the feature's own; a shared one is the composition root's to close. */
  readonly release: () => Promise<void>
}

/**
 * The feed a feature follows: `shared` when the composition root gave one (it must listen on the
 * feature's channels), else one of its own on `connection` (a process without the root's feed:
 * `knowagent worker`, a test), else none (every read goes to the database).
 */
export function followFeed({
  shared,
  connection,
  ...own
}: Omit<ChangeFeedOptions, 'connection'> & { readonly shared: ChangeFeed | undefined; readonly connection: pg.ClientConfig | undefined }): FollowedFeed {
  if (shared !== undefined) return { feed: shared, release: async () => {} }
  if (connection === undefined) return { feed: undefined, release: async () => {} }
  const feed = startChangeFeed({ ...own, connection })
  return { feed, release: () => feed.close() }
}

function describe(reason: unknown): string {
  if (reason instanceof Error) return (reason as { code?: string }).code ?? reason.message.replace(/postgres(ql)?:\/\/\S+/gi, '[url]')
  return String(reason)
}

export interface FeedCache<V> {
  /** The value of `key`: from memory while the feed vouches for it, else `load()` (kept when nothing changed meanwhile). */
  readonly read: (key: string, load: () => Promise<V>) => Promise<V>
  /** Drops `key` now (after a write of this process; the others learn it from the NOTIFY). */
  readonly forget: (key: string) => void
  /** Stops following the feed and empties the memory. */
  readonly close: () => void
}

/**
 * Values read from the database, kept in memory only while `feed` is connected. A NOTIFY on
 * `channel` whose payload is a key drops that key (then `onNotify` runs), a reset of the feed drops
 * them all, and an entry lives at most `ttlMs`. A read in flight when any of that happens does not
 * store its answer. Without a feed nothing is kept.
 */
export function makeFeedCache<V>({
  feed,
  channel,
  ttlMs = Number.POSITIVE_INFINITY,
  now = Date.now,
  onNotify,
}: {
  readonly feed: ChangeFeed | undefined
  readonly channel: string
  readonly ttlMs?: number | undefined
  readonly now?: (() => number) | undefined
  readonly onNotify?: ((key: string) => void) | undefined
}): FeedCache<V> {
  const memory = new Map<string, { readonly value: V; readonly at: number }>()
  let generation = 0
  const forget = (key: string): void => {
    generation += 1
    memory.delete(key)
  }
  const stops = [
    feed?.on(channel, (key) => {
      forget(key)
      onNotify?.(key)
    }),
    feed?.onReset(() => {
      generation += 1
      memory.clear()
    }),
  ]
  return {
    read: async (key, load) => {
      const cached = memory.get(key)
      if (cached !== undefined && feed?.connected() === true && now() - cached.at < ttlMs) return cached.value
      const before = generation
      const value = await load()
      if (feed?.connected() === true && generation === before) memory.set(key, { value, at: now() })
      return value
    },
    forget,
    close: () => {
      for (const stop of stops) stop?.()
      memory.clear()
    },
  }
}

/**
 * The process's change feed: one LISTEN connection for every channel its features follow (the
 * composition root lists them), started with the runtime and closed after the features that use
 * it. Undefined where nothing follows changes (CLI commands): each read then goes to the database.
 */
export class ChangeFeedService extends Context.Service<ChangeFeedService, ChangeFeed | undefined>()('knowagent/db/ChangeFeed') {
  static readonly layer = (channels: ReadonlyArray<string>): Layer.Layer<ChangeFeedService, never, Database | LoggerService> =>
    Layer.effect(
      ChangeFeedService,
      Effect.gen(function* () {
        const database = yield* Database
        const logger = yield* LoggerService
        return yield* Effect.acquireRelease(
          Effect.sync(() => startChangeFeed({ connection: database.connection, channels, logger })),
          (feed) => Effect.promise(() => feed.close()),
        )
      }),
    )

  static readonly none: Layer.Layer<ChangeFeedService> = Layer.succeed(ChangeFeedService, undefined)
}
