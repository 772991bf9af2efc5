// A request refused before its body was read (auth, CSRF, a bad part, a file over the limit):
// the answer goes out at once, and what the client is still sending is read and dropped for a
// little while, so it sees the answer rather than a connection reset. Past `maxBytes` nothing more
// is read: the sender is held by TCP, still able to read the answer, until `ms` have passed; then
// the connection is closed. (Closing it at `maxBytes` reset a sender still writing, whose write
// then failed before it had read the answer: it saw ECONNRESET instead of the 413.) Memory stays
// flat either way: nothing is kept.
import type { Request } from 'express'

export interface DiscardLimits {
  readonly maxBytes: number
  readonly ms: number
}

export const DEFAULT_DISCARD_LIMITS: DiscardLimits = { maxBytes: 8 * 1024 * 1024, ms: 5_000 }

export function discardRestOfBody(req: Request, { maxBytes, ms }: DiscardLimits = DEFAULT_DISCARD_LIMITS): void {
  if (req.complete || req.destroyed) return
  let dropped = 0
  const close = (): void => {
    cleanup()
    req.socket.destroy()
  }
  const onData = (chunk: Buffer): void => {
    dropped += chunk.length
    if (dropped <= maxBytes) return
    // read no more: the sender waits until the timer closes the connection. A parser still piped
    // from the request (body-parser's inflater of a compressed body) would resume it on its next
    // drain: it is cut off, and every chunk that still comes pauses the request again.
    req.unpipe()
    req.pause()
  }
  const timer = setTimeout(close, ms)
  const cleanup = (): void => {
    clearTimeout(timer)
    req.off('data', onData)
    req.off('end', cleanup)
    req.off('close', cleanup)
  }
  req.on('data', onData)
  req.once('end', cleanup)
  req.once('close', cleanup)
  req.resume()
}
