// The MCP face of the tool registry (docs/mcp.md): the official SDK's low-level `Server`, one per
// HTTP request (stateless: any instance answers any request). What it offers is derived once per
// app (`makeMcpFace`): each registry tool with its JSON Schema (the one the model sees) plus an
// optional `kb_uri` that narrows the scope, and the workspace as kb:// resources, whose files a
// connection may follow (announced on its GET stream). A tools/call runs the registry's tool as
// the command endpoint does; its outcome goes back as structured content plus the same JSON as text.
import * as Effect from 'effect/Effect'
import type { Request, Response } from 'express'
import type { IncomingMessage } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js'
import type { User } from '../effects/auth/users.ts'
import { createRateLimiter, type RateLimiter } from '../effects/limits/rate-limiter.ts'
import type { ToolRegistry } from '../effects/tools/tool-registry.ts'
import { callKey, CALLS_PER_USER, makeRunningCalls, type RunningCalls } from '../effects/tools/running-calls.ts'
import { connectionKey, FILE_VERSIONS_CHANNEL, followersOf, subscribeToFile, SUBSCRIPTIONS_PER_CONNECTION, touchConnection, unsubscribeFromFile } from '../effects/workspace/file-subscriptions.ts'
import { parseKbUri, type WorkspacePath } from '../effects/workspace/uri.ts'
import { isWorkspaceError } from '../effects/workspace/workspace-errors.ts'
import type { AppContext } from './app-context.ts'
import { watchCredential } from './credential-watch.ts'
import { HttpError, REVOKED_TOKEN_MESSAGE } from './http-errors.ts'
import { canonicalFileUri, listResources, readResource, RESOURCE_TEMPLATES, resolveFile } from './mcp-resources.ts'
import { DEFAULT_KB_URI } from './openai-chat-request.ts'

export const MCP_SERVER_NAME = 'knowagent'
/** JSON-RPC error of a request its client cancelled, when a response is still due (another request of its batch runs on). */
export const REQUEST_CANCELLED = -32800
const RATE_WINDOW_MS = 60_000

const KB_URI_PROPERTY = {
  type: 'string',
  maxLength: 4096,
  description: `The scope: a kb:// folder or file of yours (default ${DEFAULT_KB_URI}, your whole workspace). Every URI the tool reaches must be it or lie below it.`,
}

const INSTRUCTIONS =
  'The tools and resources read one person\'s knowledge workspace: files and folders under kb://me/ (also written kb://users/<login>/). ' +
  'Start with ls, then read or search; pass kb_uri to keep a tool inside one folder. Paged results carry next_offset: pass it back as offset.'

/** What the face offers, derived once per app, and the state every request shares. */
export interface McpFace {
  readonly tools: ReadonlyArray<Tool>
  /** Tools that reach a paid outside service (the retrieval feature's): counted against the rate limit. */
  readonly limitedTools: ReadonlySet<string>
  readonly limiter: RateLimiter
  readonly running: RunningCalls
  readonly validator: AjvJsonSchemaValidator
  /** The SDK servers of the requests being answered (closed at shutdown). */
  readonly open: Set<Server>
  /** The streams (GET) this process holds, by connection key: where a followed file's new version is announced. */
  readonly streams: Map<string, Set<{ readonly server: Server; readonly userId: string }>>
  /** Whether subscriptions work here: a change feed brings the new versions' NOTIFY. */
  readonly subscriptions: boolean
  readonly close: () => void
}

/** Streams one user may hold open in one process (as many as live job streams). */
export const STREAMS_PER_USER = 10

/**
 * Announces new versions of followed files on the streams this process holds: the node ids that
 * arrive while a look-up runs are looked up together next (an import of many files is a few
 * queries, not one per file). Nothing is looked up while no stream is open here.
 */
function announceNewVersions(ctx: AppContext, streams: McpFace['streams']): (() => void) | undefined {
  let pending = new Set<string>()
  let running = false
  const drain = async (): Promise<void> => {
    running = true
    try {
      while (pending.size > 0) {
        const nodeIds = [...pending]
        pending = new Set()
        if (streams.size === 0) continue
        for (const { connection, uri } of await followersOf(ctx.db, { nodeIds, connections: [...streams.keys()] })) {
          for (const { server } of streams.get(connection) ?? []) server.sendResourceUpdated({ uri }).catch(() => undefined) // a stream closing meanwhile
        }
      }
    } catch (error) {
      ctx.logger.warn('could not announce new file versions to MCP streams', { error: error instanceof Error ? error.message : String(error) })
    } finally {
      running = false
    }
  }
  return ctx.feed?.on(FILE_VERSIONS_CHANNEL, (nodeId) => {
    if (streams.size === 0) return
    pending.add(nodeId)
    if (!running) void drain()
  })
}

/** The registry's tools as MCP tools: the JSON Schema the model sees, with `kb_uri` added. */
export function mcpToolsOf(registry: ToolRegistry): Tool[] {
  return registry.schemas.map(({ function: tool }) => {
    const properties = (tool.parameters['properties'] ?? {}) as Record<string, unknown>
    if ('kb_uri' in properties) throw new Error(`tool "${tool.name}" has its own kb_uri parameter; the MCP face adds one`)
    return {
      name: tool.name,
      description: tool.description,
      inputSchema: { ...tool.parameters, type: 'object' as const, properties: { ...properties, kb_uri: KB_URI_PROPERTY } },
    }
  })
}

export function makeMcpFace(ctx: AppContext): McpFace {
  const running = makeRunningCalls({ db: ctx.db, feed: ctx.feed })
  const open = new Set<Server>()
  const streams: McpFace['streams'] = new Map()
  const unfollow = announceNewVersions(ctx, streams)
  return {
    open,
    streams,
    subscriptions: ctx.feed !== undefined,
    tools: mcpToolsOf(ctx.tools),
    limitedTools: new Set((ctx.retrieval?.tools ?? []).map((tool) => tool.name)),
    limiter: createRateLimiter({ db: ctx.db, limit: ctx.config.streamsPerMinute, windowMs: RATE_WINDOW_MS, now: ctx.now }),
    running,
    validator: new AjvJsonSchemaValidator(),
    close: () => {
      unfollow?.()
      running.close()
      for (const server of open) void server.close()
    },
  }
}

/** One HTTP request's caller, as the route authenticated it. */
export interface McpCaller {
  readonly user: User
  /** The bearer token's HMAC: the namespace of this client's request ids (with its session). */
  readonly credential: string
  /** The client's `Mcp-Session-Id` (a correlation name only; no state is kept for it), or ''. */
  readonly session: string
  /** Whether the token still holds (revocation ends a running call). */
  readonly stillLive: () => Promise<boolean>
}

/** What a tools/call handler gets besides the request (the SDK's RequestHandlerExtra, the parts used here). */
interface ToolCallExtra {
  readonly signal: AbortSignal
  readonly requestId: string | number
  readonly _meta?: { readonly progressToken?: string | number | undefined } | undefined
  readonly sendNotification: (notification: ServerNotification) => Promise<void>
}

const toolError = (code: string, message: string, extra: Record<string, unknown> = {}): CallToolResult => {
  const body = { error: { code, message, ...extra } }
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true }
}

/**
 * The SDK server for one HTTP request. `onCancelled` runs when a call of this request is
 * cancelled by its client (the route then ends the request's response without a reply).
 */
export function createMcpServer(ctx: AppContext, face: McpFace, caller: McpCaller, { onCancelled }: { onCancelled: () => void }): Server {
  const server = new Server(
    { name: MCP_SERVER_NAME, version: '1' },
    { capabilities: { tools: { listChanged: false }, resources: { listChanged: false, subscribe: face.subscriptions } }, instructions: INSTRUCTIONS, jsonSchemaValidator: face.validator },
  )
  const { user } = caller
  /** A failure that is not the protocol's own: logged, and answered without its details (a database error's text stays here). */
  const failed =
    (method: string, signal: AbortSignal) =>
    (error: unknown): never => {
      if (error instanceof McpError) throw error
      if (signal.aborted || ctx.shutdownSignal.aborted) throw new McpError(ErrorCode.ConnectionClosed, 'the request ended before its answer', { code: 'cancelled' })
      ctx.logger.error('MCP request failed', { method, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
      throw new McpError(ErrorCode.InternalError, 'internal server error', { code: 'internal_error' })
    }

  // A cancel names a request that may run in another request's server, or another process.
  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    const requestId = notification.params.requestId
    if (requestId === undefined) return
    await face.running.cancel(callKey({ credential: caller.credential, session: caller.session, requestId }), 'cancelled by the client')
  })

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...face.tools] }))

  server.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool(request.params, extra).catch(failed('tools/call', extra.signal)))

  const callTool = async (params: { name: string; arguments?: Record<string, unknown> | undefined }, extra: ToolCallExtra): Promise<CallToolResult> => {
    const { name, arguments: given = {} } = params
    if (ctx.tools.get(name) === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name.slice(0, 100)}"; available: ${face.tools.map((tool) => tool.name).join(', ')}`)
    }
    const { kb_uri: scopeUri = DEFAULT_KB_URI, ...args } = given
    if (typeof scopeUri !== 'string') return toolError('invalid_arguments', 'invalid arguments: kb_uri must be a kb:// URI string')
    let scope: WorkspacePath
    try {
      scope = parseKbUri({ uri: scopeUri, callerLogin: user.login })
    } catch (error) {
      if (isWorkspaceError(error)) return toolError(error.code, error.message)
      throw error
    }
    if (face.limitedTools.has(name)) {
      const waitMs = await face.limiter.take(`mcp-retrieval:${user.id}`)
      if (waitMs > 0) {
        const seconds = Math.ceil(waitMs / 1000)
        return toolError('rate_limited', `at most ${ctx.config.streamsPerMinute} ${[...face.limitedTools].join('/')} calls per minute; retry in ${seconds} s`, { retry_after: seconds })
      }
    }
    const call = face.running.start({ key: callKey({ credential: caller.credential, session: caller.session, requestId: extra.requestId }), userId: user.id })
    if (call === undefined) {
      return toolError('too_many_calls', `at most ${CALLS_PER_USER} tool calls of one user run at once on a server; wait for one to finish`)
    }
    const revoked = new AbortController()
    const watch = watchCredential(ctx, { userId: user.id, stillLive: caller.stillLive, onEnded: () => revoked.abort('token revoked') })
    call.signal.addEventListener('abort', onCancelled, { once: true })
    const stop = AbortSignal.any([extra.signal, call.signal, revoked.signal, ctx.shutdownSignal])
    const progressToken = extra._meta?.progressToken
    let progressCount = 0
    const progress =
      progressToken === undefined
        ? () => {}
        : (text: string) => {
            progressCount += 1
            extra
              .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: progressCount, message: text } })
              .catch(() => undefined) // the client is gone: the call is being stopped
          }
    try {
      const outcome = await Effect.runPromise(ctx.tools.run({ name, args, context: { db: ctx.db, caller: user, scope, progress } }), { signal: stop })
      // counted as a turn's tool calls are (/metrics); an unknown name was refused above, never run
      ctx.metrics?.toolCall(name, outcome.ok ? 'ok' : (outcome.error?.code ?? 'error'))
      return { content: [{ type: 'text', text: outcome.content }], structuredContent: outcome.result as Record<string, unknown>, isError: !outcome.ok }
    } catch (error) {
      if (revoked.signal.aborted) return toolError('unauthorized', REVOKED_TOKEN_MESSAGE)
      if (call.signal.aborted) throw new McpError(REQUEST_CANCELLED, 'the request was cancelled', { code: 'cancelled' })
      throw error
    } finally {
      call.signal.removeEventListener('abort', onCancelled)
      call.release()
      watch.release()
    }
  }

  server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
    listResources(ctx, { user, cursor: request.params?.cursor }).catch(failed('resources/list', extra.signal)),
  )
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }))
  if (face.subscriptions) {
    const connection = connectionKey({ credential: caller.credential, session: caller.session })
    const needsSession = () => {
      if (caller.session === '') throw new McpError(ErrorCode.InvalidRequest, 'subscriptions belong to a connection: send the Mcp-Session-Id that initialize gave', { code: 'session_required' })
    }
    server.setRequestHandler(SubscribeRequestSchema, (request, extra) =>
      (async () => {
        needsSession()
        const node = await resolveFile(ctx, { user, uri: request.params.uri })
        if (!(await subscribeToFile(ctx.db, { connection, userId: user.id, nodeId: node.id, uri: node.uri }))) {
          throw new McpError(ErrorCode.InvalidRequest, `a connection follows at most ${SUBSCRIPTIONS_PER_CONNECTION} files`, { code: 'too_many_subscriptions' })
        }
        return {}
      })().catch(failed('resources/subscribe', extra.signal)),
    )
    server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) =>
      (async () => {
        needsSession()
        await unsubscribeFromFile(ctx.db, { connection, uri: canonicalFileUri({ user, uri: request.params.uri }) })
        return {}
      })().catch(failed('resources/unsubscribe', extra.signal)),
    )
  }
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    readResource(ctx, { user, uri: request.params.uri, signal: AbortSignal.any([extra.signal, ctx.shutdownSignal]) }).catch(failed('resources/read', extra.signal)),
  )
  return server
}

/**
 * Answers one POST: its own SDK server and stateless transport (no session id generated: the
 * route names the connection). Whatever ends the response — the answer sent, the client gone, a
 * cancel — closes the server, which aborts any call still running for it. A cancelled call ends
 * the response without a reply (the protocol's rule) when it was the request's only one; in a
 * batch the others go on and it is answered "cancelled".
 */
export async function serveMcpRequest(
  ctx: AppContext,
  face: McpFace,
  { req, res, body, requests, caller }: { readonly req: Request; readonly res: Response; readonly body: unknown; readonly requests: number; readonly caller: McpCaller },
): Promise<void> {
  const server = createMcpServer(ctx, face, caller, {
    onCancelled: () => {
      if (requests <= 1) void server.close()
    },
  })
  face.open.add(server)
  res.on('close', () => {
    face.open.delete(server)
    void server.close()
  })
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
  await server.connect(transport)
  // The SDK hands `req.auth` to handlers as its AuthInfo; ours never reads it there (the server got the caller above).
  await transport.handleRequest(req as unknown as IncomingMessage, res, body)
}

/**
 * Holds a connection's stream (GET): the announcements of its followed files' new versions. It
 * ends when the client goes, the server shuts down or the token is revoked. A request without a
 * session has nothing to follow: 405, as a server without streams answers.
 */
export async function serveMcpStream(ctx: AppContext, face: McpFace, { req, res, caller }: { readonly req: Request; readonly res: Response; readonly caller: McpCaller }): Promise<void> {
  if (!face.subscriptions || caller.session === '') {
    res.set('Allow', 'POST').status(405).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no stream without a session: send the Mcp-Session-Id that initialize gave', data: { code: 'method_not_allowed' } } })
    return
  }
  const held = [...face.streams.values()].reduce((count, set) => count + [...set].filter((stream) => stream.userId === caller.user.id).length, 0)
  if (held >= STREAMS_PER_USER) throw new HttpError(429, 'too_many_streams', `at most ${STREAMS_PER_USER} MCP streams of one user are open at once on a server`)
  const connection = connectionKey({ credential: caller.credential, session: caller.session })
  await touchConnection(ctx.db, { connection, userId: caller.user.id })
  const server = createMcpServer(ctx, face, caller, { onCancelled: () => undefined })
  const stream = { server, userId: caller.user.id }
  const set = face.streams.get(connection) ?? new Set()
  face.streams.set(connection, set.add(stream))
  face.open.add(server)
  // why the stream ended, logged once: the credential it was opened with ended, the server shut down, or the client went
  let endedBy: 'credential' | undefined
  const watch = watchCredential(ctx, {
    userId: caller.user.id,
    stillLive: caller.stillLive,
    onEnded: () => {
      endedBy = 'credential'
      void server.close()
    },
  })
  res.on('close', () => {
    // a stream the SDK refused (406, 400) never opened: its status says so
    const reason = res.statusCode !== 200 ? 'refused' : (endedBy ?? (ctx.shutdownSignal.aborted ? 'shutdown' : 'client_gone'))
    ctx.logger.info('MCP stream ended', { userId: caller.user.id, reason, ...(reason === 'refused' ? { status: res.statusCode } : {}) })
    watch.release()
    set.delete(stream)
    if (set.size === 0 && face.streams.get(connection) === set) face.streams.delete(connection)
    face.open.delete(server)
    void server.close()
  })
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
  await server.connect(transport)
  await transport.handleRequest(req as unknown as IncomingMessage, res)
}
