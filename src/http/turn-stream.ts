// One turn streamed over SSE, shared by the JSON API (`POST /api/v1/knowledge-agent/stream`) and
// the browser chat (`POST /workspace/chat/stream`). Both admit the request the same way (known
// model, visible URI, rate limit), run the same `runTurn`, stop it the same way (client
// disconnect, server shutdown), and end every stream with exactly one terminal event. Only the
// projection of runtime events differs: JSON frames for programs, HTML fragments for htmx.
import type { Response } from 'express'
import * as Effect from 'effect/Effect'
import { randomUUID } from 'node:crypto'
import type { User } from '../effects/auth/users.ts'
import type { ChatModel } from '../effects/llm/model.ts'
import { admitTurn } from '../effects/turn/turn-admission.ts'
import { recordTurnFinished } from '../effects/turn/turn-records.ts'
import { buildSystemPrompt } from '../effects/turn/prepare-turn.ts'
import { runTurn } from '../effects/turn/run-turn.ts'
import { resolveNode } from '../effects/workspace/resolve.ts'
import { NodeNotFound } from '../effects/workspace/workspace-errors.ts'
import { formatKbUri, parseKbUri, segmentsToPath } from '../effects/workspace/uri.ts'
import type { WorkspaceNode } from '../effects/workspace/store.ts'
import type { ChatMessage, TurnEmitted, TurnOutput, Usage } from '../machines/index.ts'
import type { TerminalFields } from '../client/wire-events.ts'
import type { AppContext } from './app-context.ts'
import { whenClientGone } from './client-gone.ts'
import { credentialStillLive, revokedToken, tokenStillLive, type UncheckedToken } from './authenticate.ts'
import { watchCredential } from './credential-watch.ts'
import { badRequest, HttpError } from './http-errors.ts'
import { openSse, type SseWriter } from './sse.ts'
import { checkMessageFitsModel } from './stream-request.ts'

export type TurnProgressEvent = Exclude<TurnEmitted, { type: 'done' } | { type: 'error' }>
type TerminalEmitted = Extract<TurnEmitted, { type: 'done' } | { type: 'error' }>

/** The one terminal event of a stream: the runtime's done/error plus the turn id and the history to carry on (src/client/wire-events.ts). */
export type TurnTerminal = TerminalEmitted & TerminalFields

/** What the turn's output adds for a projector that reports it (the OpenAI face's `usage`, also after a failure). */
export interface TurnOutcome {
  readonly usage: Usage | undefined
}

/** Turns runtime events into bytes on one SSE stream. */
export interface TurnProjector {
  readonly progress: (event: TurnProgressEvent) => void
  /** Called exactly once, last; the stream is closed right after. */
  readonly finish: (terminal: TurnTerminal, outcome?: TurnOutcome) => void
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

function rateLimited(ctx: AppContext, waitMs: number): HttpError {
  const seconds = Math.ceil(waitMs / 1000)
  return new HttpError(429, 'rate_limited', `at most ${ctx.config.streamsPerMinute} streams per minute; retry in ${seconds} s`, {
    'Retry-After': String(seconds),
  })
}

/** Aborts on client disconnect (the response closed before it finished) or server shutdown. */
/**
 * What stops a running turn: its client leaving (also during admission), the server shutting
 * down, or the end of the session or token the request was authenticated with (signed out,
 * password changed, token revoked — announced by any process, credential-watch.ts).
 */
function watchForStop(ctx: AppContext, { res, user }: { res: Response; user: User }): { signal: AbortSignal; release: () => void } {
  const stop = new AbortController()
  const onShutdown = () => stop.abort('shutdown')
  const unwatch = whenClientGone(res, () => stop.abort('disconnect'))
  ctx.shutdownSignal.addEventListener('abort', onShutdown, { once: true })
  if (ctx.shutdownSignal.aborted) onShutdown()
  const credential = watchCredential(ctx, { userId: user.id, stillLive: () => credentialStillLive(ctx, res.req), onEnded: () => stop.abort('revoked') })
  return {
    signal: stop.signal,
    release: () => {
      unwatch()
      credential.release()
      ctx.shutdownSignal.removeEventListener('abort', onShutdown)
    },
  }
}

function terminalOf({ held, output }: { held: TerminalEmitted | undefined; output: TurnOutput | undefined }): TerminalEmitted {
  if (held) return held
  if (output?.status === 'done') return { type: 'done', finish_reason: output.finishReason ?? 'stop', usage: output.usage }
  return { type: 'error', code: output?.error?.code ?? 'internal_error', message: output?.error?.message ?? 'the turn ended without a result' }
}

/** Opens the SSE response, runs the turn, projects its events and ends with one terminal event. */
export async function streamTurn(
  ctx: AppContext,
  {
    res,
    user,
    admitted,
    input,
    project,
  }: {
    res: Response
    user: User
    admitted: AdmittedTurn
    input: TurnStreamInput
    project: (sse: SseWriter, turn: { readonly turnId: string }) => TurnProjector
  },
): Promise<void> {
  const { turnId } = admitted
  let sse: SseWriter | undefined
  await runProjectedTurn(ctx, {
    res,
    user,
    admitted,
    input,
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
 * Runs the admitted turn of one request and feeds its events to the projector `project` builds,
 * ending with exactly one `finish`; the response closing early (client gone) or server shutdown
 * stops it. The caller owns the response: `streamTurn` opens SSE in `project`, a non-streaming
 * face answers afterwards. If `project` throws, the turn's row is closed as failed.
 */
export async function runProjectedTurn(
  ctx: AppContext,
  {
    res,
    user,
    admitted,
    input,
    project,
  }: { res: Response; user: User; admitted: AdmittedTurn; input: TurnStreamInput; project: () => TurnProjector },
): Promise<void> {
  const { turnId } = admitted
  let projector: TurnProjector
  try {
    projector = project()
  } catch (error) {
    await closeUnfinishedTurn(ctx, turnId)
    throw error
  }
  const stop = watchForStop(ctx, { res, user })
  let held: TerminalEmitted | undefined
  const forward = (event: TurnEmitted) => {
    if (held) return
    if (event.type === 'done' || event.type === 'error') {
      held = event // sent once the turn's output (its history) is known
      return
    }
    projector.progress(event)
  }
  let output: TurnOutput | undefined
  try {
    output = await runTurn({
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
      onEvent: forward,
      signal: stop.signal,
      turnSeconds: ctx.config.turnSeconds,
      logger: ctx.logger.child({ turnId, login: user.login }),
      instanceId: ctx.instanceId,
      metrics: ctx.metrics,
    })
  } catch (error) {
    ctx.logger.error('turn crashed', {
      turnId,
      error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
    })
    held = { type: 'error', code: 'internal_error', message: 'the turn failed unexpectedly' }
    await closeUnfinishedTurn(ctx, turnId) // runTurn records a crash it sees; not one before it started
  } finally {
    stop.release()
  }
  projector.finish({ ...terminalOf({ held, output }), turn_id: turnId, ...(output ? { history: output.messages } : {}) }, { usage: output?.usage })
}

/** The JSON projection (the public API): each runtime event is one SSE event of the same name. */
export function jsonTurnProjector(sse: SseWriter): TurnProjector {
  return {
    progress: (event) => {
      // The per-delta path: the same bytes as JSON.stringify({ text }), without the object.
      if (event.type === 'delta' || event.type === 'thinking') sse.sendJson(event.type, `{"text":${JSON.stringify(event.text)}}`)
      else {
        const { type, ...data } = event
        sse.send(type, data)
      }
    },
    finish: ({ type, ...data }) => void sse.send(type, data),
  }
}
