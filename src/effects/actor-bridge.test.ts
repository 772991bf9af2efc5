import * as Effect from 'effect/Effect'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { assign, createActor, setup, toPromise } from 'xstate'
import { createScriptedModel, textResult } from '../../tests/support/scripted-model.ts'
import { COMPACTION_INSTRUCTION } from '../machines/compaction-plan.ts'
import type { ModelStreamForwardEvent } from '../machines/turn-contract.ts'
import { EffectActorFailure, fromEffect } from './actor-bridge.ts'
import { callModelEffect, compactEffect, modelErrorToCallOutput } from './turn/model-actors.ts'
import {
  ProviderConnectionError,
  ProviderHttpError,
  ProviderProtocolError,
  ProviderStreamError,
  StreamIdleTimeout,
  StreamIncomplete,
} from './llm/model-errors.ts'
import type { ModelError } from './llm/model.ts'

/** A log of what happened, which a test can await entry by entry instead of polling or sleeping. */
function awaitableLog() {
  const entries: string[] = []
  const waiters = new Map<string, Array<() => void>>()
  return {
    entries,
    push: (entry: string) => {
      entries.push(entry)
      for (const wake of waiters.get(entry) ?? []) wake()
      waiters.delete(entry)
    },
    reached: (entry: string): Promise<void> =>
      entries.includes(entry)
        ? Promise.resolve()
        : new Promise((resolve) => waiters.set(entry, [...(waiters.get(entry) ?? []), resolve])),
  }
}

/** An Effect that holds a resource until interrupted, logging when its finalizers run. */
function holdResource(log: ReturnType<typeof awaitableLog>) {
  return Effect.scoped(
    Effect.gen(function* () {
      yield* Effect.acquireRelease(
        Effect.sync(() => log.push('acquired')),
        () => Effect.sync(() => log.push('released')),
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => log.push('finalized')))
      return yield* Effect.never
    }),
  ).pipe(Effect.onInterrupt(() => Effect.sync(() => log.push('interrupted'))))
}

/** Resolves once the signal is aborted (at once if it already is). */
const aborted = (signal: AbortSignal): Promise<void> =>
  signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))

describe('fromEffect', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('outputs what the Effect succeeds with', async () => {
    const actor = createActor(fromEffect<number, { n: number }>(({ input }) => Effect.succeed(input.n * 2)), { input: { n: 21 } })
    actor.start()
    expect(await toPromise(actor)).toBe(42)
  })

  // Stopping must interrupt at once, not after a grace period or a poll: with the timer clock
  // frozen, the interruption and every finalizer still complete, and no timer is left behind.
  it('interrupts the Effect when the actor stops, running its finalizers, without waiting on any timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] })
    const log = awaitableLog()
    const actor = createActor(fromEffect(() => holdResource(log)))
    actor.start()
    await log.reached('acquired')
    actor.stop()
    await log.reached('interrupted')
    expect(log.entries).toEqual(['acquired', 'finalized', 'released', 'interrupted'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('interrupts the Effect when the parent machine leaves the invoking state', async () => {
    const log = awaitableLog()
    const machine = setup({
      types: { events: {} as { type: 'leave' } },
      actors: { hold: fromEffect(() => holdResource(log)) },
    }).createMachine({
      initial: 'running',
      states: {
        running: { invoke: { src: 'hold' }, on: { leave: 'left' } },
        left: {},
      },
    })
    const actor = createActor(machine).start()
    await log.reached('acquired')
    actor.send({ type: 'leave' })
    await log.reached('interrupted')
    expect(log.entries).toEqual(['acquired', 'finalized', 'released', 'interrupted'])
    expect(actor.getSnapshot().value).toBe('left')
    actor.stop()
  })

  it('aborts the signal the Effect passed on (to fetch, a query, a child process)', async () => {
    const started = Promise.withResolvers<AbortSignal>()
    const actor = createActor(
      fromEffect(() =>
        Effect.promise((signal) => {
          started.resolve(signal)
          return new Promise<never>(() => {})
        }),
      ),
    )
    actor.start()
    const seen = await started.promise
    expect(seen.aborted).toBe(false)
    actor.stop()
    await aborted(seen) // settles only once the Effect's own signal is aborted
  })

  it('hands the Effect the actor signal', async () => {
    const started = Promise.withResolvers<AbortSignal>()
    const actor = createActor(fromEffect(({ signal }) => Effect.sync(() => started.resolve(signal)).pipe(Effect.andThen(Effect.never))))
    actor.start()
    const signal = await started.promise
    expect(signal).toBeInstanceOf(AbortSignal)
    expect(signal.aborted).toBe(false)
    actor.stop()
    expect(signal.aborted).toBe(true)
  })

  it.each([
    ['a defect, as the thrown value', Effect.die(new Error('bug')), (error: unknown) => expect(error).toEqual(new Error('bug'))],
    [
      'an unmapped failure, as EffectActorFailure',
      Effect.fail('expected but unmapped'),
      (error: unknown) => {
        expect(error).toBeInstanceOf(EffectActorFailure)
        expect(String(error)).toContain('expected but unmapped')
      },
    ],
  ] as const)('reports %s to onError', async (_, effect, check) => {
    const machine = setup({ actors: { work: fromEffect<never, void, unknown>(() => effect) } }).createMachine({
      context: { error: undefined as unknown },
      initial: 'working',
      states: {
        working: { invoke: { src: 'work', onError: { target: 'crashed', actions: assign({ error: ({ event }) => event.error }) } } },
        crashed: { type: 'final' },
      },
    })
    const actor = createActor(machine).start()
    await toPromise(actor)
    check(actor.getSnapshot().context.error)
  })

  it('does not run the Effect at all for an actor that never starts', () => {
    let ran = false
    createActor(fromEffect(() => Effect.sync(() => (ran = true))))
    expect(ran).toBe(false)
  })
})

describe('callModelEffect', () => {
  it('streams deltas and thinking to the parent, then outputs the result', async () => {
    const result = textResult('Hello')
    const model = createScriptedModel({ script: [{ kind: 'result', thinking: ['plan'], deltas: ['He', 'llo'], result }] })
    const forwarded: ModelStreamForwardEvent[] = []
    const output = await Effect.runPromise(
      callModelEffect({
        model,
        input: { messages: [{ role: 'user', content: 'hi' }], tools: [], purpose: 'step', parent: { send: (event) => forwarded.push(event) } },
      }),
    )
    expect(output).toEqual({ ok: true, result })
    expect(forwarded).toEqual([
      { type: 'model.thinking', text: 'plan' },
      { type: 'model.delta', text: 'He' },
      { type: 'model.delta', text: 'llo' },
    ])
    expect(model.requests[0]!.tools).toBeUndefined()
  })

  const errors: Array<[ModelError, string, string]> = [
    [new ProviderHttpError({ status: 429, code: 'rate_limited', message: 'slow down', retryAfterMs: 1000 }), 'provider.http', ''],
    [new ProviderConnectionError({ message: 'ECONNREFUSED' }), 'provider.connection', ''],
    [new ProviderStreamError({ code: 'overloaded', message: 'try later', partialText: 'par' }), 'provider.stream_error', 'par'],
    [new StreamIncomplete({ message: 'EOF without [DONE]', partialText: 'half' }), 'provider.incomplete', 'half'],
    [new StreamIdleTimeout({ idleMs: 30_000, partialText: 'idle' }), 'provider.idle_timeout', 'idle'],
    [new ProviderProtocolError({ message: 'not JSON', partialText: 'x' }), 'provider.protocol', 'x'],
  ]

  it.each(errors)('maps %s to data', async (error, code, partialText) => {
    const model = createScriptedModel({ script: [{ kind: 'error', error }] })
    const output = await Effect.runPromise(
      callModelEffect({ model, input: { messages: [], tools: [], purpose: 'step', parent: { send: () => {} } } }),
    )
    expect(output).toEqual(modelErrorToCallOutput(error))
    expect(output).toMatchObject({ ok: false, code, partialText })
  })
})

describe('compactEffect', () => {
  const input = { messages: [{ role: 'user' as const, content: 'earlier question about kb://users/a/x.md' }], instruction: COMPACTION_INSTRUCTION }

  it('sends the instruction and the transcript, without tools, and outputs the summary', async () => {
    const model = createScriptedModel({ script: [{ kind: 'result', result: textResult('Summary.') }] })
    expect(await Effect.runPromise(compactEffect({ model, input }))).toEqual({ ok: true, summary: 'Summary.', usage: undefined })
    expect(model.requests[0]!.messages).toEqual([
      { role: 'system', content: COMPACTION_INSTRUCTION },
      { role: 'user', content: '[user]\nearlier question about kb://users/a/x.md' },
    ])
    expect(model.requests[0]!.tools).toBeUndefined()
  })

  it.each([
    ['a cut-short summary', textResult('Summ', 'length'), 'compaction.incomplete'],
    ['an empty summary', textResult('  '), 'compaction.empty'],
  ] as const)('refuses %s', async (_, result, code) => {
    const model = createScriptedModel({ script: [{ kind: 'result', result }] })
    expect(await Effect.runPromise(compactEffect({ model, input }))).toMatchObject({ ok: false, code })
  })

  it('maps provider errors to data', async () => {
    const model = createScriptedModel({ script: [{ kind: 'error', error: new ProviderConnectionError({ message: 'down' }) }] })
    expect(await Effect.runPromise(compactEffect({ model, input }))).toMatchObject({ ok: false, code: 'provider.connection' })
  })
})
