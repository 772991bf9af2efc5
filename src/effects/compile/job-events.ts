// Live job changes across processes (SPEC §10): every change to a compile job row is announced
// with NOTIFY on `knowagent_jobs` in the transaction that makes it (compile-jobs-store.ts). This
// service holds ONE dedicated `pg.Client` that LISTENs and fans the notifications out to local
// subscribers (task-center streams, the worker's cancel watch). The pool is never used for LISTEN.
// A dropped connection is re-established with backoff; subscribers are told (`resync`) so they
// re-read what they show, since notifications sent meanwhile are lost.
import * as Context from 'effect/Context'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import * as Schema from 'effect/Schema'
import pg from 'pg'
import type { Logger } from '../logging/logger.ts'
import { JOBS_CHANNEL } from './compile-jobs-store.ts'

export type JobEvent = { readonly type: 'changed'; readonly jobId: string; readonly ownerId: string } | { readonly type: 'resync' }
export type JobEventListener = (event: JobEvent) => void

export interface JobEvents {
  readonly subscribe: (listener: JobEventListener) => () => void
  /** Local subscribers now (each open live stream, each worker's cancel watch). */
  readonly subscribers: () => number
  /** Resolves once the LISTEN is in place (tests wait for it before causing changes). */
  readonly ready: () => Promise<void>
  readonly close: () => Promise<void>
}

const Payload = Schema.Struct({ job_id: Schema.String, owner_id: Schema.String })
const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Payload))

export function makeJobEvents({
  connection,
  logger,
  retryBaseMs = 500,
  retryMaxMs = 15_000,
}: {
  /** The database's connection settings (DatabaseHandle.connection). */
  connection: pg.ClientConfig
  logger?: Logger | undefined
  retryBaseMs?: number
  retryMaxMs?: number
}): JobEvents {
  const listeners = new Set<JobEventListener>()
  let client: pg.Client | undefined
  let closed = false
  let failures = 0
  let retryTimer: NodeJS.Timeout | undefined
  let readyResolve: () => void = () => {}
  let readyPromise = new Promise<void>((resolve) => (readyResolve = resolve))

  const emit = (event: JobEvent) => {
    for (const listener of [...listeners]) {
      try {
        listener(event)
      } catch (error) {
        logger?.warn('job event listener failed', { error: error instanceof Error ? error.message : String(error) })
      }
    }
  }

  const connect = async (): Promise<void> => {
    if (closed) return
    const next = new pg.Client({ ...connection, application_name: 'knowagent-job-events' })
    next.on('error', () => {}) // reported through 'end'
    next.on('notification', (message) => {
      if (message.channel !== JOBS_CHANNEL) return
      const payload = decodePayload(message.payload ?? '')
      if (payload._tag === 'Some') emit({ type: 'changed', jobId: payload.value.job_id, ownerId: payload.value.owner_id })
    })
    next.on('end', () => {
      if (client !== next) return
      client = undefined
      if (closed) return
      readyPromise = new Promise<void>((resolve) => (readyResolve = resolve))
      scheduleReconnect()
    })
    try {
      await next.connect()
      await next.query(`LISTEN ${JOBS_CHANNEL}`)
    } catch (error) {
      await next.end().catch(() => {})
      logger?.warn('job events: LISTEN failed, retrying', { error: error instanceof Error ? error.message : String(error) })
      scheduleReconnect()
      return
    }
    if (closed) {
      await next.end().catch(() => {})
      return
    }
    client = next
    const reconnected = failures > 0
    failures = 0
    readyResolve()
    if (reconnected) emit({ type: 'resync' })
  }

  const scheduleReconnect = () => {
    failures++
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(10, failures - 1))
    retryTimer = setTimeout(() => void connect(), delay)
    retryTimer.unref()
  }

  void connect()
  return {
    subscribe: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    subscribers: () => listeners.size,
    ready: () => readyPromise,
    close: async () => {
      closed = true
      if (retryTimer) clearTimeout(retryTimer)
      listeners.clear()
      const current = client
      client = undefined
      await current?.end().catch(() => {})
      readyResolve()
    },
  }
}

/** The process's one LISTEN connection, released when the runtime shuts down. */
export class JobEventsService extends Context.Service<JobEventsService, JobEvents>()('knowagent/compile/JobEvents') {
  static readonly layer = (options: { connection: pg.ClientConfig; logger?: Logger | undefined }): Layer.Layer<JobEventsService> =>
    Layer.effect(
      JobEventsService,
      Effect.acquireRelease(
        Effect.sync(() => makeJobEvents(options)),
        (events) => Effect.promise(() => events.close()),
      ),
    )
}
