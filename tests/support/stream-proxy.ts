// A reverse proxy in front of the test server that can reshape the chat's SSE body on its way
// to the browser: re-chunk it at chosen byte offsets (inside a UTF-8 code point, between CR and
// LF), turn LF into CRLF, deliver several events in one chunk, or end it before the terminal
// event; cut the streams under way (a network blip); refuse the requests under a path with a
// status. Everything else passes through, streaming, and a browser disconnect is passed on.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type StreamReshaper = (body: Buffer) => ReadonlyArray<Uint8Array>

export interface StreamProxy {
  readonly url: string
  /** Applies to the next POST /workspace/chat/stream responses (undefined = pass through). */
  readonly reshape: (reshaper: StreamReshaper | undefined, options?: { delayMs?: number }) => void
  /** Destroys the connections of the event streams under way (the browser sees the network fail mid-stream); resolves to how many. */
  readonly cut: () => number
  /** Answers the requests whose path starts with `prefix` with `status` instead of passing them on (undefined: pass everything). */
  readonly refuse: (refusal: { readonly prefix: string; readonly status: number } | undefined) => void
  readonly close: () => Promise<void>
}

export async function startStreamProxy(targetUrl: string): Promise<StreamProxy> {
  const target = new URL(targetUrl)
  let reshaper: StreamReshaper | undefined
  let refusal: { readonly prefix: string; readonly status: number } | undefined
  let delayMs = 15
  const sockets = new Set<Socket>()
  const streaming = new Set<ServerResponse>()
  const server: Server = createServer((req, res) => {
    if (refusal && req.url?.startsWith(refusal.prefix)) {
      req.resume()
      res.writeHead(refusal.status, { 'content-type': 'text/html; charset=utf-8' }).end('<p>refused by the test proxy</p>')
      return
    }
    forward({ req, res, target, reshaper: req.url?.startsWith('/workspace/chat/stream') ? reshaper : undefined, delayMs, streaming })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reshape: (next, options = {}) => {
      reshaper = next
      delayMs = options.delayMs ?? 15
    },
    cut: () => {
      const cut = streaming.size
      for (const res of streaming) res.socket?.destroy()
      streaming.clear()
      return cut
    },
    refuse: (next) => {
      refusal = next
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function forward({
  req,
  res,
  target,
  reshaper,
  delayMs,
  streaming,
}: {
  req: IncomingMessage
  res: ServerResponse
  target: URL
  reshaper: StreamReshaper | undefined
  delayMs: number
  streaming: Set<ServerResponse>
}) {
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
    (answer) => {
      const headers = { ...answer.headers }
      if (reshaper) delete headers['content-length']
      res.writeHead(answer.statusCode ?? 502, headers)
      res.flushHeaders()
      if (String(headers['content-type'] ?? '').includes('text/event-stream')) {
        streaming.add(res)
        res.on('close', () => streaming.delete(res))
      }
      if (!reshaper) {
        answer.pipe(res)
        return
      }
      const parts: Buffer[] = []
      answer.on('data', (part: Buffer) => parts.push(part))
      answer.on('end', () => void writeSlowly(res, reshaper(Buffer.concat(parts)), delayMs))
    },
  )
  upstream.on('error', () => res.destroy())
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy() // the browser went away: so does the proxy's request
  })
  req.pipe(upstream)
}

async function writeSlowly(res: ServerResponse, chunks: ReadonlyArray<Uint8Array>, delayMs: number): Promise<void> {
  res.socket?.setNoDelay(true)
  for (const chunk of chunks) {
    if (res.destroyed) return
    await new Promise<void>((resolve) => res.write(chunk, () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, delayMs))
  }
  res.end()
}

/** Byte offsets just after the first byte of every multi-byte UTF-8 sequence (a split inside each code point). */
export function insideCodePoints(body: Buffer): number[] {
  const offsets: number[] = []
  for (let i = 0; i < body.length; i++) if (body[i]! >= 0xc0) offsets.push(i + 1)
  return offsets
}

/** Byte offsets between each CR and its LF. */
export function betweenCrAndLf(body: Buffer): number[] {
  const offsets: number[] = []
  for (let i = 0; i + 1 < body.length; i++) if (body[i] === 0x0d && body[i + 1] === 0x0a) offsets.push(i + 1)
  return offsets
}

export const toCrlf = (body: Buffer) => Buffer.from(body.toString('utf8').replace(/\n/g, '\r\n'), 'utf8')

/** The body up to (not including) its terminal `event: done` / `event: error` frame. */
export function withoutTerminal(body: Buffer): Buffer {
  const text = body.toString('utf8')
  const at = Math.max(text.lastIndexOf('event: done\n'), text.lastIndexOf('event: error\n'))
  if (at < 0) throw new Error('the stream had no terminal event to cut')
  return Buffer.from(text.slice(0, at), 'utf8')
}
