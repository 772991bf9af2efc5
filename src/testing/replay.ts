// `replay(path, { actors })`: one generated path through the real machine, with the kit's scripted
// actors for whatever you do not provide, and the machine's contract checked at the end. It throws
// a `ContractViolation` naming the path and the rule; it never needs a test runner.
import { isDeepStrictEqual } from 'node:util'
import * as Effect from 'effect/Effect'
import type { AnyActorLogic } from 'xstate'
import type { ModelRequest } from '../effects/llm/model.ts'
import {
  type CallModelOutput,
  catalogRefreshMachine,
  type CompactOutput,
  type CompileJobOutput,
  compileJobMachine,
  DEFAULT_TURN_LIMITS,
  isCompactionRequest,
  type PrepareOutput,
  type RunToolInput,
  toolPairingProblems,
  type TurnOutput,
  turnMachine,
} from '../machines/index.ts'
import type { CatalogRefreshPath } from './catalog-refresh-paths.ts'
import { COMPILE_JOB_TIMEOUT_EVENT, type CompileJobActorId, type CompileJobPath, serializeCompileJobState } from './compile-job-paths.ts'
import type { Reached } from './coverage.ts'
import { serializeCatalogRefreshState } from './catalog-refresh-paths.ts'
import { type ContractRule, ContractViolation, type RunRecord, runPath, Waiters } from './path-runner.ts'
import { type ActorOutcomeEvent, isActorOutcome, outcomeActor } from './paths.ts'
import { createScriptedModel, createScriptedTurnActors, type ScriptedModelStep, textResult } from './scripted-model.ts'
import { TURN_INCOMPLETE_ERROR, type TurnActorId, type TurnPath, serializeTurnState } from './turn-paths.ts'

export { type ContractRule, ContractViolation } from './path-runner.ts'

export interface ReplayOptions<TActorId extends string> {
  /** Your actors: they replace the kit's scripted ones and run for real. */
  readonly actors?: Partial<Record<TActorId, AnyActorLogic>>
  /** How long to wait for the machine (or a provided actor) to get to the next step. Default 2000 ms. */
  readonly timeoutMs?: number
}

export interface ReplayResult<TOutput> extends Reached {
  readonly path: string
  readonly output: TOutput
  /**
   * Set when provided actors took the machine off the path (their outcomes are their own): where,
   * and what the path expected. The run was stopped there, and the contract still checked.
   */
  readonly diverged?: { readonly at: number; readonly expected: string; readonly actual: string } | undefined
}

export function replay(path: TurnPath, options?: ReplayOptions<TurnActorId>): Promise<ReplayResult<TurnOutput>>
export function replay(path: CompileJobPath, options?: ReplayOptions<CompileJobActorId>): Promise<ReplayResult<CompileJobOutput>>
export function replay(path: CatalogRefreshPath, options?: ReplayOptions<'fetchCatalog'>): Promise<ReplayResult<undefined>>
export function replay(
  path: TurnPath | CompileJobPath | CatalogRefreshPath,
  options: ReplayOptions<string> = {},
): Promise<ReplayResult<unknown>> {
  switch (path.machine) {
    case 'turn':
      return replayTurn(path, options)
    case 'compile-job':
      return replayCompileJob(path, options)
    case 'catalog-refresh':
      return replayCatalogRefresh(path, options)
  }
}

// ── shared checks ───────────────────────────────────────────────────────────────────────────

type Check = (rule: ContractRule, ok: boolean, detail: () => string) => void

function checker(path: string): Check {
  return (rule, ok, detail) => {
    if (!ok) throw new ContractViolation({ path, rule, detail: detail() })
  }
}

const show = (value: unknown): string => {
  if (value === undefined) return 'undefined'
  const text = JSON.stringify(value)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

function providedOf(options: ReplayOptions<string>): Record<string, AnyActorLogic> {
  return Object.fromEntries(Object.entries(options.actors ?? {}).filter((entry): entry is [string, AnyActorLogic] => entry[1] !== undefined))
}

function checkCommon({ record, path, check }: { record: RunRecord; path: { readonly events: ReadonlyArray<{ type: string }>; readonly states: ReadonlyArray<string> }; check: Check }) {
  check('exactly one terminal outcome', record.snapshot.status === 'done', () =>
    record.snapshot.status === 'error' ? `the machine crashed instead of ending: ${String(record.snapshot.error)}` : `the machine ended with status ${record.snapshot.status}`,
  )
  for (const leak of record.leaks) {
    check('cancel releases every actor', false, () => `${leak.run.actorId} still holds ${leak.held} after the machine stopped it (does it ignore its abort signal?)`)
  }
  if (record.leaks.length > 0) return
  const strict = record.runs.every((run) => !run.provided)
  if (!strict) return
  check('follows the path', isDeepStrictEqual(record.observed, path.states), () => `states seen: ${record.observed.join(' → ')}; the path: ${path.states.join(' → ')}`)
  const outcomes = path.events.filter(isActorOutcome)
  check('follows the path', isDeepStrictEqual(record.received.map((event) => event.type), outcomes.map((event) => event.type)), () =>
    `outcomes received: ${record.received.map((event) => event.type).join(', ')}; the path: ${outcomes.map((event) => event.type).join(', ')}`,
  )
  // A stop interrupts exactly the scripted actor that was running, nothing else.
  const last = path.events.at(-1)
  const stoppedWhileRunning = last !== undefined && !isActorOutcome(last) ? record.runs.filter((run) => !run.settled).map((run) => run.actorId) : []
  check('cancel releases every actor', isDeepStrictEqual([...record.interrupted].sort(), [...stoppedWhileRunning].sort()), () =>
    `interrupted: [${record.interrupted.join(', ')}], running at the stop: [${stoppedWhileRunning.join(', ')}]`,
  )
}

function result<TOutput>(record: RunRecord, path: { readonly name: string }): ReplayResult<TOutput> {
  return { path: path.name, output: record.snapshot.output as TOutput, diverged: record.diverged, stateNodes: record.stateNodes, transitions: record.transitions }
}

// ── the turn ────────────────────────────────────────────────────────────────────────────────

function modelStepFor(event: ActorOutcomeEvent): ScriptedModelStep {
  if ('error' in event) return { kind: 'defect', defect: event.error }
  if (outcomeActor(event) === 'callModel') {
    const output = event.output as CallModelOutput
    if (output.ok) return { kind: 'result', thinking: ['Looking…'], deltas: ['Streamed'], result: output.result }
    return { kind: 'error', deltas: ['Partial answer'], error: TURN_INCOMPLETE_ERROR }
  }
  const output = event.output as CompactOutput
  if (output.ok) return { kind: 'result', result: textResult(output.summary) }
  return { kind: 'error', error: TURN_INCOMPLETE_ERROR }
}

function turnOutputProblem(actorId: string, output: unknown): string | undefined {
  const value = output as Record<string, unknown> | undefined
  const isString = (key: string) => typeof value?.[key] === 'string'
  if (value === null || typeof value !== 'object') return `${actorId} returned ${show(output)}, not an object`
  switch (actorId) {
    case 'prepare':
      if (value.ok === true) return Array.isArray(value.messages) && Array.isArray(value.tools) && isString('scopeUri') ? undefined : `prepare returned ${show(output)}: ok needs scopeUri, messages and tools`
      return value.ok === false && isString('code') && isString('message') ? undefined : `prepare returned ${show(output)}: a refusal needs ok: false, code and message`
    case 'callModel': {
      const result = value.result as Record<string, unknown> | undefined
      if (value.ok === true) return typeof result?.text === 'string' && Array.isArray(result?.toolCalls) && typeof result?.finishReason === 'string' ? undefined : `callModel returned ${show(output)}: ok needs a result with text, toolCalls and finishReason`
      return value.ok === false && isString('code') && isString('message') ? undefined : `callModel returned ${show(output)}: a failure needs ok: false, code, message and partialText`
    }
    case 'compact':
      return (value.ok === true && isString('summary')) || (value.ok === false && isString('code') && isString('message')) ? undefined : `compact returned ${show(output)}`
    default:
      return undefined
  }
}

async function replayTurn(path: TurnPath, options: ReplayOptions<string>): Promise<ReplayResult<TurnOutput>> {
  const waiters = new Waiters()
  const outcome = (actorId: string) => waiters.outcomeFor(actorId)
  const model = createScriptedModel({
    script: (request: ModelRequest) => outcome(isCompactionRequest(request.messages) ? 'compact' : 'callModel').pipe(Effect.map(modelStepFor)),
  })
  const take = <A>(actorId: string) => outcome(actorId).pipe(Effect.flatMap((event) => ('error' in event ? Effect.die(event.error) : Effect.succeed(event.output as A))))
  const scripted = createScriptedTurnActors({
    model,
    prepare: () => take<PrepareOutput>('prepare'),
    preStep: () => take('preStep'),
    runTool: () => take('runTool'),
  })
  const input = path.profile.input
  const record = await runPath({
    path,
    machine: turnMachine,
    input,
    waiters,
    scripted: { ...scripted },
    provided: providedOf(options),
    serialize: (snapshot) => serializeTurnState(snapshot, path.profile.detail),
    deliver: ({ actor, event }) => actor.send(event),
    stopEvent: { type: 'user.stop' },
    timeoutMs: options.timeoutMs ?? 2_000,
  })
  const check = checker(path.name)

  for (const run of record.runs.filter((one) => one.provided && one.settled && one.error === undefined)) {
    if (run.actorId === 'runTool') {
      const output = run.output as Record<string, unknown> | undefined
      const call = (run.input as RunToolInput | undefined)?.call
      check(
        'every tool call has exactly one result',
        typeof output?.ok === 'boolean' && typeof output?.content === 'string' && typeof output?.summary === 'string',
        () => `runTool answered call ${call?.id} (${call?.name}) with ${show(run.output)}, not a result { ok, content, summary }`,
      )
    } else {
      const problem = turnOutputProblem(run.actorId, run.output)
      check('actor output matches the contract', problem === undefined, () => problem!)
    }
  }
  checkCommon({ record, path, check })
  const output = record.snapshot.output as TurnOutput
  check('exactly one terminal outcome', ['done', 'failed', 'cancelled'].includes(output?.status), () => `output ${show(output)}`)
  const terminal = record.emitted.filter((event) => event.type === 'done' || event.type === 'error')
  check('terminal record written once', terminal.length === 1 && record.emitted.at(-1) === terminal[0], () =>
    `${terminal.length} terminal events (${terminal.map((event) => event.type).join(', ')}), the last event emitted was ${record.emitted.at(-1)?.type}`,
  )
  const problems = toolPairingProblems(output.messages)
  check('every tool call has exactly one result', problems.length === 0, () => problems.join('; '))
  const started = record.emitted.filter((event) => event.type === 'tool' && event.phase === 'start').map((event) => event.call_id)
  const ended = record.emitted.filter((event) => event.type === 'tool' && event.phase === 'end').map((event) => event.call_id)
  check('every tool call has exactly one result', started.every((id) => ended.filter((one) => one === id).length <= 1), () => `tool end events: ${ended.join(', ')}`)

  const limits = { ...DEFAULT_TURN_LIMITS, ...input.limits }
  const runsOf = (actorId: string) => record.runs.filter((run) => run.actorId === actorId).length
  check('limits honoured', output.counters.modelSteps <= limits.maxModelSteps && runsOf('callModel') <= limits.maxModelSteps, () => `${runsOf('callModel')} model steps, the limit is ${limits.maxModelSteps}`)
  check('limits honoured', output.counters.modelCalls <= limits.maxModelCalls && runsOf('callModel') + runsOf('compact') <= limits.maxModelCalls, () => `${runsOf('callModel') + runsOf('compact')} model calls, the limit is ${limits.maxModelCalls}`)
  check('limits honoured', output.counters.toolCalls <= limits.maxToolCalls && runsOf('runTool') <= limits.maxToolCalls, () => `${runsOf('runTool')} tool runs, the limit is ${limits.maxToolCalls}`)
  check('limits honoured', (record.maxConcurrent.runTool ?? 0) <= 1 && (record.maxConcurrent.callModel ?? 0) <= 1, () => 'actors ran concurrently')

  if (record.runs.every((run) => !run.provided)) {
    const expected = path.finalState.output
    check('follows the path', output.status === expected?.status && output.error?.code === expected?.error?.code, () =>
      `ended ${output.status} ${output.error?.code ?? ''}, the path ends ${expected?.status} ${expected?.error?.code ?? ''}`,
    )
    const outcomes = path.events.filter(isActorOutcome)
    record.received.forEach((got, index) => {
      const want = outcomes[index]!
      if ('error' in want) check('follows the path', (got.error as Error | undefined)?.message === want.error.message, () => `step ${index + 1}: ${String(got.error)}`)
      else if (want.type !== 'xstate.done.actor.preStep') check('follows the path', isDeepStrictEqual(got.output, want.output), () => `step ${index + 1} (${want.type}): ${show(got.output)}, the path: ${show(want.output)}`)
    })
  }
  return result(record, path)
}

// ── the compile job ─────────────────────────────────────────────────────────────────────────

async function replayCompileJob(path: CompileJobPath, options: ReplayOptions<string>): Promise<ReplayResult<CompileJobOutput>> {
  const waiters = new Waiters()
  const input = path.profile.input
  const scripted = Object.fromEntries(['begin', 'parse', 'summarise', 'overview', 'abstract', 'publish'].map((id) => [id, waiters.actor(id)]))
  const record = await runPath({
    path,
    machine: compileJobMachine,
    input,
    waiters,
    scripted,
    provided: providedOf(options),
    serialize: serializeCompileJobState,
    deliver: ({ actor, event, clock, fail }) => {
      if (event.type !== COMPILE_JOB_TIMEOUT_EVENT) return actor.send(event)
      const before = serializeCompileJobState(actor.getSnapshot() as never)
      clock.increment(input.timeoutMs - 1)
      const early = serializeCompileJobState(actor.getSnapshot() as never)
      if (early !== before) fail('limits honoured', `the attempt timed out before its ${input.timeoutMs} ms (at ${early})`)
      clock.increment(1)
    },
    stopEvent: { type: 'job.cancel' },
    timeoutMs: options.timeoutMs ?? 2_000,
  })
  const check = checker(path.name)
  checkCommon({ record, path, check })
  const output = record.snapshot.output as CompileJobOutput
  check('exactly one terminal outcome', output?.status !== undefined, () => `output ${show(output)}`)
  check('limits honoured', output.progress.callsUsed <= input.callBudget, () => `${output.progress.callsUsed} model calls, the budget is ${input.callBudget}`)
  const publishes = record.runs.filter((run) => run.actorId === 'publish').length
  check('terminal record written once', publishes <= 1, () => `publish ran ${publishes} times`)
  const progress = record.emitted.map((event) => ({ filesDone: Number(event.filesDone), callsUsed: Number(event.callsUsed), stage: String(event.stage) }))
  progress.forEach((event, index) => {
    const before = progress[index - 1]
    if (before) check('terminal record written once', event.filesDone >= before.filesDone && event.callsUsed >= before.callsUsed, () => `progress went back: ${show(before)} then ${show(event)}`)
  })
  check('terminal record written once', (progress.at(-1)?.stage ?? 'queued') === output.progress.stage, () => `the last progress says ${progress.at(-1)?.stage}, the output ${output.progress.stage}`)
  if (record.runs.every((run) => !run.provided)) {
    const expected = path.finalState.output!
    const code = (one: CompileJobOutput) => ('failure' in one ? one.failure.code : undefined)
    check('follows the path', output.status === expected.status && code(output) === code(expected), () => `ended ${output.status} ${code(output) ?? ''}, the path ends ${expected.status} ${code(expected) ?? ''}`)
  }
  return result(record, path)
}

// ── the catalog refresher ───────────────────────────────────────────────────────────────────

async function replayCatalogRefresh(path: CatalogRefreshPath, options: ReplayOptions<string>): Promise<ReplayResult<undefined>> {
  const waiters = new Waiters()
  const record = await runPath({
    path,
    machine: catalogRefreshMachine,
    input: path.profile.input,
    waiters,
    scripted: { fetchCatalog: waiters.actor('fetchCatalog') },
    provided: providedOf(options),
    serialize: serializeCatalogRefreshState,
    deliver: ({ actor, event }) => actor.send(event),
    stopEvent: { type: 'refresher.stop' },
    timeoutMs: options.timeoutMs ?? 2_000,
  })
  const check = checker(path.name)
  checkCommon({ record, path, check })
  check('limits honoured', (record.maxConcurrent.fetchCatalog ?? 0) <= 1, () => `${record.maxConcurrent.fetchCatalog} fetches ran at once`)
  const emitted = record.emitted.map((event) => ({ type: event.type, generation: Number(event.generation), ok: event.ok }))
  const started = emitted.filter((event) => event.type === 'refresh.started').map((event) => event.generation)
  const settled = emitted.filter((event) => event.type === 'refresh.settled').map((event) => event.generation)
  const inFlight = record.runs.some((run) => run.actorId === 'fetchCatalog' && !run.settled) ? 1 : 0
  check('terminal record written once', isDeepStrictEqual(settled, started.slice(0, started.length - inFlight)), () =>
    `generations started [${started.join(', ')}], settled [${settled.join(', ')}]`,
  )
  // Every acknowledged trigger is answered by the fetch it was promised, unless the stop came first.
  const lastStarted = started.at(-1) ?? 0
  for (const accepted of emitted.filter((event) => event.type === 'refresh.accepted')) {
    check('terminal record written once', settled.includes(accepted.generation) || accepted.generation >= lastStarted, () => `trigger for generation ${accepted.generation} was never answered`)
  }
  if (record.runs.every((run) => !run.provided)) {
    const failures = path.events.filter((event) => event.label === 'failed' || event.label === 'crash').length
    const failedSettles = emitted.filter((event) => event.type === 'refresh.settled' && !event.ok).length
    check('follows the path', failedSettles === failures, () => `${failedSettles} failed refreshes, the path has ${failures}`)
  }
  return result(record, path)
}
