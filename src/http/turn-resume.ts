// A turn's stream picked up again, on any instance (GET …/turns/:id/events with Last-Event-ID):
// the caller's own turn only; what was stored after the client's last event is replayed, then the
// rest follows live until the terminal event (src/effects/turn/turn-follower.ts). The stream ends
// early, without a terminal, when the client leaves, this server shuts down (the client resumes
// elsewhere) or the credential it was opened with ends.
import type { Request, Response } from 'express'
import type { User } from '../effects/auth/users.ts'
import { findOwnTurn, resumePoint } from '../effects/turn/turn-commands.ts'
import { progressEventOf, terminalEventOf } from '../effects/turn/turn-events.ts'
import { followTurn } from '../effects/turn/turn-follower.ts'
import type { AppContext } from './app-context.ts'
import { credentialStillLive } from './authenticate.ts'
import { whenClientGone } from './client-gone.ts'
import { watchCredential } from './credential-watch.ts'
import { badRequest } from './http-errors.ts'
import { openSse, type SseWriter } from './sse.ts'
import type { TurnProjector } from './turn-stream.ts'

/** The number of the last event the client has (Last-Event-ID), 0 without one; anything but a number is refused. */
export function lastEventIdOf(req: Request): number {
  const header = req.get('last-event-id')?.trim()
  if (header === undefined || header === '') return 0
  if (!/^\d{1,9}$/.test(header)) throw badRequest('Last-Event-ID must be the id of an event of this turn (a whole number)')
  return Number(header)
}

export async function resumeTurnStream(
  ctx: AppContext,
  {
    req,
    res,
    user,
    turnId,
    project,
    replayFromStart = false,
  }: {
    req: Request
    res: Response
    user: User
    turnId: string
    project: (sse: SseWriter, turn: { readonly turnId: string; readonly after: number }) => TurnProjector
    /** The projector is given every stored event from the first (it rebuilds its state silently up to Last-Event-ID). */
    replayFromStart?: boolean
  },
): Promise<void> {
  const after = lastEventIdOf(req)
  const turn = await findOwnTurn(ctx.db, { caller: user, turnId })
  if ((await resumePoint(ctx.db, { turnId, status: turn.status, after })) === 'nothing-missed') {
    res.status(204).end() // the client has the terminal event already (EventSource stops reconnecting on 204)
    return
  }
  res.set('X-Turn-Id', turnId)
  const sse = openSse(res, { keepAliveMs: ctx.sseKeepAliveMs ?? 15_000 })
  const projector = project(sse, { turnId, after })
  const stop = new AbortController()
  const end = () => stop.abort()
  const unwatch = whenClientGone(res, end)
  ctx.shutdownSignal.addEventListener('abort', end, { once: true })
  if (ctx.shutdownSignal.aborted) end()
  const credential = watchCredential(ctx, { userId: user.id, stillLive: () => credentialStillLive(ctx, req), onEnded: end })
  try {
    await followTurn({
      db: ctx.db,
      feed: ctx.feed,
      turns: ctx.turns,
      turnId,
      after: replayFromStart ? 0 : after,
      signal: stop.signal,
      logger: ctx.logger,
      onCaughtUp: () => projector.caughtUp?.(),
      onEvents: (events) => {
        for (const numbered of events) {
          const terminal = terminalEventOf(numbered)
          if (terminal) projector.finish(terminal, { usage: terminal.type === 'done' ? terminal.usage : undefined }, numbered)
          else {
            const event = progressEventOf(numbered)
            if (event) projector.progress(event, numbered)
          }
        }
      },
    })
  } finally {
    unwatch()
    credential.release()
    ctx.shutdownSignal.removeEventListener('abort', end)
    sse.close()
  }
}
