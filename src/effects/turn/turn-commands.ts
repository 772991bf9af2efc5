// What a person may do to one of their turns, from any instance: stop it, and learn whether its
// events can still be replayed. Owner-only: another person's turn is not found, like one that never
// existed. One use case for every face (the JSON API, the page's Stop).
import * as Data from 'effect/Data'
import type { Db, Owner } from '../db/schema.ts'
import type { LiveTurns } from './live-turns.ts'
import { isTurnId, sendTurnControl } from './turn-control.ts'
import { storedRange } from './stored-turn-events.ts'

/** No turn with that id among the caller's. HTTP 404. */
export class TurnNotFound extends Data.TaggedError('TurnNotFound')<{ readonly id: string }> {
  readonly code = 'turn_not_found'
  readonly status = 404
  override get message() {
    return `no turn ${this.id.slice(0, 64)} among yours`
  }
}

/** The events a resume asks for are no longer kept (the turn ended before the retention). HTTP 410. */
export class TurnEventsExpired extends Data.TaggedError('TurnEventsExpired')<{ readonly id: string }> {
  readonly code = 'events_expired'
  readonly status = 410
  override get message() {
    return `the events of turn ${this.id} are no longer kept (turns.eventRetentionSeconds); its outcome was recorded`
  }
}

export type TurnRowStatus = 'running' | 'done' | 'failed' | 'cancelled'

export async function findOwnTurn(db: Db, { caller, turnId }: { caller: Owner; turnId: string }): Promise<{ id: string; status: TurnRowStatus }> {
  if (!isTurnId(turnId)) throw new TurnNotFound({ id: turnId })
  const row = await db.selectFrom('turns').select(['id', 'status']).where('id', '=', turnId).where('user_id', '=', caller.id).executeTakeFirst()
  if (row === undefined) throw new TurnNotFound({ id: turnId })
  return row
}

/**
 * Stops the caller's turn wherever it runs: here at once, elsewhere by NOTIFY (its instance stops
 * it through the machine's cancel path and its stream ends with the terminal event). Idempotent: a
 * turn already over reports how it ended.
 */
export async function stopTurn({ db, turns, caller, turnId }: { db: Db; turns: LiveTurns; caller: Owner; turnId: string }): Promise<{ status: 'stopping' | Exclude<TurnRowStatus, 'running'> }> {
  const turn = await findOwnTurn(db, { caller, turnId })
  if (turn.status !== 'running') return { status: turn.status }
  const local = turns.get(turnId)
  if (local) local.stop('user')
  else await sendTurnControl(db, { kind: 'stop', turnId })
  return { status: 'stopping' }
}

/**
 * Where a resume after event `after` starts: `replay` (follow the stored events), `nothing-missed`
 * (the terminal was already received) — or TurnEventsExpired when what it missed is gone.
 */
export async function resumePoint(db: Db, { turnId, status, after }: { turnId: string; status: TurnRowStatus; after: number }): Promise<'replay' | 'nothing-missed'> {
  const range = await storedRange(db, turnId)
  if (range === undefined) {
    if (status === 'running') return 'replay' // nothing stored yet
    throw new TurnEventsExpired({ id: turnId })
  }
  if (range.first > after + 1) throw new TurnEventsExpired({ id: turnId })
  if (range.terminal !== undefined && after >= range.terminal) return 'nothing-missed'
  return 'replay'
}
