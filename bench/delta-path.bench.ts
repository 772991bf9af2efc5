// The per-delta cost (CPU and heap allocation) of each layer of knowagent's streaming path,
// in-process, no network:
//
//   npx node bin/run-ts.mjs bench/delta-path.bench.ts [--deltas 2000] [--streams 50]
//
// (it re-runs itself with --expose-gc and a 256 MB young generation, so that allocation can be
// read from heapUsed with no GC in between; a row shows "–" if a GC happened anyway)
//
// 1. provider bytes → delta events: the chat-completions SSE parser (createChatCompletionStreamParser),
//    one provider frame per push, as the network delivers them at a moderate pace
// 2. delta event → turn runtime event: the real turn machine (turnMachine + chatModelTurnActors over
//    a fake ChatModel that calls onEvent synchronously), listened to with actor.on('*') like runTurn
// 3. runtime event → SSE frame: formatSseEvent, the SSE writer's send, and the JSON projector's
//    delta path (SseWriter.sendJson, what the server does per delta)
// and, for comparison, what a delta costs through a minimal XState machine (emit only; assign +
// emit) and through a plain callback. CPU: µs per delta, median of 5 rounds of STREAMS × DELTAS.
// Allocation: bytes per delta over one stream of DELTAS deltas.
//
// Then what the turn machine costs per turn, whatever its deltas: a one-delta turn through the
// real machine (text: one model step; tools: an `ls` call, then the answer) with actors that do
// no work, against the same sequence of calls and events as plain async functions. The
// difference is what running a turn as an XState machine costs in itself (docs/performance.md).
import * as Effect from 'effect/Effect'
import { fork } from 'node:child_process'
import { PerformanceObserver } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { assign, createActor, emit, setup } from 'xstate'
import { fromEffect } from '../src/effects/actor-bridge.ts'
import { chatModelTurnActors } from '../src/effects/turn/model-actors.ts'
import { createChatCompletionStreamParser } from '../src/effects/llm/chat-completion-stream.ts'
import type { ChatModel, ModelRequest, ModelResult } from '../src/effects/llm/model.ts'
import { makeToolRegistry } from '../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../src/effects/tools/workspace-tools.ts'
import type { Response } from 'express'
import { formatSseEvent, openSse } from '../src/http/sse.ts'
import { jsonTurnProjector } from '../src/http/turn-stream.ts'
import {
  turnMachine,
  type PrepareInput,
  type PrepareOutput,
  type PreStepInput,
  type PreStepOutput,
  type RunToolInput,
  type RunToolOutput,
  type TurnEmitted,
  type TurnOutput,
} from '../src/machines/index.ts'
import { BENCH_MODEL, deltaText } from './lib/protocol.ts'
import { formatNumber, markdownTable, percentileSorted, sortedCopy } from './lib/stats.ts'

const CHILD_FLAGS = ['--expose-gc', '--max-semi-space-size=256', '--min-semi-space-size=256']
if (!process.execArgv.includes('--expose-gc')) {
  const runTs = fileURLToPath(new URL('../bin/run-ts.mjs', import.meta.url))
  const child = fork(runTs, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { execArgv: [...process.execArgv, ...CHILD_FLAGS], stdio: 'inherit' })
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  process.exit(code ?? 1)
}

const { values } = parseArgs({ options: { deltas: { type: 'string', default: '2000' }, streams: { type: 'string', default: '50' } } })
const DELTAS = Number(values.deltas)
const STREAMS = Number(values.streams)
const ROUNDS = 5

const encoder = new TextEncoder()
const frames = Array.from({ length: DELTAS }, (_, index) =>
  encoder.encode(
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: BENCH_MODEL, choices: [{ index: 0, delta: { content: deltaText(index) }, finish_reason: null }] })}\n\n`,
  ),
)
const finishFrame = encoder.encode(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`)
const texts = Array.from({ length: DELTAS }, (_, index) => deltaText(index))
const answer = texts.join('')
const modelResult: ModelResult = { text: answer, thinking: '', toolCalls: [], finishReason: 'stop', rawFinishReason: 'stop', usage: undefined }

type Scenario = (streams: number) => Promise<void> | void

let gcCount = 0
new PerformanceObserver((list) => void (gcCount += list.getEntries().length)).observe({ entryTypes: ['gc'] })

/** CPU µs per unit (a delta unless `per` says otherwise) of `run` over STREAMS streams, median over rounds. */
async function measureCpu(run: Scenario, per = DELTAS): Promise<number> {
  await run(STREAMS) // warm-up
  const samples: number[] = []
  for (let round = 0; round < ROUNDS; round += 1) {
    globalThis.gc?.()
    const before = process.cpuUsage()
    await run(STREAMS)
    const used = process.cpuUsage(before)
    samples.push((used.user + used.system) / (STREAMS * per))
  }
  return percentileSorted(sortedCopy(samples), 50)
}

/** Bytes allocated per unit over one stream (NaN if a GC ran during it). */
async function measureAllocation(run: Scenario, per = DELTAS): Promise<number> {
  await run(1)
  globalThis.gc?.()
  await new Promise((resolve) => setTimeout(resolve, 20)) // let the gc observer entries land
  gcCount = 0
  const before = process.memoryUsage().heapUsed
  await run(1)
  const after = process.memoryUsage().heapUsed
  await new Promise((resolve) => setTimeout(resolve, 20))
  return gcCount === 0 ? (after - before) / per : Number.NaN
}

async function measure(run: Scenario, per = DELTAS): Promise<[number, number]> {
  return [await measureCpu(run, per), await measureAllocation(run, per)]
}

// 1. the provider-side parser
const parser = (streams: number) => {
  for (let stream = 0; stream < streams; stream += 1) {
    let count = 0
    const parse = createChatCompletionStreamParser({ onEvent: () => void (count += 1) })
    for (const frame of frames) parse.pushBytes(frame)
    parse.pushBytes(finishFrame)
    if (count !== DELTAS || parse.state().status !== 'succeeded') throw new Error('parser: wrong result')
  }
}

// 2. the real turn machine, with stub prepare/preStep/runTool and a fake model
const fakeModel: ChatModel = {
  info: { id: 'fake', name: 'Fake', profile: 'bench', contextWindow: 131_072, maxOutputTokens: 8192, supportsNativeToolCalling: true },
  stream: (request: ModelRequest) =>
    Effect.sync(() => {
      for (const text of texts) request.onEvent?.({ type: 'delta', text })
      return modelResult
    }),
}
const machine = turnMachine.provide({
  actors: {
    prepare: fromEffect<PrepareOutput, PrepareInput>(({ input }) =>
      Effect.succeed({
        ok: true,
        scopeUri: 'kb://users/bench/',
        scopeKind: 'directory',
        messages: [
          { role: 'system', content: 'You are KnowAgent.' },
          { role: 'user', content: input.question },
        ],
        tools: makeToolRegistry(WORKSPACE_TOOLS).schemas,
      }),
    ),
    preStep: fromEffect<PreStepOutput, PreStepInput>(() => Effect.succeed({})),
    runTool: fromEffect<RunToolOutput, RunToolInput>(() => Effect.succeed({ ok: true, content: '{}', summary: '' })),
    ...chatModelTurnActors(fakeModel),
  },
})
const turnOnce = (onEvent: (event: TurnEmitted) => void, logic: typeof machine = machine) =>
  new Promise<TurnOutput>((resolve, reject) => {
    const actor = createActor(logic, {
      input: { turnId: 't', uri: 'kb://me/', question: 'q', history: [], model: fakeModel.info },
    })
    const subscription = actor.on('*', (event) => onEvent(event as TurnEmitted))
    actor.subscribe({
      complete: () => {
        subscription.unsubscribe()
        resolve(actor.getSnapshot().output as TurnOutput)
      },
      error: reject,
    })
    actor.start()
  })
const turns = async (streams: number) => {
  const runs = Array.from({ length: streams }, async () => {
    let count = 0
    const output = await turnOnce((event) => {
      if (event.type === 'delta') count += 1
    })
    if (count !== DELTAS || output.status !== 'done') throw new Error(`turn machine: ${count} deltas, status ${output.status}`)
  })
  await Promise.all(runs)
}
// The same, with the deltas also formatted as SSE frames (what the route does per delta).
const turnsWithSse = async (streams: number) => {
  let bytes = 0
  await Promise.all(
    Array.from({ length: streams }, () =>
      turnOnce((event) => {
        if (event.type === 'delta') {
          const { type, ...data } = event
          bytes += formatSseEvent(type, data).length
        }
      }),
    ),
  )
  if (bytes === 0) throw new Error('no bytes')
}

// 3. SSE framing alone
const sseOnly = (streams: number) => {
  let bytes = 0
  for (let stream = 0; stream < streams; stream += 1) for (const text of texts) bytes += formatSseEvent('delta', { text }).length
  if (bytes === 0) throw new Error('no bytes')
}

// 3b/3c. the SSE writer's send (framing + the keep-alive bookkeeping of every write), on a
// stand-in response whose write does nothing
const sseWriter = (projected: boolean) => (streams: number) => {
  let bytes = 0
  for (let stream = 0; stream < streams; stream += 1) {
    const fake = {
      status: () => fake,
      set: () => fake,
      flushHeaders: () => undefined,
      socket: { setNoDelay: () => undefined },
      write: (chunk: string) => {
        bytes += chunk.length
        return true
      },
      end: () => undefined,
      writableEnded: false,
      destroyed: false,
    }
    const sse = openSse(fake as unknown as Response, { keepAliveMs: 15_000 })
    if (projected) {
      const projector = jsonTurnProjector(sse)
      for (const text of texts) projector.progress({ type: 'delta', text })
    } else {
      for (const text of texts) sse.send('delta', { text })
    }
    sse.close()
  }
  if (bytes === 0) throw new Error('no bytes')
}

// Comparisons: a minimal XState machine, emit only / assign + emit, and a plain callback.
const tiny = setup({
  types: { context: {} as { streamed: string }, events: {} as { type: 'model.delta'; text: string }, emitted: {} as { type: 'delta'; text: string } },
}).createMachine({
  context: { streamed: '' },
  on: { 'model.delta': { actions: emit(({ event }) => ({ type: 'delta' as const, text: event.text })) } },
})
const tinyAssign = setup({
  types: { context: {} as { streamed: string }, events: {} as { type: 'model.delta'; text: string }, emitted: {} as { type: 'delta'; text: string } },
}).createMachine({
  context: { streamed: '' },
  on: {
    'model.delta': {
      actions: [assign(({ context, event }) => ({ streamed: context.streamed + event.text })), emit(({ event }) => ({ type: 'delta' as const, text: event.text }))],
    },
  },
})
const xstateMachine = (logic: typeof tiny | typeof tinyAssign) => (streams: number) => {
  for (let stream = 0; stream < streams; stream += 1) {
    const actor = createActor(logic).start()
    let count = 0
    actor.on('delta', () => void (count += 1))
    for (const text of texts) actor.send({ type: 'model.delta', text })
    actor.stop()
    if (count !== DELTAS) throw new Error('tiny machine: wrong count')
  }
}
const plainCallback = (streams: number) => {
  for (let stream = 0; stream < streams; stream += 1) {
    let streamed = ''
    let count = 0
    const onDelta = (text: string) => {
      streamed += text
      count += 1
    }
    for (const text of texts) onDelta(text)
    if (count !== DELTAS || streamed.length !== answer.length) throw new Error('callback: wrong count')
  }
}

// 4. per turn: a one-delta turn through the real machine, and the same calls as plain code
const TURNS = 20
const lsCall = { index: 0, id: 'call_ls', name: 'ls', rawArguments: '{"uri":"kb://me/"}', argumentsJson: '{"uri":"kb://me/"}', argumentsError: undefined }
const oneDeltaModel: ChatModel = {
  info: fakeModel.info,
  stream: (request: ModelRequest) =>
    Effect.sync((): ModelResult => {
      // the tools turn: the first step asks for `ls`, the step after its result answers
      if (request.tools !== undefined && request.tools.length > 0 && !request.messages.some((message) => message.role === 'tool')) {
        return { text: '', thinking: '', toolCalls: [lsCall], finishReason: 'tool_calls', rawFinishReason: 'tool_calls', usage: undefined }
      }
      request.onEvent?.({ type: 'delta', text: texts[0]! })
      return { text: texts[0]!, thinking: '', toolCalls: [], finishReason: 'stop', rawFinishReason: 'stop', usage: undefined }
    }),
}
const toolSchemas = makeToolRegistry(WORKSPACE_TOOLS).schemas
const prepared = (question: string, withTools: boolean): PrepareOutput => ({
  ok: true,
  scopeUri: 'kb://users/bench/',
  scopeKind: 'directory',
  messages: [
    { role: 'system', content: 'You are KnowAgent.' },
    { role: 'user', content: question },
  ],
  tools: withTools ? toolSchemas : [],
})
const LS_RESULT: RunToolOutput = { ok: true, content: '{"entries":[{"name":"notes","kind":"directory"}],"total":1}', summary: '1 entry' }
const turnMachineFor = (withTools: boolean) =>
  turnMachine.provide({
    actors: {
      prepare: fromEffect<PrepareOutput, PrepareInput>(({ input }) => Effect.succeed(prepared(input.question, withTools))),
      preStep: fromEffect<PreStepOutput, PreStepInput>(() => Effect.succeed({})),
      runTool: fromEffect<RunToolOutput, RunToolInput>(() => Effect.succeed(LS_RESULT)),
      ...chatModelTurnActors(oneDeltaModel),
    },
  })
const machineTurns = (withTools: boolean) => {
  const logic = turnMachineFor(withTools)
  return async (streams: number) => {
    await Promise.all(
      Array.from({ length: streams }, async () => {
        for (let turn = 0; turn < TURNS; turn += 1) {
          let events = 0
          const output = await turnOnce(() => void (events += 1), logic)
          // context, delta, done; the tools turn adds tool start, tool end and a second context
          if (output.status !== 'done' || events !== (withTools ? 6 : 3)) throw new Error(`turn machine per turn: ${output.status}, ${events} events`)
        }
      }),
    )
  }
}
// The same steps without a machine: each actor's Effect run in turn, the same events emitted.
const plainTurns = (withTools: boolean) => async (streams: number) => {
  await Promise.all(
    Array.from({ length: streams }, async () => {
      for (let turn = 0; turn < TURNS; turn += 1) {
        let events = 0
        const emitted = (_event: TurnEmitted) => void (events += 1)
        const start = await Effect.runPromise(Effect.succeed(prepared('q', withTools)))
        if (!start.ok) throw new Error('prepare failed')
        let messages = start.messages
        for (let step = 1; step <= 2; step += 1) {
          await Effect.runPromise(Effect.succeed({}))
          emitted({ type: 'context', used: messages.length, limit: 0, window: 0, output_reserve: 0, protocol_reserve: 0, compactions: 0 })
          const result = await Effect.runPromise(oneDeltaModel.stream({ messages, tools: start.tools, onEvent: (event) => event.type === 'delta' && emitted({ type: 'delta', text: event.text }) }))
          if (result.toolCalls.length === 0) break
          messages = [...messages, { role: 'assistant', content: null, tool_calls: result.toolCalls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.rawArguments } })) }]
          for (const call of result.toolCalls) {
            emitted({ type: 'tool', phase: 'start', call_id: call.id, name: call.name, arguments: {} })
            const output = await Effect.runPromise(Effect.succeed(LS_RESULT))
            emitted({ type: 'tool', phase: 'end', call_id: call.id, name: call.name, arguments: {}, ok: output.ok, summary: output.summary })
            messages = [...messages, { role: 'tool', tool_call_id: call.id, content: output.content }]
          }
        }
        emitted({ type: 'done', finish_reason: 'stop' })
        if (events !== (withTools ? 6 : 3)) throw new Error(`plain turn: ${events} events`)
      }
    }),
  )
}

const rows: Array<[string, [number, number]]> = [
  ['1. chat-completions SSE parser (bytes → delta event)', await measure(parser)],
  ['2. turn machine: model.delta → emitted delta (real machine, actor bridge)', await measure(turns)],
  ['2+3. turn machine + SSE framing', await measure(turnsWithSse)],
  ['3. SSE framing (formatSseEvent)', await measure(sseOnly)],
  ['3b. SseWriter.send (framing + keep-alive timer), no-op response', await measure(sseWriter(false))],
  ['3c. jsonTurnProjector delta → SseWriter.sendJson, no-op response', await measure(sseWriter(true))],
  ['   minimal XState machine, emit only', await measure(xstateMachine(tiny))],
  ['   minimal XState machine, assign + emit', await measure(xstateMachine(tinyAssign))],
  ['   plain callback', await measure(plainCallback)],
]
const turnRows: Array<[string, [number, number]]> = [
  ['4a. turn machine, text turn (one step)', await measure(machineTurns(false), TURNS)],
  ['4b. the same steps as plain code', await measure(plainTurns(false), TURNS)],
  ['4c. turn machine, tools turn (ls, then the answer)', await measure(machineTurns(true), TURNS)],
  ['4d. the same steps as plain code', await measure(plainTurns(true), TURNS)],
]
const table = (unit: string, entries: Array<[string, [number, number]]>) =>
  markdownTable(
    ['layer', `CPU µs/${unit}`, `allocated bytes/${unit}`],
    entries.map(([name, [micros, bytes]]) => [name, formatNumber(micros, 2), Number.isNaN(bytes) ? '–' : Math.round(bytes).toLocaleString('en-US')]),
    [false, true, true],
  )
console.log(
  `knowagent delta path, Node ${process.version}: CPU µs per delta (median of ${ROUNDS} rounds of ${STREAMS} streams × ${DELTAS} deltas); ` +
    `bytes allocated per delta (one stream of ${DELTAS})\n`,
)
console.log(table('delta', rows))
console.log(`\nper one-delta turn, actors that do no work: CPU µs per turn (median of ${ROUNDS} rounds of ${STREAMS} streams × ${TURNS} turns); bytes allocated per turn (${TURNS} turns)\n`)
console.log(table('turn', turnRows))
