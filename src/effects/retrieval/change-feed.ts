// The retrieval feature's change feed: LISTEN on its channels (the catalog, the settings) through
// ONE dedicated `pg.Client` (the pool is for queries), reconnecting with backoff when the
// connection drops. Notifications sent while disconnected are lost, so every reset — each
// (re)connect and each disconnect — tells the caches to forget what they hold; while it is down
// they trust nothing from memory. `close()` ends the client and clears the reconnect timer.
import pg from 'pg'
import type { Logger } from '../logging/logger.ts'

export interface ChangeFeed {
  /** True while LISTEN is in effect (notifications are being received). */
  readonly connected: () => boolean
  /** Calls `onNotify` with each payload sent on `channel` (one of the feed's channels). */
  readonly on: (channel: string, onNotify: (payload: string) => void) => () => void
  /** After every (re)connect and on every disconnect: whatever was kept from notifications may be stale. */
  readonly onReset: (listener: () => void) => () => void
  readonly close: () => Promise<void>
}

export interface ChangeFeedOptions {
  /** The database's connection settings (`DatabaseHandle.connection`); holds the password. */
  readonly connection: pg.ClientConfig
  readonly channels: ReadonlyArray<string>
  readonly logger: Logger
  readonly reconnectDelayMs?: { readonly initial: number; readonly max: number } | undefined
}

export const LISTENER_APPLICATION_NAME = 'knowagent-listener'

export function startChangeFeed(options: ChangeFeedOptions): ChangeFeed {
  for (const channel of options.channels) if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`)
  const handlers = new Map<string, Set<(payload: string) => void>>(options.channels.map((channel) => [channel, new Set()]))
  const resetListeners = new Set<() => void>()
  const reset = (): void => {
    for (const listener of [...resetListeners]) listener()
  }
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
    if (wasConnected) reset()
    if (closed) return
    const delay = Math.min(delays.max, delays.initial * 2 ** Math.min(attempt, 16))
    attempt += 1
    options.logger.warn('retrieval change feed disconnected; reconnecting', { channels: options.channels, delayMs: delay, reason: describe(reason) })
    timer = setTimeout(() => {
      timer = undefined
      void connect()
    }, delay)
  }

  const connect = async (): Promise<void> => {
    if (closed) return
    const current = new pg.Client({ ...options.connection, application_name: LISTENER_APPLICATION_NAME, keepAlive: true })
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
    close: async () => {
      closed = true
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

function describe(reason: unknown): string {
  if (reason instanceof Error) return (reason as { code?: string }).code ?? reason.message.replace(/postgres(ql)?:\/\/\S+/gi, '[url]')
  return String(reason)
}
