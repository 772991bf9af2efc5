// /api/v1/knowledge-agent/: options, command (explicit tools, no model), stream (SSE turn), and a
// turn by id from any instance: turns/:id/stop (the Stop command) and turns/:id/events (resume).
import { Router } from 'express'
import * as Schema from 'effect/Schema'
import { DEFAULT_TURN_LIMITS } from '../machines/index.ts'
import type { CompileOptions } from '../effects/compile/compile-service.ts'
import type { AppContext } from './app-context.ts'
import { requireAuth, requireCsrf, uncheckedTokenOf } from './authenticate.ts'
import { decodeBody, SafeInt } from './decode-request.ts'
import { HttpError } from './http-errors.ts'
import { runExplicitCommand } from './explicit-command.ts'
import { checkStreamRequest, StreamRequest } from './stream-request.ts'
import { admitTurnStream, jsonTurnProjector, streamTurn } from './turn-stream.ts'
import { resumeTurnStream } from './turn-resume.ts'
import { stopTurn } from '../effects/turn/turn-commands.ts'
import { jsonBody } from './json-body.ts'

export const API_PREFIX = '/api/v1/knowledge-agent'

export const CommandRequest = Schema.Struct({
  command: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)),
  uri: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096)),
  offset: Schema.optional(SafeInt({ minimum: 0 })),
  limit: Schema.optional(SafeInt({ minimum: 1 })),
  query: Schema.optional(Schema.String),
})

/** Safe metadata only: never a key, endpoint, header or command line. `compile` is null when the server runs without compile jobs. */
export function buildOptions(ctx: AppContext, compile: CompileOptions | null = null) {
  return {
    models: ctx.models.list().map((m) => ({
      id: m.id,
      name: m.name,
      profile: m.profile,
      context_window: m.contextWindow,
      supports_native_tool_calling: m.supportsNativeToolCalling,
      supports_reasoning_effort: m.supportsReasoningEffort === true,
    })),
    default_model_id: ctx.models.defaultModelId(),
    compile,
    limits: {
      max_message_chars: ctx.config.maxMessageChars,
      streams_per_minute: ctx.config.streamsPerMinute,
      model_steps: DEFAULT_TURN_LIMITS.maxModelSteps,
      tool_calls: DEFAULT_TURN_LIMITS.maxToolCalls,
      model_calls: DEFAULT_TURN_LIMITS.maxModelCalls,
    },
  }
}

export function knowledgeAgentRoutes(ctx: AppContext): Router {
  const router = Router()
  router.use(API_PREFIX, requireAuth(), ...jsonBody({ limit: '2mb', strict: false }), requireCsrf())

  router.get(`${API_PREFIX}/options`, async (req, res) => {
    const compile = ctx.compile ? await ctx.compile.service.options({ caller: req.auth!.user }) : null
    res.set('Cache-Control', 'no-store').json(buildOptions(ctx, compile))
  })

  router.post(`${API_PREFIX}/command`, async (req, res) => {
    const body = decodeBody(CommandRequest, req.body)
    const user = req.auth!.user
    const outcome = await runExplicitCommand(ctx, {
      user,
      command: { command: body.command, scopeUri: body.uri, targetUri: body.uri, offset: body.offset, limit: body.limit, query: body.query },
    })
    if (outcome.error) throw new HttpError(outcome.error.status, outcome.error.code, outcome.error.message)
    res.json({ command: body.command, result: outcome.result, summary: outcome.summary })
  })

  router.post(`${API_PREFIX}/stream`, async (req, res) => {
    const body = decodeBody(StreamRequest, req.body)
    const history = checkStreamRequest(body, { maxMessageChars: ctx.config.maxMessageChars })
    const user = req.auth!.user
    const input = { uri: body.uri, modelId: body.model_id, message: body.message, history }
    const admitted = await admitTurnStream(ctx, { user, input, modelsHint: `GET ${API_PREFIX}/options lists the available models`, uncheckedToken: uncheckedTokenOf(req) })
    await streamTurn(ctx, { res, user, admitted, input, project: jsonTurnProjector })
  })

  router.post(`${API_PREFIX}/turns/:id/stop`, async (req, res) => {
    const turnId = String(req.params.id)
    const { status } = await stopTurn({ db: ctx.db, turns: ctx.turns, caller: req.auth!.user, turnId })
    res.status(status === 'stopping' ? 202 : 200).json({ turn_id: turnId, status })
  })

  router.get(`${API_PREFIX}/turns/:id/events`, async (req, res) => {
    await resumeTurnStream(ctx, { req, res, user: req.auth!.user, turnId: String(req.params.id), project: jsonTurnProjector })
  })

  return router
}
