import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pdfBomb } from '../../../../tests/support/bombs.ts'
import { expectFailure, expectText, fixture, utf8 } from '../../../../tests/support/documents.ts'
import * as Effect from 'effect/Effect'
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

/** Whether a process is alive (a zombie not yet reaped counts as gone). */
const isAlive = (pid: number): boolean => {
  if (!existsSync(`/proc/${pid}/stat`)) return false
  return readFileSync(`/proc/${pid}/stat`, 'latin1').replace(/^.*\) /s, '')[0] !== 'Z'
}

/** The pids of the parser processes a parser starts. */
const recordProcesses = (parser: DocumentParser, pids: number[] = []): number[] => {
  parser.onActivity((activity) => {
    if (activity.type === 'process' && activity.state === 'started') pids.push(activity.pid)
  })
  return pids
}

const FIXTURE = new URL('../../../../tests/support/parse-child-fixture.ts', import.meta.url)

const withParser = async <A>(options: DocumentParserOptions, use: (parser: DocumentParser) => Promise<A>): Promise<A> => {
  const parser = makeDocumentParser({ processes: 1, ...options })
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

  it('parses in a child process exactly what parseDocument gives in this process, from bytes or from a file', async () => {
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
    // 36 MB of small arrays: JSON.parse allocates past a 48 MB heap in one native step, which
    // V8 answers by ending the whole process. In a worker thread that was the server itself.
    const json = utf8(`[${'[1,2,3,4,5,6,7,8],'.repeat(2_000_000)}[]]`)
    await withParser({ memoryLimitMb: 48 }, async (parser) => {
      const pids = recordProcesses(parser)
      expect(expectFailure(await parser.parse({ name: 'big.json', bytes: json }), 'memory_limit')).toBe(
        'memory limit: parsing needed more than 48 MB (limits.parseMemoryMb); raw bytes kept',
      )
      expect(expectText(await parser.parse({ name: 'a.json', bytes: utf8('{"ok":true}') }))).toBe('{\n  "ok": true\n}')
      expect(pids).toHaveLength(2) // the first process died; a new one parsed the next file
      expect(isAlive(pids[0]!)).toBe(false)
    })
  })

  it('survives a parser process that V8 aborts or that exits on its own, each as its own outcome', async () => {
    await withParser({ entry: FIXTURE, memoryLimitMb: 64 }, async (parser) => {
      expect(expectFailure(await parser.parse({ name: 'fatal-oom' }), 'memory_limit')).toBe(
        'memory limit: parsing needed more than 64 MB (limits.parseMemoryMb); raw bytes kept',
      )
      expect(expectFailure(await parser.parse({ name: 'exit-3' }), 'parser_failed')).toBe('the parser failed unexpectedly: its process exited with code 3')
      expect(expectText(await parser.parse({ name: 'still here' }))).toBe('still here')
    })
  })

  it('gives a parser process none of the server environment (no keys, no loader flags) and the heap limit', async () => {
    process.env.KNOWAGENT_TEST_SECRET = 'sk-must-not-reach-a-parser'
    try {
      await withParser({ entry: FIXTURE, memoryLimitMb: 200 }, async (parser) => {
        const seen = JSON.parse(expectText(await parser.parse({ name: 'env' }))) as { env: Record<string, string>; execArgv: string[] }
        expect(Object.keys(seen.env).sort()).toEqual(['LANG', 'NODE_OPTIONS', 'PATH'])
        expect(seen.env.NODE_OPTIONS).toBe('')
        expect(seen.execArgv).toEqual(['--max-old-space-size=200'])
      })
    } finally {
      delete process.env.KNOWAGENT_TEST_SECRET
    }
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

  it('leaves no parser process behind after close, and answers later requests as cancelled', async () => {
    const parser = makeDocumentParser({ processes: 2 })
    const pids = recordProcesses(parser)
    try {
      await Promise.all([parser.parse({ name: 'a.pdf', bytes: fixture('sample.pdf') }), parser.parse({ name: 'b.docx', bytes: fixture('sample.docx') })])
      expect(pids).toHaveLength(2)
      expect(pids.every(isAlive)).toBe(true) // idle, not yet timed out
    } finally {
      await parser.close()
    }
    expect(pids.filter(isAlive)).toEqual([]) // every one has exited and been reaped
    expect(expectFailure(await parser.parse({ name: 'a.md', bytes: utf8('x') }), 'aborted')).toBe('parsing was cancelled: the parser is shut down')
  })

  it('ends an idle parser process after idleTimeoutMs; the next parse starts a new one', async () => {
    await withParser({ idleTimeoutMs: 50 }, async (parser) => {
      const pids = recordProcesses(parser)
      const exited = new Promise<number>((resolve) => parser.onActivity((activity) => activity.type === 'process' && activity.state === 'exited' && resolve(activity.pid)))
      expect(expectText(await parser.parse({ name: 'a.md', bytes: utf8('one') }))).toBe('one')
      expect(await exited).toBe(pids[0])
      expect(expectText(await parser.parse({ name: 'b.md', bytes: utf8('two') }))).toBe('two')
      expect(pids).toHaveLength(2)
    })
  })

  it('as an Effect layer: the pool lives as long as its scope, and its processes exit when the scope closes', async () => {
    const pids: number[] = []
    const text = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const parser = yield* DocumentParserService
          recordProcesses(parser, pids)
          const outcome = yield* Effect.promise(() => parser.parse({ name: 'a.md', bytes: utf8('# in a scope') }))
          expect(pids.every(isAlive)).toBe(true)
          return expectText(outcome)
        }).pipe(Effect.provide(DocumentParserService.layer({ processes: 1 }))),
      ),
    )
    expect(text).toBe('# in a scope')
    expect(pids).toHaveLength(1)
    expect(pids.filter(isAlive)).toEqual([])
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
