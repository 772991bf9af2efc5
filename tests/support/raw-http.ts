// Requests that fetch cannot make: a multipart body built byte by byte (truncated, hostile
// names, odd field names), and a body that never ends, where the test waits for the response
// while it is still sending.
import { request, type IncomingHttpHeaders } from 'node:http'

export const BOUNDARY = 'knowagent-test-boundary'

export type Part =
  | { readonly field: string; readonly value: string }
  | { readonly field: string; readonly filename: string; readonly content: string | Uint8Array; readonly type?: string }

/** One part's headers and content, without the closing boundary. */
export const partBytes = (part: Part): Buffer => {
  if ('value' in part) {
    return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.field}"\r\n\r\n${part.value}\r\n`, 'utf8')
  }
  const head =
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.field}"; filename="${part.filename}"\r\n` +
    `Content-Type: ${part.type ?? 'application/octet-stream'}\r\n\r\n`
  return Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(part.content), Buffer.from('\r\n')])
}

export const multipartBody = (parts: ReadonlyArray<Part>): Buffer => Buffer.concat([...parts.map(partBytes), Buffer.from(`--${BOUNDARY}--\r\n`)])

export const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`

export interface RawResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/**
 * Sends `head` and then keeps sending filler forever (a body that never ends); resolves with the
 * response as soon as it arrives, then stops sending and closes the connection.
 */
export function postNeverEnding(url: string, { headers, head }: { headers: Record<string, string>; head: Uint8Array }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'POST', headers })
    let stopped = false
    const filler = Buffer.alloc(16 * 1024, 0x61)
    const pump = (): void => {
      while (!stopped && req.write(filler));
      if (!stopped) req.once('drain', pump)
    }
    req.on('response', (res) => {
      stopped = true
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      const done = (): void => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') })
        req.destroy()
      }
      res.on('end', done)
      res.on('error', done) // the server may close the connection right after the answer
    })
    req.on('error', (error) => {
      if (!stopped) reject(error)
    })
    req.write(head)
    pump()
  })
}

/** Sends `body` and ends the request; resolves with the response (a plain request, for byte-exact bodies). */
export function postRaw(url: string, { headers, body }: { headers: Record<string, string>; body: Uint8Array }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'POST', headers: { 'content-length': String(body.length), ...headers } })
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}
