// `knowagent/testing`: an in-process scripted `ChatModel` (one shared scripted model rather than
// one-off fakes) and scripted turn actors, for machine tests. Everything runs through the real bridge
// (`fromEffect`), and every Effect records when it is interrupted.
import * as Effect from 'effect/Effect'
import { fromEffect } from '../effects/actor-bridge.ts'
import { chatModelTurnActors } from '../effects/turn/model-actors.ts'
import type {
  AssembledToolCall,
  ChatModel,
  ModelError,
  ModelInfo,
  ModelRequest,
  ModelResult,
} from '../effects/llm/model.ts'
import type {
  PrepareInput,
  PrepareOutput,
  PreStepInput,
  PreStepOutput,
  RunToolInput,
  RunToolOutput,
} from '../machines/index.ts'

export type ScriptedModelStep =
  /** Streams the deltas and thinking chunks, then answers `result`. */
  | {
      readonly kind: 'result'
      readonly deltas?: ReadonlyArray<string>
      readonly thinking?: ReadonlyArray<string>
      readonly result: ModelResult
    }
  /** Streams the deltas, then fails with an expected provider error. */
  | { readonly kind: 'error'; readonly deltas?: ReadonlyArray<string>; readonly error: ModelError }
  /** Streams the deltas, then waits until interrupted. */
  | { readonly kind: 'hang'; readonly deltas?: ReadonlyArray<string> }
  /** Dies (a crash, not an expected failure). */
  | { readonly kind: 'defect'; readonly defect: unknown }

export type ModelScript =
  | ReadonlyArray<ScriptedModelStep>
  /** Decides each step from the request; an Effect to decide later (e.g. when a test says so). */
  | ((request: ModelRequest, callIndex: number) => ScriptedModelStep | Effect.Effect<ScriptedModelStep>)

export interface InterruptionTracker {
  /** Names of the Effects that were interrupted, in order. */
  readonly interrupted: string[]
  /** Names of the Effects that started, in order. */
  readonly started: string[]
}

export function createInterruptionTracker(): InterruptionTracker {
  return { interrupted: [], started: [] }
}

/** Runs `effect` as `name`, recording its start and its interruption. */
export function tracked<A, E>({
  tracker,
  name,
  effect,
}: {
  readonly tracker: InterruptionTracker
  readonly name: string
  readonly effect: Effect.Effect<A, E>
}): Effect.Effect<A, E> {
  return Effect.sync(() => tracker.started.push(name)).pipe(
    Effect.andThen(effect),
    Effect.onInterrupt(() => Effect.sync(() => tracker.interrupted.push(name))),
  )
}

export interface ScriptedChatModel extends ChatModel {
  /** Every request received, in order. */
  readonly requests: ModelRequest[]
  readonly tracker: InterruptionTracker
}

export const SCRIPTED_MODEL_INFO: ModelInfo = {
  id: 'scripted',
  name: 'Scripted model (tests)',
  profile: 'tests',
  contextWindow: 32_000,
  maxOutputTokens: 2_000,
  supportsNativeToolCalling: true,
}

export function createScriptedModel({
  script,
  info,
  tracker = createInterruptionTracker(),
}: {
  readonly script: ModelScript
  readonly info?: Partial<ModelInfo>
  readonly tracker?: InterruptionTracker
}): ScriptedChatModel {
  const requests: ModelRequest[] = []
  const nextStep = (request: ModelRequest): ScriptedModelStep | Effect.Effect<ScriptedModelStep> => {
    const callIndex = requests.length
    requests.push(request)
    if (typeof script === 'function') return script(request, callIndex)
    const step = script[callIndex]
    if (step === undefined) throw new Error(`scripted model: no step ${callIndex + 1} in a script of ${script.length}`)
    return step
  }
  return {
    info: { ...SCRIPTED_MODEL_INFO, ...info },
    requests,
    tracker,
    stream: (request) =>
      Effect.suspend(() => {
        const next = nextStep(request)
        const step = Effect.isEffect(next) ? next : Effect.succeed(next)
        return tracked({ tracker, name: 'model', effect: Effect.flatMap(step, (decided) => playStep({ step: decided, request })) })
      }),
  }
}

function playStep({ step, request }: { readonly step: ScriptedModelStep; readonly request: ModelRequest }): Effect.Effect<ModelResult, ModelError> {
  if (step.kind === 'defect') return Effect.die(step.defect)
  const stream = Effect.forEach(
    [
      ...(step.kind === 'result' ? (step.thinking ?? []).map((text) => ({ type: 'thinking' as const, text })) : []),
      ...(step.deltas ?? []).map((text) => ({ type: 'delta' as const, text })),
    ],
    (event) => Effect.sync(() => request.onEvent?.(event)).pipe(Effect.andThen(Effect.yieldNow)),
    { discard: true },
  )
  switch (step.kind) {
    case 'result':
      return stream.pipe(Effect.as(step.result))
    case 'error':
      return stream.pipe(Effect.andThen(Effect.fail(step.error)))
    case 'hang':
      return stream.pipe(Effect.andThen(Effect.never))
  }
}

// ── result builders ──────────────────────────────────────────────────────────────────────

export function textResult(text: string, finishReason: ModelResult['finishReason'] = 'stop'): ModelResult {
  return { text, thinking: '', toolCalls: [], finishReason, rawFinishReason: finishReason, usage: undefined }
}

export function toolCall({
  id,
  name,
  args,
  raw,
  index = 0,
}: {
  readonly id: string
  readonly name: string
  readonly args?: Record<string, unknown>
  /** Raw argument text, for invalid arguments. */
  readonly raw?: string
  readonly index?: number
}): AssembledToolCall {
  if (raw !== undefined) {
    return { index, id, name, rawArguments: raw, argumentsJson: undefined, argumentsError: 'invalid JSON' }
  }
  const json = JSON.stringify(args ?? {})
  return { index, id, name, rawArguments: json, argumentsJson: json, argumentsError: undefined }
}

export function toolCallsResult(calls: ReadonlyArray<AssembledToolCall>, text = ''): ModelResult {
  return {
    text,
    thinking: '',
    toolCalls: calls.map((call, index) => ({ ...call, index })),
    finishReason: 'tool_calls',
    rawFinishReason: 'tool_calls',
    usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
  }
}

// ── scripted turn actors ─────────────────────────────────────────────────────────────────

export type ToolScript = (input: RunToolInput, callIndex: number) => Effect.Effect<RunToolOutput>

export const TEST_TOOLS = ['ls', 'read', 'search', 'status'].map((name) => ({
  type: 'function' as const,
  function: { name, description: `${name} in the selected scope`, parameters: { type: 'object', properties: {} } },
}))

/** A `prepare` that accepts any URI: system prompt + history + the question. */
export function acceptingPrepare(input: PrepareInput): PrepareOutput {
  return {
    ok: true,
    scopeUri: input.uri,
    scopeKind: 'directory',
    messages: [{ role: 'system', content: 'You are KnowAgent (test).' }, ...input.history, { role: 'user', content: input.question }],
    tools: input.model.supportsNativeToolCalling ? TEST_TOOLS : [],
  }
}

/** A tool that echoes its call as a small JSON result. */
export const echoTool: ToolScript = (input) =>
  Effect.succeed({
    ok: true,
    content: JSON.stringify({ tool: input.call.name, arguments: input.call.arguments }),
    summary: `${input.call.name} ok`,
  })

export function createScriptedTurnActors({
  model,
  tracker = model.tracker,
  prepare = (input) => Effect.succeed(acceptingPrepare(input)),
  preStep = () => Effect.succeed({}),
  runTool = echoTool,
}: {
  readonly model: ScriptedChatModel
  readonly tracker?: InterruptionTracker
  readonly prepare?: (input: PrepareInput) => Effect.Effect<PrepareOutput>
  readonly preStep?: (input: PreStepInput) => Effect.Effect<PreStepOutput>
  readonly runTool?: ToolScript
}) {
  let toolCallIndex = 0
  const modelActors = chatModelTurnActors(model)
  return {
    prepare: fromEffect<PrepareOutput, PrepareInput>(({ input }) => tracked({ tracker, name: 'prepare', effect: prepare(input) })),
    preStep: fromEffect<PreStepOutput, PreStepInput>(({ input }) => tracked({ tracker, name: 'preStep', effect: preStep(input) })),
    callModel: modelActors.callModel,
    compact: modelActors.compact,
    runTool: fromEffect<RunToolOutput, RunToolInput>(({ input }) =>
      tracked({ tracker, name: 'runTool', effect: Effect.suspend(() => runTool(input, toolCallIndex++)) }),
    ),
  }
}
