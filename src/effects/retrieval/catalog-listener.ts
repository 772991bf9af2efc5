// LISTEN on one channel through a dedicated `pg.Client` (the pool is for queries), reconnecting with
// backoff when the connection drops. `onReconnect` runs after every (re)connect, because
// notifications sent while disconnected are lost: whoever caches must forget what it holds.
// `close()` ends the client and clears the reconnect timer.
import pg from 'pg'
import type { Logger } from '../logging/logger.ts'

export interface ChannelListener {
  /** True while LISTEN is in effect (notifications are being received). */
  readonly connected: () => boolean
  readonly close: () => Promise<void>
}

export interface ChannelListenerOptions {
  /** The database's connection settings (`DatabaseHandle.connection`); holds the password. */
  readonly connection: pg.ClientConfig
  readonly channel: string
  readonly onNotify: (payload: string) => void
  /** After the first connect and every reconnect. */
  readonly onConnect?: (() => void) | undefined
  /** When the connection is lost (until it is back). */
  readonly onDisconnect?: (() => void) | undefined
  readonly logger: Logger
  readonly reconnectDelayMs?: { readonly initial: number; readonly max: number } | undefined
}

export const LISTENER_APPLICATION_NAME = 'knowagent-listener'

export function startChannelListener(options: ChannelListenerOptions): ChannelListener {
  if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new Error(`invalid channel name ${options.channel}`)
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
    if (wasConnected) options.onDisconnect?.()
    if (closed) return
    const delay = Math.min(delays.max, delays.initial * 2 ** Math.min(attempt, 16))
    attempt += 1
    options.logger.warn('catalog listener disconnected; reconnecting', { channel: options.channel, delayMs: delay, reason: describe(reason) })
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
      if (message.channel === options.channel) options.onNotify(message.payload ?? '')
    })
    try {
      await current.connect()
      await current.query(`LISTEN ${options.channel}`)
    } catch (error) {
      lost(current, error)
      return
    }
    if (client !== current || closed) return
    isConnected = true
    attempt = 0
    options.onConnect?.()
  }

  void connect()

  return {
    connected: () => isConnected,
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
