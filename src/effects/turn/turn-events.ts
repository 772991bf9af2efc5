// A turn's events as every face and every instance sees them: numbered from 1 (the SSE `id:`),
// named as on the wire (docs/api.md) and carried as their JSON data — and as the JSON stream's own
// SSE frame, made once: the live JSON stream writes it, the store (turn-event-store.ts) keeps it,
// and a replay on another instance writes it again as it is. Pure.
import type { ChatMessage, TurnEmitted, TurnOutput } from '../../machines/index.ts'
import type { TerminalFields } from '../../client/wire-events.ts'

export type TurnProgressEvent = Exclude<TurnEmitted, { type: 'done' } | { type: 'error' }>
export type TerminalEmitted = Extract<TurnEmitted, { type: 'done' } | { type: 'error' }>

/** The one terminal event of a turn: the runtime's done/error plus the turn id and the history to carry on (src/client/wire-events.ts). */
export type TurnTerminal = TerminalEmitted & TerminalFields

/** One event of a turn: its number (the SSE id), its SSE name, its data as one line of JSON, and its SSE frame. */
export interface NumberedEvent {
  readonly seq: number
  readonly name: string
  readonly json: string
  /** `id: <seq>\nevent: <name>\ndata: <json>\n\n`, as the JSON stream sends it. */
  readonly frame: string
}

export function numberedEvent({ seq, name, json }: Pick<NumberedEvent, 'seq' | 'name' | 'json'>): NumberedEvent {
  return { seq, name, json, frame: `id: ${seq}\nevent: ${name}\ndata: ${json}\n\n` }
}

/** The data of a progress event as the JSON stream sends it: the event without its `type`. */
export function progressJson(event: TurnProgressEvent): string {
  // The per-delta path: the same bytes as JSON.stringify({ text }), without the object.
  if (event.type === 'delta' || event.type === 'thinking') return `{"text":${JSON.stringify(event.text)}}`
  const { type: _type, ...data } = event
  return JSON.stringify(data)
}

export function terminalJson(terminal: TurnTerminal): string {
  const { type: _type, ...data } = terminal
  return JSON.stringify(data)
}

/** A progress event back from its name and data (a replay); undefined for a name that is not one. */
export function progressEventOf({ name, json }: Pick<NumberedEvent, 'name' | 'json'>): TurnProgressEvent | undefined {
  if (name === 'done' || name === 'error') return undefined
  return { ...(JSON.parse(json) as object), type: name } as TurnProgressEvent
}

export function terminalEventOf({ name, json }: Pick<NumberedEvent, 'name' | 'json'>): TurnTerminal | undefined {
  if (name !== 'done' && name !== 'error') return undefined
  return { ...(JSON.parse(json) as object), type: name } as TurnTerminal
}

export const isTerminalName = (name: string): boolean => name === 'done' || name === 'error'

/**
 * Stored events back from their frames (as `numberedEvent` made them, concatenated: JSON never
 * holds a raw newline, so a frame is three lines and a blank one).
 */
export function parseStoredEvents(text: string): NumberedEvent[] {
  const events: NumberedEvent[] = []
  let at = 0
  while (at < text.length) {
    const end = text.indexOf('\n\n', at)
    if (end < 0) break
    const frame = text.slice(at, end + 2)
    const eventAt = frame.indexOf('\nevent: ')
    const dataAt = frame.indexOf('\ndata: ', eventAt + 1)
    events.push({ seq: Number(frame.slice(4, eventAt)), name: frame.slice(eventAt + 8, dataAt), json: frame.slice(dataAt + 7, -2), frame })
    at = end + 2
  }
  return events
}

/** The terminal runtime event of a turn: the one the machine emitted, else one from its output (or a crash). */
export function terminalOf({ held, output }: { held: TerminalEmitted | undefined; output: TurnOutput | undefined }): TerminalEmitted {
  if (held) return held
  if (output?.status === 'done') return { type: 'done', finish_reason: output.finishReason ?? 'stop', usage: output.usage }
  return { type: 'error', code: output?.error?.code ?? 'internal_error', message: output?.error?.message ?? 'the turn ended without a result' }
}

export function withTurnFields(terminal: TerminalEmitted, { turnId, history }: { turnId: string; history?: ReadonlyArray<ChatMessage> | undefined }): TurnTerminal {
  return { ...terminal, turn_id: turnId, ...(history ? { history } : {}) }
}

/** The error code of a turn whose instance died (or lost its lease) while it ran. */
export const TURN_INTERRUPTED = 'turn.interrupted'

/**
 * The most events a turn numbers (its terminal comes after them). Events reach clients before they
 * are stored, so when an instance dies its clients may hold numbers the store never saw; the
 * terminal another instance writes for such a turn is numbered past every number it could have
 * given (`INTERRUPTED_TERMINAL_SEQ`), so a client resuming after any of them still gets it — and a
 * client that got it resumes to nothing (204). No real turn comes near: 600 s at 100 deltas a second is 60,000.
 */
export const MAX_TURN_EVENTS = 500_000
export const INTERRUPTED_TERMINAL_SEQ = MAX_TURN_EVENTS + 2

/**
 * The text a stored turn had streamed in its last model step (the deltas after its last `context`
 * or `tool` event): what `partial` means on every other error.
 */
export function partialTextOf(events: ReadonlyArray<Pick<NumberedEvent, 'name' | 'json'>>): string {
  let text = ''
  for (const event of events) {
    if (event.name === 'context' || event.name === 'tool') text = ''
    else if (event.name === 'delta') text += (JSON.parse(event.json) as { text: string }).text
  }
  return text
}
