// The SSE events of POST /api/v1/knowledge-agent/stream (docs/api.md), derived from the turn's
// runtime events — the server writes each emitted event under its `type` as the event name with
// the rest as data, and adds the turn id and the history to the terminal one. Defined once here
// for the server's projection and the client alike.
import type { ChatMessage, TurnEmitted } from '../machines/index.ts'

export type WireEventName = TurnEmitted['type']

/** The data of one event: the runtime event without its `type`. */
export type WirePayload<N extends WireEventName> = Omit<Extract<TurnEmitted, { readonly type: N }>, 'type'>

export type DeltaEvent = WirePayload<'delta'>
export type ThinkingEvent = WirePayload<'thinking'>
export type ToolEvent = WirePayload<'tool'>
export type ContextEvent = WirePayload<'context'>
export type WarningEvent = WirePayload<'warning'>

/** What the terminal event adds: the turn's id and the history to send with the next message. */
export interface TerminalFields {
  readonly turn_id: string
  readonly history?: ReadonlyArray<ChatMessage> | undefined
}
export type DoneEvent = WirePayload<'done'> & TerminalFields
export type ErrorEvent = WirePayload<'error'> & Partial<TerminalFields>

export type WireEvent =
  | { readonly event: 'delta'; readonly data: DeltaEvent }
  | { readonly event: 'thinking'; readonly data: ThinkingEvent }
  | { readonly event: 'tool'; readonly data: ToolEvent }
  | { readonly event: 'context'; readonly data: ContextEvent }
  | { readonly event: 'warning'; readonly data: WarningEvent }
  | { readonly event: 'done'; readonly data: DoneEvent }
  | { readonly event: 'error'; readonly data: ErrorEvent }

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

// Type predicates over the required fields: a checked narrowing, not a blind cast.
const isText = (data: Record<string, unknown>): data is Record<string, unknown> & DeltaEvent => typeof data.text === 'string'
const isTool = (data: Record<string, unknown>): data is Record<string, unknown> & ToolEvent =>
  typeof data.call_id === 'string' && typeof data.name === 'string' && (data.phase === 'start' || data.phase === 'progress' || data.phase === 'end')
const isContext = (data: Record<string, unknown>): data is Record<string, unknown> & ContextEvent =>
  typeof data.used === 'number' && typeof data.limit === 'number' && typeof data.window === 'number'
const isWarning = (data: Record<string, unknown>): data is Record<string, unknown> & WarningEvent => typeof data.message === 'string'
const isDone = (data: Record<string, unknown>): data is Record<string, unknown> & DoneEvent =>
  typeof data.finish_reason === 'string' && typeof data.turn_id === 'string'
const isError = (data: Record<string, unknown>): data is Record<string, unknown> & ErrorEvent => typeof data.code === 'string' && typeof data.message === 'string'

/**
 * Reads one event from the wire: its required fields are checked, so the result can be trusted
 * by type. `undefined` for an event the client does not know (new ones may be added); throws for
 * a known event whose data is malformed.
 */
export function readWireEvent(name: string, json: string): WireEvent | undefined {
  const data: unknown = JSON.parse(json)
  if (!isRecord(data)) throw new Error(`${name} event data is not an object`)
  const malformed = new Error(`malformed ${name} event`)
  switch (name) {
    case 'delta':
    case 'thinking':
      if (isText(data)) return { event: name, data }
      throw malformed
    case 'tool':
      if (isTool(data)) return { event: 'tool', data }
      throw malformed
    case 'context':
      if (isContext(data)) return { event: 'context', data }
      throw malformed
    case 'warning':
      if (isWarning(data)) return { event: 'warning', data }
      throw malformed
    case 'done':
      if (isDone(data)) return { event: 'done', data }
      throw malformed
    case 'error':
      if (isError(data)) return { event: 'error', data }
      throw malformed
    default:
      return undefined
  }
}
