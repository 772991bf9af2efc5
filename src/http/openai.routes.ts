// /v1/: KnowAgent as an OpenAI-compatible model (docs/openai-compatible.md). Any Chat Completions
// client (the `openai` SDK, the AI SDK, Open WebUI, LibreChat, knowagent's own model gateway)
// points its base URL at `<knowagent>/v1` with a knowagent API token as its key. A completion is
// one ordinary turn: admitted like the stream API (model, scope, rate limit — 4xx before any
// byte), run and recorded by the same code, and projected by openai-turn-projector.ts. Errors
// before the answer use OpenAI's shape `{"error":{message,type,code,param}}`.
import { Router, type ErrorRequestHandler, type RequestHandler } from 'express'
import * as Effect from 'effect/Effect'
import { randomUUID } from 'node:crypto'
import type { AppContext } from './app-context.ts'
import { describeError, errorAfterTokenCheck } from './error-handler.ts'
import { HttpError } from './http-errors.ts'
import { checkRequestToken, uncheckedTokenOf } from './authenticate.ts'
import {
  OPENAI_MODEL_PREFIX,
  OpenAiRequestError,
  decodeChatCompletionRequest,
  readChatTurnRequest,
} from './openai-chat-request.ts'
import { createCompletionCollector, openAiErrorType, openAiTurnProjector, sseFrameWriter } from './openai-turn-projector.ts'
import { admitTurnStream, runProjectedTurn, streamTurn, type TurnStreamInput } from './turn-stream.ts'
import { jsonBody } from './json-body.ts'

export const OPENAI_PREFIX = '/v1'
const MODELS_HINT = `GET ${OPENAI_PREFIX}/models lists them`

const isOpenAiPath = (path: string): boolean => path === OPENAI_PREFIX || path.startsWith(`${OPENAI_PREFIX}/`)

/** A knowagent API token as the bearer key; a browser session is not enough here (no CSRF surface). */
function requireBearerToken(): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.via === 'token') return next()
    const message = req.auth
      ? 'a browser session is not accepted on /v1: send Authorization: Bearer <knowagent API token>'
      : 'send Authorization: Bearer <knowagent API token> (create one with `knowagent token create <login>`)'
    next(new HttpError(401, 'unauthorized', message))
  }
}

/** The registry model behind `knowagent/<id>`, or 404 model_not_found. */
async function modelNamed(ctx: AppContext, name: string) {
  const id = name.startsWith(OPENAI_MODEL_PREFIX) ? name.slice(OPENAI_MODEL_PREFIX.length) : undefined
  const found = id === undefined || id === '' ? undefined : await Effect.runPromise(Effect.option(ctx.models.get(id)))
  if (found === undefined || found._tag === 'None') {
    throw new OpenAiRequestError(404, 'model_not_found', `unknown model "${name.slice(0, 256)}"; ${MODELS_HINT}`, 'model')
  }
  return found.value
}

/** The routes and, after them, the error handler that answers every /v1 failure in OpenAI's shape. */
export function openAiRoutes(ctx: AppContext): [Router, ErrorRequestHandler] {
  const router = Router()
  const startedAt = Math.floor(Date.now() / 1000)
  const modelEntry = (id: string) => ({ id: `${OPENAI_MODEL_PREFIX}${id}`, object: 'model' as const, created: startedAt, owned_by: 'knowagent' })

  router.use(OPENAI_PREFIX, requireBearerToken(), ...jsonBody({ limit: '2mb', strict: false }))

  router.get(`${OPENAI_PREFIX}/models`, (_req, res) => {
    res.set('Cache-Control', 'no-store').json({ object: 'list', data: ctx.models.list().map((model) => modelEntry(model.id)) })
  })

  router.get(`${OPENAI_PREFIX}/models/*name`, async (req, res) => {
    const name = ([] as string[]).concat(req.params.name ?? []).join('/')
    const model = await modelNamed(ctx, name)
    res.set('Cache-Control', 'no-store').json(modelEntry(model.info.id))
  })

  router.post(`${OPENAI_PREFIX}/chat/completions`, async (req, res) => {
    const request = readChatTurnRequest(decodeChatCompletionRequest(req.body), { maxMessageChars: ctx.config.maxMessageChars })
    const user = req.auth!.user
    await modelNamed(ctx, `${OPENAI_MODEL_PREFIX}${request.modelId}`)
    const input: TurnStreamInput = {
      uri: request.uri,
      modelId: request.modelId,
      message: request.question,
      history: request.history,
      preferences: request.preferences,
    }
    const admitted = await admitTurnStream(ctx, { user, input, modelsHint: MODELS_HINT, uncheckedToken: uncheckedTokenOf(req) })
    const created = Math.floor(Date.now() / 1000)
    const modelName = `${OPENAI_MODEL_PREFIX}${request.modelId}`
    if (request.stream) {
      await streamTurn(ctx, {
        res, user, admitted, input,
        graceMs: 0, // in the OpenAI protocol a closed connection is how a client cancels
        project: (sse, { turnId }) =>
          openAiTurnProjector({ id: `chatcmpl-${turnId}`, created, model: modelName, includeUsage: request.includeUsage, write: sseFrameWriter(sse) }),
      })
      return
    }
    const { turnId } = admitted
    const collector = createCompletionCollector()
    await runProjectedTurn(ctx, {
      res, user, admitted, input,
      project: () => openAiTurnProjector({ id: `chatcmpl-${turnId}`, created, model: modelName, includeUsage: true, write: collector.write }),
    })
    if (res.writableEnded || res.destroyed) return // the client went away: the turn was cancelled
    const result = collector.result()
    res.set({ 'X-Turn-Id': turnId, 'Cache-Control': 'no-store' })
    if (result.ok) res.json(result.completion)
    else res.status(result.status).json({ error: result.error })
  })

  router.use(OPENAI_PREFIX, (req, _res, next) => next(new HttpError(404, 'not_found', `no route for ${req.method} ${req.originalUrl.split('?')[0]}`)))

  const errorHandler: ErrorRequestHandler = async (failure, req, res, next) => {
    if (!isOpenAiPath(req.path)) return next(failure)
    const error = await errorAfterTokenCheck(failure, () => checkRequestToken(ctx, req))
    const described = describeError(error)
    if (described.status >= 500) {
      ctx.logger.error('request failed', {
        method: req.method,
        path: req.path,
        error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
      })
    }
    if (res.headersSent) {
      res.end()
      return
    }
    const param = error instanceof OpenAiRequestError ? error.param : null
    res.status(described.status).set(described.headers)
    if (described.status === 401) res.set('WWW-Authenticate', 'Bearer')
    res.json({ error: { message: described.message, type: openAiErrorType(described.status), code: described.code, param } })
  }
  return [router, errorHandler]
}
