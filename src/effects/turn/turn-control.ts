// Commands to a running turn from any instance, by NOTIFY on one channel that every server process
// LISTENs on (its change feed): `stop` ends the turn through the machine's cancel path wherever it
// runs; `watch` / `unwatch` say that a client follows it from another instance (a resumed stream),
// so its instance keeps it running and announces its stored events (turn-event-store.ts).
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'

export const TURN_CONTROL_CHANNEL = 'knowagent_turn_control'

export type TurnControl =
  | { readonly kind: 'stop'; readonly turnId: string }
  | { readonly kind: 'watch' | 'unwatch'; readonly turnId: string; readonly watcher: string }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const isTurnId = (value: string): boolean => UUID.test(value)

export function formatTurnControl(control: TurnControl): string {
  return control.kind === 'stop' ? `stop ${control.turnId}` : `${control.kind} ${control.turnId} ${control.watcher}`
}

/** A payload back to its command; undefined for anything else (never trusted further than its shape). */
export function parseTurnControl(payload: string): TurnControl | undefined {
  const [kind, turnId, watcher, ...rest] = payload.split(' ')
  if (turnId === undefined || !isTurnId(turnId) || rest.length > 0) return undefined
  if (kind === 'stop' && watcher === undefined) return { kind, turnId }
  if ((kind === 'watch' || kind === 'unwatch') && watcher !== undefined && isTurnId(watcher)) return { kind, turnId, watcher }
  return undefined
}

export async function sendTurnControl(db: Db, control: TurnControl): Promise<void> {
  await sql`select pg_notify(${TURN_CONTROL_CHANNEL}, ${formatTurnControl(control)})`.execute(db)
}
