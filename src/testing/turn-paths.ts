// The abstract model of a turn's environment for model-based testing: which outcome each
// invoked actor may report in each state (the event alphabet), how snapshots are abstracted
// (serializeTurnState), the input profiles that make every branch reachable, and the paths.
import { getSimplePaths } from '@xstate/graph'
import type { AnyStateMachine, SnapshotFrom } from 'xstate'
import { modelErrorToCallOutput } from '../effects/turn/model-actors.ts'
import { StreamIncomplete } from '../effects/llm/model-errors.ts'
import {
  type CallModelOutput,
  type ChatMessage,
  type CompactOutput,
  estimateMessagesBytes,
  type ModelResult,
  type PrepareOutput,
  type RunToolOutput,
  type TurnInput,
  turnMachine,
} from '../machines/index.ts'
import { type ActorOutcomeEvent, crash, describeEvents, done, type MachinePath, narrowToProvided } from './paths.ts'
import { acceptingPrepare, SCRIPTED_MODEL_INFO, textResult, toolCall, toolCallsResult } from './scripted-model.ts'

export type TurnSnapshot = SnapshotFrom<typeof turnMachine>

export const TURN_SCOPE = 'kb://users/alice/notes/'

/** The actors a host provides to the turn machine (`turnMachine.provide({ actors })`). */
export const TURN_ACTORS = ['prepare', 'preStep', 'callModel', 'compact', 'runTool'] as const
export type TurnActorId = (typeof TURN_ACTORS)[number]

export type TurnPathEvent =
  | ActorOutcomeEvent
  | { readonly type: 'user.stop'; readonly label: string }
  | { readonly type: 'limit.turn_time'; readonly label: string; readonly seconds: number }

export interface TurnAlphabet {
  readonly prepare: boolean
  /** Tool-call batches the model may ask for. */
  readonly toolBatches: ReadonlyArray<ReadonlyArray<string>>
  /** Tool result sizes (characters), e.g. small/medium/big/oversized. */
  readonly toolOutputs: ReadonlyArray<number>
  readonly modelFailures: boolean
  readonly compactFailures: boolean
  readonly preStepFailure: boolean
}

export interface TurnProfile {
  readonly name: string
  readonly detail: TurnDetail
  readonly input: TurnInput
  readonly alphabet: TurnAlphabet
}

// ── fixed outcomes (shared by the model and the scripted actors) ─────────────────────────


export const TURN_INCOMPLETE_ERROR = new StreamIncomplete({ message: 'EOF without [DONE]', partialText: 'Partial answer' })
export const SMALL_SUMMARY = 'Summary: the user asked earlier questions; files were read.'
export const LARGE_SUMMARY = 'padding '.repeat(3_000)

/** Tool-call ids unique across the whole graph, all of one length (so sizes do not drift). */
let lastCallNumber = 0
function nextCallId(): string {
  lastCallNumber++
  return `call_${String(lastCallNumber).padStart(5, '0')}`
}

function modelStep(label: string, result: ModelResult): ActorOutcomeEvent {
  return done('callModel', label, { ok: true, result } satisfies CallModelOutput)
}

function toolBatchResult(names: ReadonlyArray<string>): ModelResult {
  return toolCallsResult(
    names.map((name) => {
      const id = nextCallId()
      return toolCall({ id, name, args: name === 'read' ? { uri: `${TURN_SCOPE}${id}.md` } : {} })
    }),
  )
}

function toolOutput(size: number): RunToolOutput {
  return { ok: true, content: 'x'.repeat(size), summary: `${size} characters` }
}

// ── the alphabet: outcomes possible in each resting state ────────────────────────────────

/**
 * The events possible in a resting state. Where the host provides the running actor itself, its
 * outcome is its own: the path holds one representative success (labelled `provided`), and the stop.
 */
export function turnEventsIn({
  snapshot,
  profile,
  provided = [],
}: {
  readonly snapshot: TurnSnapshot
  readonly profile: TurnProfile
  readonly provided?: ReadonlyArray<TurnActorId>
}): TurnPathEvent[] {
  return narrowToProvided(scriptedEventsIn({ snapshot, profile }), provided)
}

function scriptedEventsIn({ snapshot, profile }: { readonly snapshot: TurnSnapshot; readonly profile: TurnProfile }): TurnPathEvent[] {
  const { alphabet, input } = profile
  const stop: TurnPathEvent = { type: 'user.stop', label: 'stop' }
  // The host's clock, where a turn waits longest: on the model's stream and on a tool.
  const overTime: TurnPathEvent = { type: 'limit.turn_time', label: 'over time', seconds: 600 }
  if (snapshot.status !== 'active') return []
  if (snapshot.matches('preparing')) {
    return [
      done('prepare', 'ok', acceptingPrepare(input)),
      ...(alphabet.prepare
        ? [done('prepare', 'refused', { ok: false, code: 'not_found', message: `${input.uri} does not exist` } satisfies PrepareOutput), crash('prepare')]
        : []),
      stop,
    ]
  }
  if (snapshot.matches('preStep')) {
    return [done('preStep', 'unchanged', {}), ...(alphabet.preStepFailure ? [crash('preStep')] : []), stop]
  }
  if (snapshot.matches('compacting')) {
    return [
      done('compact', 'small', { ok: true, summary: SMALL_SUMMARY, usage: undefined } satisfies CompactOutput),
      ...(alphabet.compactFailures
        ? [
            done('compact', 'large', { ok: true, summary: LARGE_SUMMARY, usage: undefined } satisfies CompactOutput),
            done('compact', 'incomplete', { ok: false, code: modelErrorToCallOutput(TURN_INCOMPLETE_ERROR).code, message: modelErrorToCallOutput(TURN_INCOMPLETE_ERROR).message } satisfies CompactOutput),
            crash('compact'),
          ]
        : []),
      stop,
    ]
  }
  if (snapshot.matches('callingModel')) {
    return [
      modelStep('answer', textResult(`Answer citing ${TURN_SCOPE}f1.md`)),
      ...alphabet.toolBatches.map((names) => modelStep(`tools:${names.join('+')}`, toolBatchResult(names))),
      ...(alphabet.modelFailures
        ? [
            modelStep('length', textResult('Cut sho', 'length')),
            modelStep('content_filter', textResult('', 'content_filter')),
            modelStep('tool_calls-without-calls', toolCallsResult([])),
            done('callModel', 'incomplete', modelErrorToCallOutput(TURN_INCOMPLETE_ERROR)),
            crash('callModel'),
          ]
        : []),
      overTime,
      stop,
    ]
  }
  if (snapshot.matches({ runningTools: 'executing' })) {
    return [...alphabet.toolOutputs.map((size) => done('runTool', `output:${size}`, toolOutput(size))), ...(alphabet.modelFailures ? [crash('runTool'), overTime] : []), stop]
  }
  return [stop]
}

// ── abstraction ──────────────────────────────────────────────────────────────────────────

/**
 * How much of the context a graph vertex keeps. Counters are never kept (only whether each
 * limit still allows another step/call/tool), so loops do not make the graph grow without end.
 * - `coarse`: enough where sizes never matter (a roomy window);
 * - `sizes`: also the role and byte size of every message, which is what compaction decisions
 *   depend on; in a small window that is bounded, since the input cannot grow past the limit.
 */
export type TurnDetail = 'coarse' | 'sizes'

export function serializeTurnState(snapshot: TurnSnapshot, detail: TurnDetail): string {
  const { context } = snapshot
  return JSON.stringify({
    value: snapshot.value,
    status: snapshot.status,
    stepsLeft: context.counters.modelSteps < context.input.limits.maxModelSteps,
    // Capped where sizes do not matter; exact where they do: there a long path (observations that
    // are turned into errors, compactions) can reach one vertex with different counts, and a capped
    // count would let the graph continue from the wrong one.
    callsLeft: detail === 'sizes' ? context.input.limits.maxModelCalls - context.counters.modelCalls : Math.min(2, context.input.limits.maxModelCalls - context.counters.modelCalls),
    toolsLeft: context.counters.toolCalls < context.input.limits.maxToolCalls,
    compacting: context.compactionCycleBefore !== undefined,
    pendingCalls: context.plannedCalls.length - context.answeredCalls,
    ...(detail === 'sizes' ? { messages: context.messages.map((message) => `${message.role}:${estimateMessagesBytes([message])}`) } : {}),
  })
}

// ── profiles ─────────────────────────────────────────────────────────────────────────────

const NO_FAILURES: TurnAlphabet = {
  prepare: false,
  toolBatches: [['read']],
  toolOutputs: [100],
  modelFailures: false,
  compactFailures: false,
  preStepFailure: false,
}

function baseInput(overrides: Partial<TurnInput>): TurnInput {
  return { turnId: 'turn-model', uri: TURN_SCOPE, question: `What is in ${TURN_SCOPE}?`, history: [], model: SCRIPTED_MODEL_INFO, ...overrides }
}

/** A window no turn of these tests can fill. */
const ROOMY_MODEL = { ...SCRIPTED_MODEL_INFO, contextWindow: 1_000_000 }

/** A window whose input limit is 3000 bytes. */
const SMALL_MODEL = { ...SCRIPTED_MODEL_INFO, contextWindow: 3_000 + 500 + 1_024, maxOutputTokens: 500 }

const QUESTION_REPEATS = 172
/** An observation that fits beside the question, but not with a summary of the earlier ones too. */
const TIGHT_OUTPUT = 2_000

function earlierExchange(n: number): ChatMessage[] {
  return [
    { role: 'user', content: `Earlier question ${n} about ${TURN_SCOPE}old-${n}.md` },
    { role: 'assistant', content: `Earlier answer ${n}: ${'see the file. '.repeat(60)}` },
  ]
}

export const TURN_PROFILES: ReadonlyArray<TurnProfile> = [
  {
    name: 'roomy window, default limits, every failure',
    detail: 'coarse',
    input: baseInput({ model: ROOMY_MODEL }),
    alphabet: {
      prepare: true,
      toolBatches: [['read'], ['shell', 'read']],
      toolOutputs: [100, 30_000],
      modelFailures: true,
      compactFailures: false,
      preStepFailure: true,
    },
  },
  { name: 'one model step', detail: 'coarse', input: baseInput({ limits: { maxModelSteps: 1 } }), alphabet: NO_FAILURES },
  { name: 'one model call', detail: 'coarse', input: baseInput({ limits: { maxModelSteps: 2, maxModelCalls: 1 } }), alphabet: NO_FAILURES },
  { name: 'one tool call', detail: 'coarse', input: baseInput({ limits: { maxToolCalls: 1 } }), alphabet: { ...NO_FAILURES, toolBatches: [['read', 'read']] } },
  {
    name: 'history over a small window',
    detail: 'sizes',
    input: baseInput({ model: SMALL_MODEL, history: [1, 2, 3].flatMap(earlierExchange) }),
    alphabet: { ...NO_FAILURES, compactFailures: true },
  },
  {
    name: 'growing observations in a small window',
    detail: 'sizes',
    // Six model calls: room for steps and compactions to interleave, while an observation too large
    // for the window (2,300 bytes: turned into a tool error, the turn goes on) keeps the graph finite.
    input: baseInput({ model: SMALL_MODEL, limits: { maxModelCalls: 6, maxModelSteps: 12 } }),
    alphabet: { ...NO_FAILURES, toolOutputs: [900, TIGHT_OUTPUT, 2_300] },
  },
  {
    // The question alone fills the window: context.over_limit before any call.
    name: 'a question over a small window',
    detail: 'sizes',
    input: baseInput({ model: SMALL_MODEL, question: `About ${TURN_SCOPE}: ${'a long question '.repeat(200)}` }),
    alphabet: NO_FAILURES,
  },
  {
    // Earlier history to compact beside a question that nearly fills the window: once the history
    // is a summary there is nothing left to compact and it is still over (compaction.not_converging).
    name: 'a large question with history over a small window',
    detail: 'sizes',
    input: baseInput({ model: SMALL_MODEL, question: `About ${TURN_SCOPE}: ${'a long question '.repeat(QUESTION_REPEATS)}`, history: [1, 2, 3].flatMap(earlierExchange) }),
    alphabet: NO_FAILURES,
  },
  {
    name: 'growing observations, three model calls',
    detail: 'sizes',
    input: baseInput({ model: SMALL_MODEL, limits: { maxModelCalls: 3, maxModelSteps: 12 } }),
    alphabet: { ...NO_FAILURES, toolOutputs: [900, 2_300] },
  },
]

export interface TurnPath extends MachinePath<'turn', TurnProfile, TurnPathEvent, TurnSnapshot> {
  /** The actors the host provides on this path (their outcomes are theirs, not the path's). */
  readonly provided: ReadonlyArray<TurnActorId>
}

export interface TurnPathOptions {
  /** Default: every profile of TURN_PROFILES. */
  readonly profiles?: ReadonlyArray<TurnProfile>
  /** The actors you provide to `replay`: their outcomes in each path are left to them. */
  readonly provided?: ReadonlyArray<TurnActorId>
}

/** The graph steps with actor outcomes too, which the machine's own event type does not list. */
const steppedByOutcomes: AnyStateMachine = turnMachine

/** The simple paths of each profile's graph that end in a final state. */
export function turnPaths({ profiles = TURN_PROFILES, provided = [] }: TurnPathOptions = {}): TurnPath[] {
  return profiles.flatMap((profile) =>
    getSimplePaths(steppedByOutcomes, {
      input: profile.input,
      serializeState: (snapshot) => serializeTurnState(snapshot, profile.detail),
      events: (snapshot) => turnEventsIn({ snapshot, profile, provided }),
    })
      .filter((path) => path.state.status === 'done')
      .map((path): TurnPath => {
        const events = path.steps.slice(1).map((step) => step.event)
        const output = path.state.output
        return {
          machine: 'turn',
          profile,
          provided,
          name: `${profile.name}: ${describeEvents(events, `${output?.status}${output?.error ? ` ${output.error.code}` : ''}`)}`,
          events,
          states: path.steps.map((step) => serializeTurnState(step.state, profile.detail)),
          finalState: path.state,
        }
      }),
  )
}
