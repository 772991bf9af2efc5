// Reads a whole SSE response body into events with the project's decoder (for HTTP tests).
import { decodeSseStream } from '../../src/effects/llm/sse-decoder.ts'

export interface ParsedEvent {
  readonly event: string
  readonly data: Record<string, unknown>
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
    const parsed = { event: event.event, data: JSON.parse(event.data) as Record<string, unknown> }
    events.push(parsed)
    onEvent?.(parsed)
  }
  return { events, comments }
}

export const terminalEvents = (events: ReadonlyArray<ParsedEvent>) => events.filter((e) => e.event === 'done' || e.event === 'error')
