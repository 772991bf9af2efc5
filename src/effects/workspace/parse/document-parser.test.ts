import diagnostics from 'node:diagnostics_channel'
import { readdirSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pdfBomb } from '../../../../tests/support/bombs.ts'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import { Effect } from 'effect'
import { DocumentParserService, makeDocumentParser, type DocumentParser, type DocumentParserOptions, type ParserActivity } from './document-parser.ts'
import { parseDocument } from './parse-document.ts'

const MB = 1024 * 1024

/** Resolves with the first activity that matches. */
const nextActivity = (parser: DocumentParser, type: ParserActivity['type']): Promise<ParserActivity> =>
  new Promise((resolve) => {
    const stop = parser.onActivity((activity) => {
      if (activity.type !== type) return
      stop()
      resolve(activity)
    })
  })

/** OS threads of this process (worker threads are OS threads). */
const threadCount = (): number => readdirSync('/proc/self/task').length

const withParser = async <A>(options: DocumentParserOptions, use: (parser: DocumentParser) => Promise<A>): Promise<A> => {
  const parser = makeDocumentParser({ threads: 1, ...options })
  try {
    return await use(parser)
  } finally {
    await parser.close()
  }
}

describe('makeDocumentParser', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'knowagent-parser-test-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('parses in a worker thread exactly what parseDocument gives in this thread, from bytes or from a file', async () => {
    const bytes = fixture('sample.pdf')
    const path = join(dir, 'sample.pdf')
    await writeFile(path, bytes)
    await withParser({}, async (parser) => {
      const here = await parseDocument({ name: 'sample.pdf', bytes })
      expect(await parser.parse({ name: 'sample.pdf', bytes })).toEqual(here)
      expect(await parser.parse({ name: 'sample.pdf', path })).toEqual(here)
      expect(expectText(here)).toContain('page one')
    })
  })

  it('refuses a file over maxBytes without reading it', async () => {
    const path = join(dir, 'big.txt')
    await writeFile(path, 'x'.repeat(11))
    await withParser({ limits: { maxBytes: 10 } }, async (parser) => {
      expect(expectFailure(await parser.parse({ name: 'big.txt', path }), 'too_large')).toBe(
        'file is too large to parse: 11 bytes, over the 10 bytes limit; raw bytes kept',
      )
    })
  })

  it('keeps this thread free while a worker decompresses a bomb', async () => {
    // The budget is set high enough that the worker is still busy when the check below runs.
    await withParser({ limits: { maxInflatedBytes: 2048 * MB }, memoryLimitMb: 2048 }, async (parser) => {
      const running = nextActivity(parser, 'running')
      let settled = false
      const parsing = parser.parse({ name: 'bomb.pdf', bytes: pdfBomb({ inflatedBytes: 1024 * MB }) }).finally(() => {
        settled = true
      })
      await running
      await new Promise((resolve) => setImmediate(resolve)) // a turn of this event loop
      expect(settled).toBe(false)
      await parser.close()
      expectFailure(await parsing, 'aborted')
    })
  })

  it('ends a parse that passes the memory limit with "memory limit", the worker terminated and replaced', async () => {
    await withParser({ limits: { maxInflatedBytes: 4096 * MB }, memoryLimitMb: 96 }, async (parser) => {
      const outcome = await parser.parse({ name: 'bomb.pdf', bytes: pdfBomb({ inflatedBytes: 1024 * MB }) })
      expect(expectFailure(outcome, 'memory_limit')).toBe('memory limit: parsing needed more than 96 MB (limits.parseMemoryMb); raw bytes kept')
      expect(expectText(await parser.parse({ name: 'a.md', bytes: utf8('# still here') }))).toBe('# still here')
    })
  })

  it('ends a parse whose heap passes the limit (V8 out of memory) with "memory limit", and the next parse works', async () => {
    const json = utf8(`[${'[1,2,3,4,5,6,7,8],'.repeat(600_000)}[]]`)
    await withParser({ memoryLimitMb: 48 }, async (parser) => {
      expectFailure(await parser.parse({ name: 'big.json', bytes: json }), 'memory_limit')
      expect(expectText(await parser.parse({ name: 'a.json', bytes: utf8('{"ok":true}') }))).toBe('{\n  "ok": true\n}')
    })
  })

  it('ends a parse that runs past its time limit with "time limit 30 s"; the limit starts when the worker does', async () => {
    const timers: Array<{ ms: number; fire: () => void }> = []
    const startTimer = (ms: number, fire: () => void) => {
      timers.push({ ms, fire })
      return () => undefined
    }
    await withParser({ startTimer, limits: { maxInflatedBytes: 2048 * MB }, memoryLimitMb: 2048 }, async (parser) => {
      const running = nextActivity(parser, 'running')
      const parsing = parser.parse({ name: 'bomb.pdf', bytes: pdfBomb({ inflatedBytes: 1024 * MB }) })
      await running
      expect(timers.map((timer) => timer.ms)).toEqual([30_000])
      timers[0]!.fire()
      expect(expectFailure(await parsing, 'time_limit')).toBe('time limit 30 s: parsing took longer (limits.parseTimeoutSeconds); raw bytes kept')
      expect(expectText(await parser.parse({ name: 'a.txt', bytes: utf8('next') }))).toBe('next')
    })
  })

  it('cancels a running parse when its signal aborts', async () => {
    await withParser({ limits: { maxInflatedBytes: 2048 * MB }, memoryLimitMb: 2048 }, async (parser) => {
      const controller = new AbortController()
      const running = nextActivity(parser, 'running')
      const parsing = parser.parse({ name: 'bomb.pdf', bytes: pdfBomb({ inflatedBytes: 1024 * MB }), signal: controller.signal })
      await running
      controller.abort()
      expect(expectFailure(await parsing, 'aborted')).toBe('parsing was cancelled')
    })
  })

  it('leaves no worker thread behind after close, and answers later requests as cancelled', async () => {
    await readFile(new URL(import.meta.url)) // the libuv pool's threads exist before the count
    const before = threadCount()
    const workers: Worker[] = []
    const onWorker = (message: unknown): void => void workers.push((message as { worker: Worker }).worker)
    diagnostics.subscribe('worker_threads', onWorker)
    const parser = makeDocumentParser({ threads: 2 })
    try {
      await Promise.all([parser.parse({ name: 'a.pdf', bytes: fixture('sample.pdf') }), parser.parse({ name: 'b.docx', bytes: fixture('sample.docx') })])
      expect(workers.length).toBeGreaterThan(0)
      expect(workers.every((worker) => worker.threadId > 0)).toBe(true) // idle, not yet timed out
      expect(threadCount()).toBeGreaterThan(before)
    } finally {
      await parser.close()
      diagnostics.unsubscribe('worker_threads', onWorker)
    }
    expect(workers.map((worker) => worker.threadId)).toEqual(workers.map(() => -1)) // every one has exited
    expect(threadCount()).toBeLessThanOrEqual(before)
    expect(expectFailure(await parser.parse({ name: 'a.md', bytes: utf8('x') }), 'aborted')).toBe('parsing was cancelled: the parser is shut down')
  })

  it('as an Effect layer: the pool lives as long as its scope, and its workers exit when the scope closes', async () => {
    const workers: Worker[] = []
    const onWorker = (message: unknown): void => void workers.push((message as { worker: Worker }).worker)
    diagnostics.subscribe('worker_threads', onWorker)
    try {
      const text = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const parser = yield* DocumentParserService
            const outcome = yield* Effect.promise(() => parser.parse({ name: 'a.md', bytes: utf8('# in a scope') }))
            return expectText(outcome)
          }).pipe(Effect.provide(DocumentParserService.layer({ threads: 1 }))),
        ),
      )
      expect(text).toBe('# in a scope')
    } finally {
      diagnostics.unsubscribe('worker_threads', onWorker)
    }
    expect(workers.length).toBeGreaterThan(0)
    expect(workers.map((worker) => worker.threadId)).toEqual(workers.map(() => -1))
  })

  it('has a test layer that fails loudly on a parse nobody expected', async () => {
    const program = Effect.gen(function* () {
      const parser = yield* DocumentParserService
      return yield* Effect.promise(async () => parser.parse({ name: 'unexpected.md', bytes: utf8('x') }))
    })
    await expect(Effect.runPromise(program.pipe(Effect.provide(DocumentParserService.layerTest())))).rejects.toThrow(
      'DocumentParserService.layerTest: unexpected parse of unexpected.md',
    )
    const stubbed = await Effect.runPromise(
      program.pipe(Effect.provide(DocumentParserService.layerTest(async () => ({ ok: true, mime: 'text/markdown', parser: 'stub', text: 'stubbed' })))),
    )
    expect(stubbed).toEqual({ ok: true, mime: 'text/markdown', parser: 'stub', text: 'stubbed' })
  })
})
