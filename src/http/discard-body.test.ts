// A refused request whose sender keeps sending: it reads the answer, and the connection stays open
// past the byte limit (the server only stops reading) until the time limit closes it. Closing it
// at the byte limit reset a sender still writing: its write failed before it had read the answer
// (ECONNRESET in place of the 413, seen in CI).
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { Request } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { postNeverEnding } from '../../tests/support/raw-http.ts'
import { discardRestOfBody } from './discard-body.ts'

const MAX_BYTES = 1024

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

describe('discardRestOfBody', () => {
  it('stops reading past its byte limit but keeps the connection until its time limit, so a sender still writing reads the answer', async () => {
    const seen: { openPastLimit?: boolean; closed?: Promise<void> } = {}
    server = createServer((req: IncomingMessage, res) => {
      res.writeHead(413, { 'content-type': 'text/plain' }).end('too large')
      discardRestOfBody(req as Request, { maxBytes: MAX_BYTES, ms: 300 })
      seen.closed = new Promise((resolve) => req.socket.once('close', () => resolve()))
      let received = 0
      req.on('data', (chunk: Buffer) => {
        received += chunk.length
        // the first chunk alone passes the limit: by now the discard has seen it too (its listener came first)
        if (received > MAX_BYTES && seen.openPastLimit === undefined) seen.openPastLimit = !req.socket.destroyed
      })
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const res = await postNeverEnding(`http://127.0.0.1:${port}/`, { headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, head: Buffer.alloc(64 * 1024, 0x61) })
    expect([res.status, res.body]).toEqual([413, 'too large'])
    expect(seen.openPastLimit).toBe(true)
    await seen.closed // and then it is closed (by the client that had its answer, or by the time limit)
  })

  it('closes the connection of a sender that never stops when its time limit passes', async () => {
    const closed = new Promise<void>((resolve) => {
      server = createServer((req: IncomingMessage) => {
        // no answer and a sender that never stops: only the server's timer can close this one
        discardRestOfBody(req as Request, { maxBytes: MAX_BYTES, ms: 200 })
        req.socket.once('close', () => resolve())
      })
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server!.address() as AddressInfo
    const sending = expect(postNeverEnding(`http://127.0.0.1:${port}/`, { headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, head: Buffer.alloc(64 * 1024, 0x61) })).rejects.toThrow(/ECONNRESET|EPIPE/)
    await closed
    await sending // its connection was closed under it
  })

  it('reads no more past its byte limit even while a parser is still piped from the request (a pipe resumes it on every drain)', async () => {
    const received = new Promise<number>((resolve) => {
      server = createServer((req: IncomingMessage) => {
        // a parser that takes every chunk a moment later, as an inflater does: it pauses the request, and resumes it on drain
        req.pipe(new Writable({ highWaterMark: 1, write: (_chunk, _encoding, done) => void setImmediate(done) }))
        discardRestOfBody(req as Request, { maxBytes: MAX_BYTES, ms: 300 })
        let bytes = 0
        req.on('data', (chunk: Buffer) => (bytes += chunk.length))
        req.socket.once('close', () => resolve(bytes))
      })
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server!.address() as AddressInfo
    const sending = expect(postNeverEnding(`http://127.0.0.1:${port}/`, { headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, head: Buffer.alloc(64 * 1024, 0x61) })).rejects.toThrow(/ECONNRESET|EPIPE/)
    // a sender on loopback writes hundreds of MB in the 300 ms: what was read is the limit and what was in flight
    expect(await received).toBeLessThan(1024 * 1024)
    await sending
  })
})
