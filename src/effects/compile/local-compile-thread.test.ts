import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { makeLocalChannel } from './compile-channel.ts'
import { summaryRequest } from './compile-prompts.ts'
import { compileLocally } from './local-compile.ts'
import { type LocalCompiler, makeLocalCompileThread } from './local-compile-thread.ts'

const sentences = Array.from({ length: 6_000 }, (_, index) => `Sentence ${index} says the ${index % 7 === 0 ? 'worker' : 'queue'} keeps job ${index} in order.`)
// BIG keeps a step running for seconds (the tests that stop one mid-step); MEDIUM is a step long
// enough for the event loop to turn many times meanwhile, and cheap enough to run again inline.
const BIG = summaryRequest({ name: 'big.md', uri: 'kb://users/a/big.md', body: sentences.join(' '), skill: undefined, maxInputChars: 400_000 })
const MEDIUM = summaryRequest({ name: 'medium.md', uri: 'kb://users/a/medium.md', body: sentences.slice(0, 1_500).join(' '), skill: undefined, maxInputChars: 400_000 })
const small = (title: string) => summaryRequest({ name: title, uri: `kb://users/a/${title}`, body: 'One sentence. Another sentence.', skill: undefined, maxInputChars: 1_000 })
const HUNGRY = new URL('../../../tests/fixtures/compile/hungry-compile-worker.mjs', import.meta.url)

const opened: LocalCompiler[] = []
const open = (options?: Parameters<typeof makeLocalCompileThread>[0]): LocalCompiler => {
  const compiler = makeLocalCompileThread(options)
  opened.push(compiler)
  return compiler
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((compiler) => compiler.close()))
})


describe('the local compile thread', () => {
  it('writes what the local model writes, on another thread, while this event loop keeps turning', async () => {
    const compiler = open()
    expect(compiler.threadAlive()).toBe(false) // started on first use
    let turns = 0
    let running = true
    const tick = (): void => {
      if (!running) return
      turns += 1
      setImmediate(tick)
    }
    setImmediate(tick)
    const text = await compiler.compile(MEDIUM)
    running = false
    expect(text).toBe(compileLocally(MEDIUM))
    expect(compiler.threadAlive()).toBe(true)
    // The step is many milliseconds of CPU on one thread; on this one, no setImmediate could run meanwhile.
    expect(turns).toBeGreaterThan(10)
  })

  it('ends its thread after idling, and starts another for the next step', async () => {
    const compiler = open({ idleTimeoutMs: 20 })
    expect(await compiler.compile(small('a.md'))).toBe(compileLocally(small('a.md')))
    await vi.waitFor(() => expect(compiler.threadAlive()).toBe(false), { timeout: 5_000, interval: 10 })
    expect(await compiler.compile(small('b.md'))).toBe(compileLocally(small('b.md')))
  })

  it('stops a running step at once when its signal aborts: the thread ends, the next step gets a new one', async () => {
    const compiler = open()
    const controller = new AbortController()
    const running = compiler.compile(BIG, controller.signal)
    await vi.waitFor(() => expect(compiler.threadAlive()).toBe(true), { timeout: 5_000, interval: 5 })
    controller.abort()
    await expect(running).rejects.toMatchObject({ name: 'AbortError' })
    expect(compiler.threadAlive()).toBe(false)
    expect(await compiler.compile(small('after.md'))).toBe(compileLocally(small('after.md')))
  })

  it('drops a queued step whose signal aborts, and runs the rest in order', async () => {
    const compiler = open()
    const controller = new AbortController()
    const first = compiler.compile(small('first.md'))
    const dropped = compiler.compile(small('dropped.md'), controller.signal)
    const third = compiler.compile(small('third.md'))
    controller.abort()
    await expect(dropped).rejects.toMatchObject({ name: 'AbortError' })
    expect([await first, await third]).toEqual([compileLocally(small('first.md')), compileLocally(small('third.md'))])
  })

  it('rejects what is running and queued when closed, and every step after', async () => {
    const compiler = open()
    const running = expect(compiler.compile(BIG)).rejects.toThrow('the local compiler is closed')
    const queued = expect(compiler.compile(small('q.md'))).rejects.toThrow('the local compiler is closed')
    await compiler.close()
    await running
    await queued
    expect(compiler.threadAlive()).toBe(false)
    await expect(compiler.compile(small('late.md'))).rejects.toThrow('the local compiler is closed')
  })

  it('fails a step that outgrows the heap limit, and goes on with the next', async () => {
    const compiler = open({ entry: HUNGRY, maxOldGenerationSizeMb: 32 })
    await expect(compiler.compile(small('hungry'))).rejects.toThrow(/local compile thread/)
    expect(await compiler.compile(small('fed.md'))).toBe('echo fed.md')
  })
})

describe('the local channel on the thread', () => {
  it('is the thread’s text; interrupting the Effect ends the step', async () => {
    const compiler = open()
    const channel = makeLocalChannel(compiler)
    expect(await Effect.runPromise(channel.complete(small('c.md')))).toBe(compileLocally(small('c.md')))
    const controller = new AbortController()
    const running = Effect.runPromiseExit(channel.complete(BIG), { signal: controller.signal })
    await vi.waitFor(() => expect(compiler.threadAlive()).toBe(true), { timeout: 5_000, interval: 5 })
    controller.abort()
    expect(Exit.isFailure(await running)).toBe(true)
    expect(compiler.threadAlive()).toBe(false)
  })

  it('reports a failed step as a retryable local.failed', async () => {
    const channel = makeLocalChannel(open({ entry: HUNGRY, maxOldGenerationSizeMb: 32 }))
    const exit = await Effect.runPromiseExit(channel.complete(small('hungry')))
    expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain('local.failed')
  })
})
