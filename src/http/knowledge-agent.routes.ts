// /api/v1/knowledge-agent/: options, command (explicit tools, no model), stream (SSE turn).
import { Router, json } from 'express'
import { Effect, Schema } from 'effect'
import { runWorkspaceTool } from '../effects/tools/workspace-tools.ts'
import { parseKbUri } from '../effects/workspace/uri.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf } from './authenticate.ts'
import { badRequest, HttpError } from './http-errors.ts'
import { randomUUID } from 'node:crypto'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { runTurn } from '../effects/turn/run-turn.ts'
import type { TurnEmitted, TurnOutput } from '../machines/index.ts'
import { createRateLimiter } from './rate-limit.ts'
import { openSse } from './sse.ts'
import { checkStreamRequest, StreamRequest } from './stream-request.ts'

export const API_PREFIX = '/api/v1/knowledge-agent'

export const CommandRequest = Schema.Struct({
  command: Schema.Literals(['ls', 'read', 'search', 'status']),
  uri: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096)),
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  limit: Schema.optional(Schema.Int.check(Schema.isGreaterThan(0))),
  query: Schema.optional(Schema.String),
})

/** Decodes a request body with Schema; failures are a 400 that says what is wrong. */
export function decodeBody<S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, body: unknown): S['Type'] {
  if (body === undefined || body === null || typeof body !== 'object') {
    throw badRequest('expected a JSON object body (Content-Type: application/json)', 'invalid_body')
  }
  try {
    return Schema.decodeUnknownSync(schema as never)(body, { errors: 'all', onExcessProperty: 'error' }) as S['Type']
  } catch (error) {
    throw badRequest(`invalid request: ${(error as Error).message.replace(/\n\s*/g, ' ')}`, 'invalid_request')
  }
}

const TOOL_ERROR_STATUS: Record<string, number> = {
  invalid_uri: 400,
  invalid_arguments: 400,
  outside_scope: 403,
  not_found: 404,
  is_directory: 409,
  conflict: 409,
  unknown_tool: 400,
  internal: 500,
}

/** Safe metadata only: never a key, endpoint or header. */
export function buildOptions(ctx: AppContext) {
  return {
    models: ctx.models.list().map((m) => ({
      id: m.id,
      name: m.name,
      profile: m.profile,
      context_window: m.contextWindow,
      supports_native_tool_calling: m.supportsNativeToolCalling,
    })),
    default_model_id: ctx.models.list()[0]?.id ?? 'local',
    compile: {
      cli_profiles: [] as Array<{ id: string; name: string }>,
      defaults: { max_files: 32, reasoning_level: 'medium', call_budget: 8, timeout_seconds: 600 },
    },
    limits: {
      max_message_chars: ctx.config.maxMessageChars,
      streams_per_minute: ctx.config.streamsPerMinute,
      model_steps: 12,
      tool_calls: 24,
      model_calls: 16,
    },
  }
}

export function knowledgeAgentRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(API_PREFIX, requireAuth(), json({ limit: '2mb' }), requireCsrf())

  router.get(`${API_PREFIX}/options`, (_req, res) => {
    res.set('Cache-Control', 'no-store').json(buildOptions(ctx))
  })

  router.post(`${API_PREFIX}/command`, async (req, res) => {
    const body = decodeBody(CommandRequest, req.body)
    const user = req.auth!.user
    const scope = parseKbUri({ uri: body.uri, callerLogin: user.login })
    const args: Record<string, unknown> = { uri: body.uri }
    if (body.command !== 'status' && body.offset !== undefined) args.offset = body.offset
    if ((body.command === 'ls' || body.command === 'read') && body.limit !== undefined) args.limit = body.limit
    if (body.command === 'search') {
      if (!body.query?.trim()) throw badRequest('search needs a non-empty "query"', 'invalid_request')
      args.query = body.query
    }
    const outcome = await Effect.runPromise(runWorkspaceTool({ scope: { db: ctx.db, caller: user, scope }, name: body.command, args }), {
      signal: AbortSignal.any([ctx.shutdownSignal]),
    })
    if (!outcome.ok) {
      const error = (outcome.result as { error: { code: string; message: string } }).error
      throw new HttpError(TOOL_ERROR_STATUS[error.code] ?? 400, error.code, error.message)
    }
    res.json({ command: body.command, result: outcome.result, summary: outcome.summary })
  })

  const limiter = createRateLimiter({ limit: ctx.config.streamsPerMinute, windowMs: 60_000 })

  router.post(`${API_PREFIX}/stream`, async (req, res) => {
    const body = decodeBody(StreamRequest, req.body)
    const history = checkStreamRequest(body, { maxMessageChars: ctx.config.maxMessageChars })
    const user = req.auth!.user
    const model = await Effect.runPromise(
      ctx.models.get(body.model_id).pipe(
        Effect.catchTag('UnknownModel', (error) =>
          Effect.fail(badRequest(`${error.reason}; GET ${API_PREFIX}/options lists the available models`, 'unknown_model')),
        ),
      ),
    )
    await resolveNode(ctx.db, { caller: user, uri: body.uri }) // 400/403/404 before any stream starts
    const waitMs = limiter.take(user.id)
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000)
      throw new HttpError(429, 'rate_limited', `at most ${ctx.config.streamsPerMinute} streams per minute; retry in ${seconds} s`, { 'Retry-After': String(seconds) })
    }

    const turnId = randomUUID()
    res.set('X-Turn-Id', turnId)
    const sse = openSse(res, { keepAliveMs: ctx.sseKeepAliveMs ?? 15_000 })
    const stop = new AbortController()
    const onClose = () => {
      if (!res.writableFinished) stop.abort('disconnect')
    }
    const onShutdown = () => stop.abort('shutdown')
    res.on('close', onClose)
    ctx.shutdownSignal.addEventListener('abort', onShutdown, { once: true })
    if (ctx.shutdownSignal.aborted) onShutdown()

    let terminal: TurnEmitted | undefined
    const forward = (event: TurnEmitted) => {
      if (terminal) return
      if (event.type === 'done' || event.type === 'error') {
        terminal = event // held until the turn's output (history) is known
        return
      }
      const { type, ...data } = event
      sse.send(type, data)
    }
    let output: TurnOutput | undefined
    try {
      output = await runTurn({
        db: ctx.db,
        caller: user,
        model,
        turnId,
        uri: body.uri,
        question: body.message,
        history,
        onEvent: forward,
        signal: stop.signal,
        logger: ctx.logger.child({ turnId, login: user.login }),
      })
    } catch (error) {
      ctx.logger.error('turn crashed', { turnId, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
      terminal = { type: 'error', code: 'internal_error', message: 'the turn failed unexpectedly' }
    } finally {
      res.off('close', onClose)
      ctx.shutdownSignal.removeEventListener('abort', onShutdown)
    }
    const last: TurnEmitted =
      terminal ??
      (output?.status === 'done'
        ? { type: 'done', finish_reason: output.finishReason ?? 'stop', usage: output.usage }
        : { type: 'error', code: output?.error?.code ?? 'internal_error', message: output?.error?.message ?? 'the turn ended without a result' })
    const { type, ...data } = last
    sse.send(type, { ...data, turn_id: turnId, ...(output ? { history: output.messages } : {}) })
    sse.close()
  })

  return router
}
