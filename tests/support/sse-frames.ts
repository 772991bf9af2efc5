// Reads a whole SSE response body into events with the project's decoder (for HTTP tests).
import { decodeSseStream } from '../../src/sse/sse-decoder.ts'

export interface ParsedEvent {
  readonly event: string
  readonly data: Record<string, unknown>
  /** The event's `id:` (a turn's event number; "" when the stream sends none). */
  readonly id: string
}

/** `onEvent` and `onComment` see each one as it arrives, so a test can act in the middle of a stream. */
export async function readSseEvents(
  response: Response,
  { onEvent, onComment }: { readonly onEvent?: (event: ParsedEvent) => void; readonly onComment?: (text: string) => void } = {},
): Promise<{ events: ParsedEvent[]; comments: string[] }> {
  const comments: string[] = []
  const events: ParsedEvent[] = []
  const decoded = decodeSseStream(response.body!, {
    onComment: (text) => {
      comments.push(text)
      onComment?.(text)
    },
  })
  for await (const event of decoded) {
    const parsed = { event: event.event, data: JSON.parse(event.data) as Record<string, unknown>, id: event.id }
    events.push(parsed)
    onEvent?.(parsed)
  }
  return { events, comments }
}

export const terminalEvents = (events: ReadonlyArray<ParsedEvent>) => events.filter((e) => e.event === 'done' || e.event === 'error')

/** Reads events until `until` holds for one (included), then stops reading: the connection closes, as a client that drops does. */
export async function readSseEventsUntil(response: Response, until: (event: ParsedEvent) => boolean): Promise<ParsedEvent[]> {
  const events: ParsedEvent[] = []
  for await (const event of decodeSseStream(response.body!)) {
    const parsed = { event: event.event, data: JSON.parse(event.data) as Record<string, unknown>, id: event.id }
    events.push(parsed)
    if (until(parsed)) break
  }
  return events
}

/** The concatenated text of the delta events. */
export const deltaText = (events: ReadonlyArray<ParsedEvent>) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')
