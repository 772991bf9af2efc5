// /mcp: the workspace as a Model Context Protocol server (docs/mcp.md), over the protocol's
// Streamable HTTP transport from the official SDK, stateless: each POST (and each GET, a
// connection's stream of announcements) gets its own SDK server and transport, so any instance
// behind a load balancer answers any request, and a tool that streams answers as SSE. Auth is the API's bearer token only (a browser session is refused);
// an `Origin` other than the server's own is refused (DNS rebinding, as the protocol requires).
// The initialize response names the client connection (`Mcp-Session-Id`, random, no state kept)
// so that a later `notifications/cancelled` names its request unambiguously, on any instance.
// Every failure before the SDK answers is a JSON-RPC error with our code in `error.data.code`.
import { Router, type ErrorRequestHandler, type Request, type RequestHandler } from 'express'
import { randomUUID } from 'node:crypto'
import type { AppContext } from './app-context.ts'
import { credentialStillLive } from './authenticate.ts'
import { discardRestOfBody } from './discard-body.ts'
import { describeError } from './error-handler.ts'
import { HttpError } from './http-errors.ts'
import { holdsNul, NUL_MESSAGE } from './json-body.ts'
import type { McpCaller, McpFace } from './mcp-server.ts'

export const MCP_PATH = '/mcp'
/** The largest request body: far above any tool's arguments (a kb_chat question is at most 8,000 characters). */
export const MCP_MAX_BODY_BYTES = 256 * 1024
/** Messages in one JSON-RPC batch (the SDK's own bound is 100; each may start a tool call). */
export const MCP_MAX_BATCH = 16
const SESSION_ID = /^[\x21-\x7e]{1,128}$/

/** JSON-RPC's error codes for a refusal before the SDK sees the request. */
const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600
const SERVER_ERROR = -32000

/** A JSON-RPC error body for a refusal before the SDK: -32700 for JSON that does not parse, -32600 for a bad request, -32000 otherwise. */
function jsonRpcError(status: number, code: string, message: string) {
  const rpcCode = code === 'invalid_json' ? PARSE_ERROR : status === 400 || status === 413 ? INVALID_REQUEST : SERVER_ERROR
  return { jsonrpc: '2.0' as const, id: null, error: { code: rpcCode, message, data: { code } } }
}

/** The API's bearer token, nothing else: a cookie would let any page the person visits call the tools. */
const requireBearerToken: RequestHandler = (req, _res, next) => {
  if (req.auth?.via === 'token') return next()
  const message = req.auth
    ? 'a browser session is not accepted on /mcp: send Authorization: Bearer <knowagent API token>'
    : 'send Authorization: Bearer <knowagent API token> (create one with `knowagent token create <login>`)'
  next(new HttpError(401, 'unauthorized', message))
}

/** The request's own origin, as a browser would write it. */
const ownOrigin = (req: Request): string => `${req.protocol}://${req.get('host') ?? ''}`

/** A browser-sent `Origin` must be the server's own (non-browser clients send none). */
const checkOrigin: RequestHandler = (req, _res, next) => {
  const origin = req.get('origin')
  if (origin === undefined || origin === ownOrigin(req)) return next()
  next(new HttpError(403, 'forbidden_origin', `requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not accepted on /mcp`))
}

/**
 * The body as JSON, read here rather than by express's parser: that one answers a body over its
 * limit only after reading it to its end, and one that never ends would never be answered. A body
 * that is not JSON (by its Content-Type) is left unread for the transport to refuse (415).
 */
async function readJsonBody(req: Request): Promise<{ readonly body: unknown } | undefined> {
  if (!/^application\/json\s*(;|$)/i.test(req.get('content-type') ?? '')) return undefined
  if ((req.get('content-encoding') ?? 'identity').toLowerCase() !== 'identity') {
    throw new HttpError(415, 'unsupported_content_encoding', 'send the body uncompressed (no Content-Encoding)')
  }
  const tooLarge = () => {
    discardRestOfBody(req) // answered now; what the client still sends is dropped, then the connection closed
    return new HttpError(413, 'payload_too_large', `the body is over ${MCP_MAX_BODY_BYTES} bytes`)
  }
  if (Number(req.get('content-length') ?? 0) > MCP_MAX_BODY_BYTES) throw tooLarge()
  const bytes = await new Promise<Buffer | 'too-large'>((resolve, reject) => {
    const chunks: Buffer[] = []
    let received = 0
    const stop = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      received += chunk.length
      if (received <= MCP_MAX_BODY_BYTES) return void chunks.push(chunk)
      stop()
      resolve('too-large')
    }
    const onEnd = () => {
      stop()
      resolve(Buffer.concat(chunks))
    }
    const onError = (error: Error) => {
      stop()
      reject(error)
    }
    const onClose = () => onError(new Error('the client went away while sending the body'))
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose)
  })
  if (bytes === 'too-large') throw tooLarge()
  let body: unknown
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new HttpError(400, 'invalid_json', 'the body is not JSON (UTF-8)')
  }
  if (holdsNul(body)) throw new HttpError(400, 'invalid_request', NUL_MESSAGE)
  return { body }
}

/** The client's `Mcp-Session-Id`, or '' when it sent none. */
function sessionOf(req: Request): string {
  const sent = req.get('mcp-session-id')
  if (sent !== undefined && !SESSION_ID.test(sent)) throw new HttpError(400, 'invalid_request', 'Mcp-Session-Id must be 1–128 visible ASCII characters')
  return sent ?? ''
}

const isInitialize = (message: unknown): boolean => typeof message === 'object' && message !== null && (message as { method?: unknown }).method === 'initialize'
const isRequest = (message: unknown): boolean =>
  typeof message === 'object' && message !== null && typeof (message as { method?: unknown }).method === 'string' && 'id' in message

export function mcpRoutes(ctx: AppContext): [Router, ErrorRequestHandler] {
  const router = Router()
  /** The authenticated caller of a request (after requireBearerToken). */
  const callerOf = (req: Request, session: string): McpCaller => {
    const auth = req.auth!
    return { user: auth.user, credential: auth.tokenHash ?? '', session, stillLive: () => credentialStillLive(ctx, req) }
  }
  // The SDK (with zod and ajv: ~10 MB of heap) is loaded by the first MCP request, not at start-up.
  let loading: Promise<{ face: McpFace; mcp: typeof import('./mcp-server.ts') }> | undefined
  const loadFace = () =>
    (loading ??= import('./mcp-server.ts').then((mcp) => {
      const face = mcp.makeMcpFace(ctx)
      ctx.shutdownSignal.addEventListener('abort', () => face.close(), { once: true })
      return { face, mcp }
    }))

  router.post(MCP_PATH, checkOrigin, requireBearerToken, async (req, res) => {
    const read = await readJsonBody(req)
    const body: unknown = read?.body
    if (Array.isArray(body) && body.length > MCP_MAX_BATCH) {
      throw new HttpError(400, 'batch_too_large', `a batch holds at most ${MCP_MAX_BATCH} messages; this one has ${body.length}`)
    }
    if (Array.isArray(body) && body.length === 0) throw new HttpError(400, 'invalid_request', 'an empty batch is not a JSON-RPC request')
    const sent = sessionOf(req)
    const messages: unknown[] = Array.isArray(body) ? body : read === undefined ? [] : [body]
    let session = sent
    if (messages.some(isInitialize)) {
      session = randomUUID()
      res.setHeader('Mcp-Session-Id', session)
    }
    res.setHeader('Cache-Control', 'no-store')
    if (ctx.shutdownSignal.aborted) throw new HttpError(503, 'shutting_down', 'the server is shutting down')
    const { face, mcp } = await loadFace()
    await mcp.serveMcpRequest(ctx, face, {
      req,
      res,
      body,
      requests: messages.filter(isRequest).length,
      caller: callerOf(req, session),
    })
  })

  // The connection's stream: announcements of its followed files' new versions.
  router.get(MCP_PATH, checkOrigin, requireBearerToken, async (req, res) => {
    const session = sessionOf(req)
    if (ctx.shutdownSignal.aborted) throw new HttpError(503, 'shutting_down', 'the server is shutting down')
    const { face, mcp } = await loadFace()
    res.setHeader('Cache-Control', 'no-store')
    await mcp.serveMcpStream(ctx, face, { req, res, caller: callerOf(req, session) })
  })

  // No session to end (DELETE): nothing is kept for one.
  router.all(MCP_PATH, checkOrigin, requireBearerToken, (req, res) => {
    res.set('Allow', 'POST').status(405).json(jsonRpcError(405, 'method_not_allowed', `${req.method} is not offered on /mcp: no session is kept; send messages as POST`))
  })

  const errorHandler: ErrorRequestHandler = (failure, req, res, next) => {
    if (req.path !== MCP_PATH) return next(failure)
    const described = describeError(failure)
    if (described.status >= 500) {
      ctx.logger.error('request failed', {
        method: req.method,
        path: req.path,
        error: failure instanceof Error ? { name: failure.name, message: failure.message, stack: failure.stack } : String(failure),
      })
    }
    if (res.headersSent) {
      res.end()
      return
    }
    res.status(described.status).set(described.headers)
    if (described.status === 401) res.set('WWW-Authenticate', 'Bearer')
    res.json(jsonRpcError(described.status, described.code, described.message))
  }
  return [router, errorHandler]
}
