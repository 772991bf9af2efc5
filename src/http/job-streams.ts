// The live job streams of the compile routes (SPEC §7, §8): one loop (`streamJobs`) over the
// process's change feed, with two projections — JSON events for programs, HTML rows for the task
// center. The stream re-checks its credential and ends when it is revoked, and lets go of
// everything when the client leaves.
import type { Response } from 'express'
import type { User } from '../effects/auth/users.ts'
import type { CompileJobView, JobListFilter } from '../effects/compile/compile-jobs-store.ts'
import type { CompileFeature } from '../effects/compile/compile-service.ts'
import { JOB_STREAM_REVOKED_EVENT, JobRow, JobRowNotice, JobRows, jobRowId } from '../../views/partials/compile-jobs.tsx'
import { renderFragmentSync } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { whenClientGone } from './client-gone.ts'
import { watchCredential } from './credential-watch.ts'
import { openSse, type SseWriter } from './sse.ts'

const matches = (filter: JobListFilter, job: CompileJobView) =>
  (filter.directoryUri === undefined || job.directory_uri === filter.directoryUri) && (filter.statuses === undefined || filter.statuses.length === 0 || filter.statuses.includes(job.status))

export interface JobStreamProjector {
  /** The jobs the filter selects, on connect (and again after a LISTEN reconnect). */
  readonly snapshot: (jobs: ReadonlyArray<CompileJobView>) => void
  /** One job changed; `visible` says whether it still matches the filter. */
  readonly changed: (job: CompileJobView, visible: boolean) => void
  /** The stream's session or token no longer holds: the last message before the stream ends. */
  readonly revoked: () => void
}

const REVOKED_STREAM_MESSAGE = 'the session or token this stream was opened with is no longer valid (signed out, revoked or expired)'

export function jsonJobProjector(sse: SseWriter): JobStreamProjector {
  return {
    snapshot: (jobs) => void sse.send('jobs', { jobs }),
    changed: (job, visible) => void sse.send('job', { job, visible }),
    revoked: () => void sse.send('error', { code: 'unauthorized', message: REVOKED_STREAM_MESSAGE }),
  }
}

/** HTML rows for htmx: the first message replaces the table body; later ones replace, add or drop one row out of band. */
export function htmlJobProjector(sse: SseWriter): JobStreamProjector {
  const shown = new Set<string>()
  return {
    snapshot: (jobs) => {
      shown.clear()
      for (const job of jobs) shown.add(job.id)
      sse.sendText(renderFragmentSync(JobRows({ jobs })) || '<!-- no jobs -->')
    },
    changed: (job, visible) => {
      if (shown.has(job.id)) {
        if (visible) sse.sendText(renderFragmentSync(JobRow({ job, oob: 'outerHTML' })))
        else {
          shown.delete(job.id)
          sse.sendText(`<tr id="${jobRowId(job.id)}" hx-swap-oob="delete"></tr>`)
        }
      } else if (visible) {
        shown.add(job.id)
        sse.sendText(renderFragmentSync(JobRow({ job, oob: 'afterbegin target:#job-rows strip:false' })))
      }
    },
    // the table closes its stream on this event instead of reopening it (hx-sse:close, compile-jobs.tsx)
    revoked: () => void sse.send(JOB_STREAM_REVOKED_EVENT, {}),
  }
}

/**
 * Streams the caller's jobs matching `filter` until the client goes away, the server shuts down,
 * or the credential the stream was opened with no longer holds (`stillAuthorized`, asked as soon
 * as the change feed says one of the user's credentials ended, and every `credentialRecheckMs`):
 * then its last message says so (`projector.revoked`).
 */
export async function streamJobs(
  ctx: AppContext,
  {
    res,
    user,
    filter,
    feature,
    project,
    stillAuthorized,
  }: {
    res: Response
    user: User
    filter: JobListFilter
    feature: CompileFeature
    project: (sse: SseWriter) => JobStreamProjector
    stillAuthorized: () => Promise<boolean>
  },
): Promise<void> {
  const sse = openSse(res, { keepAliveMs: ctx.sseKeepAliveMs ?? 15_000 })
  const projector = project(sse)
  let revoked = false
  let end: () => void = () => {}
  const ended = new Promise<void>((resolve) => (end = resolve))
  let work = Promise.resolve()
  // Updates and checks run one after another; nothing is sent once the credential is found gone.
  const enqueue = (task: () => Promise<void>) => {
    work = work
      .then(() => (revoked ? undefined : task()))
      .catch((error: unknown) => ctx.logger.warn('job stream update failed', { error: error instanceof Error ? error.message : String(error) }))
  }
  const revoke = () => {
    if (revoked) return
    revoked = true // nothing queued after this is sent
    projector.revoked()
    end()
  }
  // At once when one of the user's sessions or tokens ended, and on a timer (credential-watch.ts).
  const credential = watchCredential(ctx, { userId: user.id, stillLive: stillAuthorized, onEnded: revoke })
  // Once now, in the queue before the first snapshot: a credential that ended between this
  // request's sign-in check and the subscription above announced it to nobody.
  enqueue(async () => {
    if (!(await stillAuthorized())) revoke()
  })
  const snapshot = () => enqueue(async () => projector.snapshot((await feature.service.list({ caller: user, filter })).jobs))
  // Subscribed before the first snapshot: a change in between is sent after it, never lost.
  const unsubscribe = feature.events.subscribe((event) => {
    if (event.type === 'resync') return snapshot()
    if (event.ownerId !== user.id) return
    enqueue(async () => {
      const job = await feature.service.get({ caller: user, id: event.jobId })
      if (job) projector.changed(job, matches(filter, job))
    })
  })
  snapshot()
  const unwatch = whenClientGone(res, end)
  ctx.shutdownSignal.addEventListener('abort', end, { once: true })
  if (ctx.shutdownSignal.aborted) end()
  await ended
  credential.release()
  unwatch()
  ctx.shutdownSignal.removeEventListener('abort', end)
  unsubscribe()
  await work
  sse.close()
}
