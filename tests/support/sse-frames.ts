// Reads a whole SSE response body into events with the project's decoder (for HTTP tests).
import { decodeSseStream } from '../../src/sse/sse-decoder.ts'

export interface ParsedEvent {
  readonly event: string
  readonly data: Record<string, unknown>
}

export async function readSseEvents(response: Response): Promise<{ events: ParsedEvent[]; comments: string[] }> {
  const comments: string[] = []
  const events: ParsedEvent[] = []
  for await (const event of decodeSseStream(response.body!, { onComment: (text) => comments.push(text) })) {
    events.push({ event: event.event, data: JSON.parse(event.data) as Record<string, unknown> })
  }
  return { events, comments }
}

export const terminalEvents = (events: ReadonlyArray<ParsedEvent>) => events.filter((e) => e.event === 'done' || e.event === 'error')
