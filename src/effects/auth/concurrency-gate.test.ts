import { describe, expect, it } from 'vitest'
import { createConcurrencyGate, GateBusy } from './concurrency-gate.ts'

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

describe('createConcurrencyGate', () => {
  it('runs at most `concurrency` tasks at once and starts the next as one finishes', async () => {
    const gate = createConcurrencyGate({ concurrency: 2, maxWaiting: 10 })
    const tasks = Array.from({ length: 5 }, () => deferred())
    const started: number[] = []
    const results = tasks.map((task, i) =>
      gate.run(async () => {
        started.push(i)
        await task.promise
        return i
      }),
    )
    await Promise.resolve()
    expect(started).toEqual([0, 1])
    expect([gate.active(), gate.waiting()]).toEqual([2, 3])
    tasks[1]!.resolve()
    await results[1]
    await Promise.resolve()
    expect(started).toEqual([0, 1, 2])
    for (const task of tasks) task.resolve()
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4])
    expect([gate.active(), gate.waiting()]).toEqual([0, 0])
  })

  it('refuses at once when the queue is full, and a failing task frees its slot', async () => {
    const gate = createConcurrencyGate({ concurrency: 1, maxWaiting: 1 })
    const first = deferred()
    const running = gate.run(() => first.promise.then(() => Promise.reject(new Error('boom'))))
    const queued = gate.run(async () => 'queued')
    await expect(gate.run(async () => 'refused')).rejects.toBeInstanceOf(GateBusy)
    first.resolve()
    await expect(running).rejects.toThrow('boom')
    await expect(queued).resolves.toBe('queued')
    expect(gate.active()).toBe(0)
  })
})
