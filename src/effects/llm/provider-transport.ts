// The HTTP leg of a provider call, on `node:http` / `node:https` with keep-alive agents: the
// body arrives as Node `Buffer` chunks through a 'data' listener — no WHATWG stream reader, no
// promise per chunk (docs/performance.md). Only transport lives here; what the bytes mean is
// openai-client.ts's business.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

export type ProviderAgent = HttpAgent | HttpsAgent

/**
 * An idle pooled socket is closed after this long (undici, behind fetch, does the same): a
 * provider or load balancer may drop an idle connection silently, and the next request on it
 * would fail. A shorter `Keep-Alive: timeout=` from the provider wins (Node's agent reads it).
 */
const IDLE_SOCKET_MS = 4_000

/** One connection pool per protocol for every model of the process (like fetch's global dispatcher). */
const sharedAgents = {
  http: new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  https: new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
}

export interface ProviderRequest {
  readonly request: ClientRequest
  /** Resolves with the response head; rejects when the connection fails before it. */
  readonly response: Promise<IncomingMessage>
  /** Destroys the request and its socket (the socket never goes back to the pool). */
  readonly abort: () => void
}

/**
 * Sends `POST url` with a complete body (or `GET url` without one); `agent` defaults to the shared
 * pool of the URL's protocol. A redirect is never followed (node:http does not): the caller sees
 * the 3xx, and the key never goes to another address.
 */
export function postToProvider({
  url,
  headers,
  body,
  agent,
  method = 'POST',
}: {
  readonly url: URL
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly agent?: ProviderAgent | undefined
  readonly method?: 'POST' | 'GET' | undefined
}): ProviderRequest {
  const secure = url.protocol === 'https:'
  const send = secure ? httpsRequest : httpRequest
  const request = send(url, {
    method,
    headers: method === 'GET' ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    agent: agent ?? (secure ? sharedAgents.https : sharedAgents.http),
  })
  // Always listened to: a late socket error after the outcome is known must not crash the process.
  let failBeforeResponse: (error: unknown) => void = () => undefined
  request.on('error', (error) => failBeforeResponse(error))
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    failBeforeResponse = reject
    request.once('response', (message) => {
      failBeforeResponse = () => undefined
      resolve(message)
    })
  })
  if (method === 'GET') request.end()
  else request.end(body)
  return {
    request,
    response,
    abort: () => {
      if (request.destroyed) return
      // Destroyed before the agent handed it a socket, a request gives that socket back to the
      // pool (Node's onSocket): wait for it, so the socket is destroyed with the request.
      if (request.socket) request.destroy()
      else request.once('socket', () => request.destroy())
    },
  }
}

/** A response's headers as WHATWG `Headers` (only for the rare paths that need them: errors, retries). */
export function toHeaders(headers: IncomingHttpHeaders): Headers {
  const result = new Headers()
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value) result.append(name, item)
    else result.set(name, value)
  }
  return result
}

/**
 * Reads at most `maxBytes` of a body as UTF-8 text (then stops and releases the connection).
 * Resolves with what was read; undefined when reading failed before any text arrived.
 */
export function readLimitedText({
  response,
  maxBytes,
  onProgress,
  abort,
}: {
  readonly response: IncomingMessage
  readonly maxBytes: number
  readonly onProgress: () => void
  readonly abort: () => void
}): Promise<string | undefined> {
  return new Promise((resolve) => {
    const decoder = new TextDecoder()
    let text = ''
    let bytes = 0
    let settled = false
    const settle = (value: string | undefined): void => {
      if (settled) return
      settled = true
      response.off('data', onData)
      resolve(value)
    }
    const onData = (chunk: Buffer): void => {
      onProgress()
      bytes += chunk.byteLength
      text += decoder.decode(chunk, { stream: true })
      if (bytes >= maxBytes) {
        abort()
        settle(text + decoder.decode())
      }
    }
    response.on('data', onData)
    response.once('end', () => settle(text + decoder.decode()))
    response.on('error', () => settle(text === '' ? undefined : text))
    response.once('close', () => settle(response.complete ? text + decoder.decode() : text === '' ? undefined : text))
  })
}

/** Names the failure by its error code only: Node's messages include host and port. */
export function describeConnectionFailure(cause: unknown): string {
  const code = findErrorCode(cause)
  return code === undefined ? 'could not reach the provider' : `could not reach the provider (${code})`
}

function findErrorCode(cause: unknown): string | undefined {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}
