// htmx 4.0.1's SSE parser splits each chunk on /\r\n|\r|\n/ on its own, so a CRLF whose CR ends
// one network chunk and whose LF starts the next counts as two line endings: the blank line
// dispatches the event early, without its data (found by the browser test that splits a CRLF
// stream between CR and LF). The page therefore hands htmx a body with every line ending as LF:
// a CR becomes LF at once, and an LF right after a CR, even in the next chunk, is dropped.
// Working on bytes is safe: 0x0D and 0x0A never occur inside a multi-byte UTF-8 sequence.
const CR = 0x0d
const LF = 0x0a

export function lineEndingNormalizer() {
  let afterCr = false
  return new TransformStream({
    transform(chunk, controller) {
      const out = new Uint8Array(chunk.length)
      let length = 0
      for (const byte of chunk) {
        if (byte === LF && afterCr) {
          afterCr = false
          continue
        }
        afterCr = byte === CR
        out[length++] = afterCr ? LF : byte
      }
      if (length > 0) controller.enqueue(out.subarray(0, length))
    },
  })
}

/** fetch(), with an event-stream body's line endings normalised to LF. */
export async function fetchEventStream(input, init) {
  const response = await fetch(input, init)
  const type = response.headers.get('content-type') ?? ''
  if (!response.body || !type.includes('text/event-stream')) return response
  return new Response(response.body.pipeThrough(lineEndingNormalizer()), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
