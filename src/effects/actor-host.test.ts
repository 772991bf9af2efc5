import { describe, expect, it } from 'vitest'
import { assign, emit, fromPromise, setup } from 'xstate'
import { runActor } from './actor-host.ts'

/** A small machine: waits on a `work` actor, emits `tick` events, stops to `cancelled` on `stop`. */
function makeMachine(work: (signal: AbortSignal) => Promise<string>) {
  return setup({
    types: {
      input: {} as { readonly label: string },
      output: {} as { readonly status: string; readonly value?: string | undefined; readonly reason?: unknown },
      context: {} as { label: string; status: string; value?: string; reason?: unknown },
      events: {} as { type: 'stop'; reason: unknown },
      emitted: {} as { type: 'tick'; label: string },
    },
    actors: { work: fromPromise<string, void>(({ signal }) => work(signal)) },
  }).createMachine({
    context: ({ input }) => ({ label: input.label, status: 'working' }),
    initial: 'working',
    on: { stop: { target: '.cancelled', actions: assign({ reason: ({ event }) => event.reason }) } },
    states: {
      working: {
        entry: emit(({ context }) => ({ type: 'tick' as const, label: context.label })),
        invoke: { src: 'work', onDone: { target: 'done', actions: assign({ value: ({ event }) => event.output }) }, onError: 'failed' },
      },
      done: { type: 'final', entry: assign({ status: 'done' }) },
      failed: { type: 'final', entry: assign({ status: 'failed' }) },
      cancelled: { type: 'final', entry: assign({ status: 'cancelled' }) },
    },
    output: ({ context }) => ({ status: context.status, value: context.value, reason: context.reason }),
  })
}

describe('runActor', () => {
  it('resolves with the output and forwards emitted events in order', async () => {
    const events: unknown[] = []
    const output = await runActor({
      logic: makeMachine(async () => 'result'),
      input: { label: 'a' },
      signal: new AbortController().signal,
      stopEvent: (reason) => ({ type: 'stop' as const, reason }),
      onEmitted: (event) => events.push(event),
    })
    expect(output).toEqual({ status: 'done', value: 'result', reason: undefined })
    expect(events).toEqual([{ type: 'tick', label: 'a' }])
  })

  it('turns an abort into the stop event, and the running child sees its own signal abort', async () => {
    const controller = new AbortController()
    let childSignal: AbortSignal | undefined
    const output = runActor({
      logic: makeMachine(
        (signal) =>
          new Promise<string>(() => {
            childSignal = signal
            controller.abort('disconnect')
          }),
      ),
      input: { label: 'b' },
      signal: controller.signal,
      stopEvent: (reason) => ({ type: 'stop' as const, reason }),
    })
    await expect(output).resolves.toEqual({ status: 'cancelled', value: undefined, reason: 'disconnect' })
    expect(childSignal?.aborted).toBe(true)
  })

  it('stops at once when the signal is already aborted', async () => {
    let started = 0
    const output = await runActor({
      logic: makeMachine(async () => {
        started++
        return 'x'
      }),
      input: { label: 'c' },
      signal: AbortSignal.abort('shutdown'),
      stopEvent: (reason) => ({ type: 'stop' as const, reason }),
    })
    expect(output.status).toBe('cancelled')
    expect(output.reason).toBe('shutdown')
  })

  it('a throwing listener is reported, and the machine still finishes', async () => {
    const reported: unknown[] = []
    const output = await runActor({
      logic: makeMachine(async () => 'ok'),
      input: { label: 'd' },
      signal: new AbortController().signal,
      stopEvent: (reason) => ({ type: 'stop' as const, reason }),
      onEmitted: () => {
        throw new Error('listener broke')
      },
      onListenerError: (error) => reported.push((error as Error).message),
    })
    expect(output.status).toBe('done')
    expect(reported).toEqual(['listener broke'])
  })

  it('releases its abort listener when it ends', async () => {
    const controller = new AbortController()
    let stops = 0
    await runActor({
      logic: makeMachine(async () => 'ok'),
      input: { label: 'e' },
      signal: controller.signal,
      stopEvent: (reason) => {
        stops++
        return { type: 'stop' as const, reason }
      },
    })
    controller.abort('late')
    expect(stops).toBe(0)
  })
})
