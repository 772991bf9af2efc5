// A request body over its route's limit is answered 413 as soon as the limit is passed; what the
// client still sends is read and dropped for a little while, then the connection is closed
// (discard-body.ts). express's parsers (body-parser) refuse such a body too,
// but only after reading all of it ("read off entire request"): a body that never ends held a
// connection and a share of the CPU until Node's request timeout (300 s), and its sender waited
// that long for the 413. Here the bytes are counted as they arrive (as sent: a compressed body is
// held to the same number), or a Content-Length over the limit is refused before any is read; the
// refusal goes to the route's error handlers like any other error, and the parser's own answer,
// when it comes after, is dropped.
import { json, type RequestHandler, urlencoded } from 'express'
import { discardRestOfBody } from './discard-body.ts'
import { HttpError } from './http-errors.ts'

/** `'16kb'`, `'2mb'` → bytes (the forms the routes use; anything else is a programming error). */
function limitBytes(limit: string): number {
  const match = /^(\d+)(kb|mb)$/.exec(limit)
  if (!match) throw new Error(`body limit "${limit}": write it as <n>kb or <n>mb`)
  return Number(match[1]) * (match[2] === 'kb' ? 1024 : 1024 * 1024)
}

const sizeText = (bytes: number): string => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB` : `${bytes / 1024} KB`)

const bodyTooLarge = (bytes: number): HttpError =>
  new HttpError(413, 'payload_too_large', `the request body is over ${sizeText(bytes)}`)

/** `parser` (an express body parser for `type`), with `limit` held as the body arrives. */
function bounded(parser: RequestHandler, { limit, type }: { limit: string; type: string }): RequestHandler {
  const max = limitBytes(limit)
  return (req, res, next) => {
    const declared = req.headers['content-length']
    const chunked = req.headers['transfer-encoding'] !== undefined
    // Node reads no more than a declared length: only a longer one, or a chunked body, is held here.
    if ((!chunked && Number(declared ?? 0) <= max) || !req.is(type)) return parser(req, res, next)
    if (!chunked) {
      discardRestOfBody(req)
      return next(bodyTooLarge(max))
    }
    let settled = false
    const settle = (error?: unknown): void => {
      if (settled) return
      settled = true
      req.off('data', count)
      next(error)
    }
    let received = 0
    const count = (chunk: Buffer): void => {
      received += chunk.length
      if (received <= max) return
      discardRestOfBody(req)
      settle(bodyTooLarge(max))
    }
    req.on('data', count) // before the parser's own listener: over the limit, this answer goes first
    parser(req, res, settle)
  }
}

/** express's `json()` (`strict`, the default: only an object or an array), with the limit held as the body arrives. */
export function limitedJson({ limit, strict }: { limit: string; strict?: boolean }): RequestHandler {
  return bounded(json({ limit, strict }), { limit, type: 'application/json' })
}

/** express's `urlencoded()` (flat fields), with the limit held as the body arrives. */
export function formBody({ limit, parameterLimit }: { limit: string; parameterLimit?: number }): RequestHandler {
  return bounded(urlencoded({ extended: false, limit, ...(parameterLimit === undefined ? {} : { parameterLimit }) }), { limit, type: 'application/x-www-form-urlencoded' })
}
