// One turn streamed over SSE, shared by the JSON API (`POST /api/v1/knowledge-agent/stream`), the
// browser chat (`POST /workspace/chat/stream`) and the OpenAI face. They admit the request the same
// way (known model, visible URI, rate limit, not draining), run the same `runTurn` among the
// process's live turns (src/effects/turn/live-turns.ts: numbered, stored events; stopped by a
// command, the server's shutdown, the credential's end, or its clients gone for the grace period),
// and end every stream with exactly one terminal event. Only the projection of the numbered events
// differs: JSON frames for programs, HTML fragments for htmx, OpenAI chunks.
import type { Response } from 'express'
import * as Effect from 'effect/Effect'
import { randomUUID } from 'node:crypto'
import type { User } from '../effects/auth/users.ts'
import type { ChatModel } from '../effects/llm/model.ts'
import { admitTurn } from '../effects/turn/turn-admission.ts'
import { recordTurnFinished } from '../effects/turn/turn-records.ts'
import { buildSystemPrompt } from '../effects/turn/prepare-turn.ts'
import { runTurn } from '../effects/turn/run-turn.ts'
import type { LiveTurn } from '../effects/turn/live-turns.ts'
import { type NumberedEvent, progressJson, terminalJson, type TurnProgressEvent, type TurnTerminal } from '../effects/turn/turn-events.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { NodeNotFound } from '../effects/workspace/workspace-errors.ts'
import { formatKbUri, parseKbUri, segmentsToPath } from '../effects/workspace/uri.ts'
import type { WorkspaceNode } from '../effects/workspace/store.ts'
import type { ChatMessage, Usage } from '../machines/index.ts'
import type { AppContext } from './app-context.ts'
import { whenClientGone } from './client-gone.ts'
import { credentialStillLive, revokedToken, tokenStillLive, type UncheckedToken } from './authenticate.ts'
import { watchCredential } from './credential-watch.ts'
import { badRequest, HttpError } from './http-errors.ts'
import { openSse, type SseWriter } from './sse.ts'
import { checkMessageFitsModel } from './stream-request.ts'

export type { TurnProgressEvent, TurnTerminal } from '../effects/turn/turn-events.ts'

/** What the turn's output adds for a projector that reports it (the OpenAI face's `usage`, also after a failure). */
export interface TurnOutcome {
  readonly usage: Usage | undefined
}

/** Turns a turn's numbered events into bytes on one SSE stream. */
export interface TurnProjector {
  /** `numbered`: the event as stored, with its number (the SSE id); absent where events are not numbered (unit tests). */
  readonly progress: (event: TurnProgressEvent, numbered?: NumberedEvent) => void
  /** Called exactly once, last; the stream is closed right after. */
  readonly finish: (terminal: TurnTerminal, outcome?: TurnOutcome, numbered?: NumberedEvent) => void
  /** A resumed stream has replayed what was stored when it began; live events follow. */
  readonly caughtUp?: (() => void) | undefined
}

export interface TurnStreamInput {
  readonly uri: string
  readonly modelId: string
  readonly message: string
  readonly history: ReadonlyArray<ChatMessage>
  /** The client's own instructions (OpenAI-compatible `system` messages), added to the system prompt as preferences. */
  readonly preferences?: string | undefined
}

/** A turn allowed to start: its id (its row is recorded `running`), its model and the selected node as admission resolved it. */
export interface AdmittedTurn {
  readonly turnId: string
  readonly model: ChatModel
  readonly scope: WorkspaceNode
}

const RATE_WINDOW_MS = 60_000

/**
 * Everything that can refuse a turn before a byte of the stream is sent: the model id, the URI
 * (400/403/404), a message the model cannot take (400) and the per-user stream rate limit (429,
 * counted in the database, so it holds across every server process). Throws HttpError or a
 * tagged workspace error. An admitted turn's row is written (`running`): run it with
 * `runProjectedTurn` / `streamTurn`, which record its outcome.
 *
 * One statement writes the admission (`admitTurn`: the node, the slot and the row, and the bearer
 * token when the memo supplied it unchecked), usually as the only query. When the message's fit
 * depends on whether the URI names a file or a directory (the system prompt says which), or no
 * node is there (the root is made on first use; otherwise the exact 404), the token and the node
 * are checked first, in the same order and with the same errors, and then the same statement.
 */
export async function admitTurnStream(
  ctx: AppContext,
  {
    user,
    input,
    modelsHint,
    uncheckedToken,
  }: {
    user: User
    input: TurnStreamInput
    modelsHint: string
    /** The request's bearer token as the memo gave it (`uncheckedTokenOf(req)`): checked here before anything is written. */
    uncheckedToken?: UncheckedToken | undefined
  },
): Promise<AdmittedTurn> {
  if (ctx.turns.draining()) throw drainingError()
  const model = await Effect.runPromise(
    ctx.models.get(input.modelId).pipe(
      Effect.catchTag('UnknownModel', (error) => Effect.fail(badRequest(`${error.reason}; ${modelsHint}`, 'unknown_model'))),
    ),
  )
  const turnId = randomUUID()
  const path = parseKbUri({ uri: input.uri, callerLogin: user.login })
  const nativeTools = model.info.supportsNativeToolCalling
  const checkFit = (scope: { uri: string; kind: 'directory' | 'file' }) =>
    checkMessageFitsModel({
      message: input.message,
      model: model.info,
      systemPrompt: buildSystemPrompt({ scopeUri: scope.uri, scopeKind: scope.kind, nativeTools, preferences: input.preferences }),
      tools: nativeTools ? ctx.tools.schemas : [],
    })
  const fitsAsEither = (['directory', 'file'] as const).every((kind) => {
    try {
      checkFit({ uri: formatKbUri({ login: path.login, segments: path.segments, directory: kind === 'directory' }), kind })
      return true
    } catch {
      return false
    }
  })
  const now = (ctx.now ?? Date.now)()
  const slot = { key: `stream:${user.id}`, limit: ctx.config.streamsPerMinute, windowMs: RATE_WINDOW_MS, now }
  const turn = { id: turnId, uri: input.uri, modelId: model.info.id, instanceId: ctx.instanceId ?? null }
  const admit = async (storePath: string) => {
    const admission = await admitTurn(ctx.db, { caller: user, path: storePath, turn, slot, tokenHash: uncheckedToken?.hash })
    if (admission.kind === 'no-node') return undefined // the token, if any, is still unchecked
    uncheckedToken?.checked()
    if (admission.kind === 'bad-token') throw revokedToken(ctx, uncheckedToken!.hash)
    if (admission.kind === 'limited') throw rateLimited(ctx, admission.waitMs)
    return admission.node
  }
  if (fitsAsEither) {
    const scope = await admit(segmentsToPath(path.segments))
    if (scope) return { turnId, model, scope }
  }
  // Step by step: the token (nothing below may tell a revoked one more than 401), the node (the
  // exact 404; the root made on first use), the fit for its kind — then the same one statement.
  if (uncheckedToken !== undefined) {
    const live = await tokenStillLive(ctx, uncheckedToken.hash, user.id)
    uncheckedToken.checked()
    if (!live) throw revokedToken(ctx, uncheckedToken.hash)
  }
  const { node } = await resolveNode(ctx.db, { caller: user, uri: input.uri })
  checkFit(node)
  const scope = await admit(node.path)
  if (!scope) throw new NodeNotFound({ uri: node.uri }) // deleted a moment ago
  return { turnId, model, scope }
}

/** A process that is shutting down takes no new turn: the load balancer sends the retry elsewhere. */
export const drainingError = () =>
  new HttpError(503, 'draining', 'this server is shutting down and takes no new turns; retry (another instance will answer)', { 'Retry-After': '1' })

function rateLimited(ctx: AppContext, waitMs: number): HttpError {
  const seconds = Math.ceil(waitMs / 1000)
  return new HttpError(429, 'rate_limited', `at most ${ctx.config.streamsPerMinute} streams per minute; retry in ${seconds} s`, {
    'Retry-After': String(seconds),
  })
}

/** How long a turn of these faces runs on once its client is gone (`turns.detachedGraceSeconds`). */
export const detachedGraceMs = (ctx: AppContext): number => ctx.config.turns.detachedGraceSeconds * 1000

/** Opens the SSE response, runs the turn, projects its events and ends with one terminal event. */
export async function streamTurn(
  ctx: AppContext,
  {
    res,
    user,
    admitted,
    input,
    project,
    graceMs = detachedGraceMs(ctx),
  }: {
    res: Response
    user: User
    admitted: AdmittedTurn
    input: TurnStreamInput
    project: (sse: SseWriter, turn: { readonly turnId: string }) => TurnProjector
    /** How long the turn runs on once the client is gone (the OpenAI face: 0, a closed connection cancels). */
    graceMs?: number
  },
): Promise<void> {
  const { turnId } = admitted
  let sse: SseWriter | undefined
  await runProjectedTurn(ctx, {
    res,
    user,
    admitted,
    input,
    graceMs,
    project: () => {
      res.set('X-Turn-Id', turnId)
      sse = openSse(res, { keepAliveMs: ctx.sseKeepAliveMs ?? 15_000 })
      return project(sse, { turnId })
    },
  })
  sse?.close()
}

/** An admitted turn's row is `running` until its outcome is written: a failure that ends the request before then closes it as failed (a no-op once it is finished). */
async function closeUnfinishedTurn(ctx: AppContext, turnId: string): Promise<void> {
  await recordTurnFinished(ctx.db, { id: turnId, status: 'failed', error: { code: 'internal_error', message: 'the turn failed unexpectedly' } }).catch((error: unknown) =>
    ctx.logger.error('could not record the turn outcome', { turnId, error }),
  )
}

/**
 * Starts the admitted turn among the process's live turns. Besides a Stop command and its clients
 * leaving, what stops it is the server shutting down and the end of the session or token the
 * request was authenticated with (signed out, password changed, token revoked — announced by any
 * process, credential-watch.ts): watched for as long as the turn runs, not the request.
 */
function startLiveTurn(
  ctx: AppContext,
  { res, user, admitted, input, graceMs }: { res: Response; user: User; admitted: AdmittedTurn; input: TurnStreamInput; graceMs: number },
): LiveTurn {
  const { turnId } = admitted
  const logger = ctx.logger.child({ turnId, login: user.login })
  const turn = ctx.turns.start({
    turnId,
    graceMs,
    logger,
    run: ({ signal, onEvent, recordOutcome }) =>
      runTurn({
        db: ctx.db,
        caller: user,
        model: admitted.model,
        tools: ctx.tools,
        preStep: ctx.preStep,
        turnId,
        recorded: true,
        uri: input.uri,
        scope: admitted.scope,
        question: input.message,
        history: input.history,
        preferences: input.preferences,
        onEvent,
        signal,
        turnSeconds: ctx.config.turnSeconds,
        logger,
        instanceId: ctx.instanceId,
        metrics: ctx.metrics,
        recordOutcome,
      }),
  })
  const onShutdown = () => turn.stop('shutdown')
  ctx.shutdownSignal.addEventListener('abort', onShutdown, { once: true })
  if (ctx.shutdownSignal.aborted) onShutdown()
  const request = res.req
  const credential = watchCredential(ctx, { userId: user.id, stillLive: () => credentialStillLive(ctx, request), onEnded: () => turn.stop('revoked') })
  void turn.ended.finally(() => {
    credential.release()
    ctx.shutdownSignal.removeEventListener('abort', onShutdown)
  })
  return turn
}

/**
 * Runs the admitted turn of one request and feeds its events to the projector `project` builds,
 * ending with exactly one `finish` — unless the client leaves first: the request is then done,
 * and the turn runs on for `graceMs` for a client that reconnects (0: it stops at once). A client
 * that left before the response began never learned the turn's id: its turn stops at once. The
 * caller owns the response: `streamTurn` opens SSE in `project`, a non-streaming face answers
 * afterwards. If `project` throws, the turn's row is closed as failed.
 */
export async function runProjectedTurn(
  ctx: AppContext,
  {
    res,
    user,
    admitted,
    input,
    project,
    graceMs = 0,
  }: { res: Response; user: User; admitted: AdmittedTurn; input: TurnStreamInput; project: () => TurnProjector; graceMs?: number },
): Promise<void> {
  const { turnId } = admitted
  const leftEarly = res.closed && !res.writableFinished
  let projector: TurnProjector
  let turn: LiveTurn
  try {
    projector = project()
    turn = startLiveTurn(ctx, { res, user, admitted, input, graceMs })
  } catch (error) {
    await closeUnfinishedTurn(ctx, turnId)
    throw error
  }
  await new Promise<void>((resolve) => {
    let unwatch = (): void => undefined
    const unsubscribe = turn.subscribe({
      event: (numbered, event) => projector.progress(event, numbered),
      end: (numbered, terminal, outcome) => {
        unwatch()
        projector.finish(terminal, outcome, numbered)
        resolve()
      },
    })
    unwatch = whenClientGone(res, () => {
      unsubscribe()
      resolve()
    })
    if (leftEarly) turn.stop('disconnect')
  })
}

/** The JSON projection (the public API): each event is one SSE event of the same name, with its number as `id:` — the frame made once for it (and stored). */
export function jsonTurnProjector(sse: SseWriter): TurnProjector {
  return {
    progress: (event, numbered) => void (numbered ? sse.sendFrame(numbered.frame) : sse.sendJson(event.type, progressJson(event))),
    finish: (terminal, _outcome, numbered) => void (numbered ? sse.sendFrame(numbered.frame) : sse.sendJson(terminal.type, terminalJson(terminal))),
  }
}
