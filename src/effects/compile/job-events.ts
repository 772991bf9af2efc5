// Live job changes across processes (SPEC §10): every change to a compile job row is announced
// with NOTIFY on `knowagent_jobs` in the transaction that makes it (compile-jobs-store.ts). This
// service follows a change feed (db/change-feed.ts: a dedicated LISTEN connection, re-established
// with backoff; in a server the process's shared one, in `knowagent worker` its own) and fans the
// notifications out to local subscribers (task-center streams, the worker's wake-up and cancel
// watch). After a reconnect subscribers are told (`resync`) so they re-read what they show, since
// notifications sent meanwhile are lost.
import * as Schema from 'effect/Schema'
import type pg from 'pg'
import { type ChangeFeed, followFeed } from '../db/change-feed.ts'
import { type Logger, silentLogger } from '../logging/logger.ts'
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

export const JOB_EVENTS_APPLICATION_NAME = 'knowagent-job-events'

const Payload = Schema.Struct({ job_id: Schema.String, owner_id: Schema.String })
const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Payload))

export function makeJobEvents({
  feed: sharedFeed,
  connection,
  logger = silentLogger,
  retryBaseMs = 500,
  retryMaxMs = 15_000,
}: {
  /** The process's change feed (listening on JOBS_CHANNEL), shared and not closed here; else one of its own on `connection`. */
  feed?: ChangeFeed | undefined
  /** The database's connection settings (DatabaseHandle.connection), for a feed of its own. */
  connection?: pg.ClientConfig | undefined
  logger?: Logger | undefined
  retryBaseMs?: number
  retryMaxMs?: number
}): JobEvents {
  const listeners = new Set<JobEventListener>()
  const emit = (event: JobEvent) => {
    for (const listener of [...listeners]) {
      try {
        listener(event)
      } catch (error) {
        logger.warn('job event listener failed', { error: error instanceof Error ? error.message : String(error) })
      }
    }
  }

  const followed = followFeed({
    shared: sharedFeed,
    connection,
    channels: [JOBS_CHANNEL],
    logger,
    reconnectDelayMs: { initial: retryBaseMs, max: retryMaxMs },
    applicationName: JOB_EVENTS_APPLICATION_NAME,
  })
  const { feed } = followed
  if (feed === undefined) throw new Error('job events need a change feed or a connection')
  const stopNotify = feed.on(JOBS_CHANNEL, (payload) => {
    const decoded = decodePayload(payload)
    if (decoded._tag === 'Some') emit({ type: 'changed', jobId: decoded.value.job_id, ownerId: decoded.value.owner_id })
  })
  // A reconnect after a loss: what was sent meanwhile is lost, so subscribers re-read.
  let connectedBefore = feed.connected()
  const stopReset = feed.onReset(() => {
    if (!feed.connected()) return
    if (connectedBefore) emit({ type: 'resync' })
    connectedBefore = true
  })

  return {
    subscribe: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    subscribers: () => listeners.size,
    ready: () => feed.ready(),
    close: async () => {
      listeners.clear()
      stopNotify()
      stopReset()
      await followed.release()
    },
  }
}
