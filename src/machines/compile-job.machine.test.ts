import { afterEach, describe, expect, it, vi } from 'vitest'
import { createActor, fromPromise, toPromise } from 'xstate'
import type {
  ActorFailure,
  BeginOutput,
  CompileJobEmitted,
  CompileJobInput,
  ParseInput,
  ParseOutput,
  PublishInput,
  PublishOutput,
  StepOutput,
  SummariseInput,
} from './compile-job-contract.ts'
import { compileJobMachine } from './compile-job.machine.ts'

const FILES = [
  { nodeId: 'n1', uri: 'kb://users/a/d/one.md', name: 'one.md' },
  { nodeId: 'n2', uri: 'kb://users/a/d/two.bin', name: 'two.bin' },
  { nodeId: 'n3', uri: 'kb://users/a/d/three.md', name: 'three.md' },
]

const INPUT: CompileJobInput = { jobId: 'job-1', attempt: 1, maxAttempts: 3, files: FILES, callBudget: 8, timeoutMs: 60_000 }

const step = (text: string, calls = 1): StepOutput => ({ ok: true, text, calls, cached: calls === 0 })
const failure = (code: string, retryable = true): ActorFailure => ({ ok: false, code, message: `${code} happened`, retryable })

interface Overrides {
  begin?: () => Promise<BeginOutput>
  parse?: () => Promise<ParseOutput>
  summarise?: (input: SummariseInput, signal: AbortSignal) => Promise<StepOutput>
  overview?: () => Promise<StepOutput>
  abstract?: () => Promise<StepOutput>
  publish?: (input: PublishInput) => Promise<PublishOutput>
}

function machineWith(overrides: Overrides = {}) {
  return compileJobMachine.provide({
    actors: {
      begin: fromPromise(overrides.begin ?? (async () => ({ ok: true }) as const)),
      parse: fromPromise(
        overrides.parse ??
          (async () => ({
            ok: true as const,
            files: FILES.map((file) => (file.nodeId === 'n2' ? { ...file, readable: false, reason: 'binary' } : { ...file, readable: true })),
          })),
      ),
      summarise: fromPromise<StepOutput, SummariseInput>(({ input, signal }) =>
        overrides.summarise ? overrides.summarise(input, signal) : Promise.resolve(step(`summary of ${input.file.name}`)),
      ),
      overview: fromPromise(overrides.overview ?? (async () => step('overview'))),
      abstract: fromPromise(overrides.abstract ?? (async () => step('abstract', 0))),
      publish: fromPromise<PublishOutput, PublishInput>(({ input }) =>
        overrides.publish ? overrides.publish(input) : Promise.resolve({ ok: true as const, artifacts: input.summaries.map((s) => `${s.uri}.summary`) }),
      ),
    },
  })
}

function run(overrides: Overrides = {}, input: CompileJobInput = INPUT) {
  const actor = createActor(machineWith(overrides), { input })
  const emitted: CompileJobEmitted[] = []
  actor.on('progress', (event) => emitted.push(event))
  actor.start()
  return { actor, emitted, output: toPromise(actor) }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('compileJobMachine', () => {
  it('summarises the readable files one by one, then writes the overview and abstract and publishes them', async () => {
    let published: PublishInput | undefined
    const { emitted, output } = run({
      publish: async (input) => {
        published = input
        return { ok: true, artifacts: ['a', 'b'] }
      },
    })
    expect(await output).toEqual({
      status: 'succeeded',
      progress: { stage: 'publishing', filesDone: 2, filesTotal: 2, callsUsed: 3, callBudget: 8 },
      artifacts: ['a', 'b'],
      skipped: [{ ...FILES[1], readable: false, reason: 'binary' }],
    })
    expect(published!.summaries.map((s) => s.summary)).toEqual(['summary of one.md', 'summary of three.md'])
    expect(published!.overview).toBe('overview')
    expect(published!.abstract).toBe('abstract')
    expect(emitted.map(({ stage, filesDone, filesTotal, callsUsed }) => `${stage} ${filesDone}/${filesTotal} calls ${callsUsed}`)).toEqual([
      'parsing 0/3 calls 0',
      'summarising 0/2 calls 0',
      'summarising 1/2 calls 1',
      'summarising 2/2 calls 2',
      'overview 2/2 calls 2',
      'abstract 2/2 calls 3',
      'publishing 2/2 calls 3',
    ])
  })

  it('gives each summarise call the calls left and fails a step that spends more', async () => {
    const seen: number[] = []
    const { output } = run(
      {
        summarise: async (input) => {
          seen.push(input.callsLeft)
          return step('s', 2)
        },
      },
      { ...INPUT, callBudget: 3 },
    )
    expect(await output).toMatchObject({
      status: 'failed',
      failure: { stage: 'summarising', code: 'budget_exceeded', retryable: false, bodyReadable: true, attempt: 1 },
      progress: { filesDone: 1, callsUsed: 2, callBudget: 3 },
    })
    expect(seen).toEqual([3, 1])
  })

  it.each([
    ['a retryable failure with attempts left is queued again', { attempt: 1, retryable: true }, 'queued'],
    ['a retryable failure on the last attempt is dead-lettered', { attempt: 3, retryable: true }, 'failed'],
    ['a failure retrying cannot mend is dead-lettered at once', { attempt: 1, retryable: false }, 'failed'],
  ] as const)('%s', async (_, { attempt, retryable }, status) => {
    const { output } = run({ overview: async () => failure('provider.http', retryable) }, { ...INPUT, attempt })
    expect(await output).toMatchObject({
      status,
      failure: { stage: 'overview', code: 'provider.http', message: 'provider.http happened', attempt, retryable, bodyReadable: true },
    })
  })

  it('says the bodies are not readable when parsing itself failed', async () => {
    const { output } = run({ parse: async () => failure('db_unavailable') })
    expect(await output).toMatchObject({ status: 'queued', failure: { stage: 'parsing', bodyReadable: false } })
  })

  it('fails without retry when no file has a readable body', async () => {
    const { output } = run({ parse: async () => ({ ok: true, files: FILES.map((file) => ({ ...file, readable: false, reason: 'empty' })) }) })
    expect(await output).toMatchObject({
      status: 'failed',
      failure: { stage: 'parsing', code: 'no_readable_input', retryable: false, bodyReadable: false },
      progress: { filesTotal: 0 },
    })
  })

  it('turns a crashing actor into a retryable internal error of its stage', async () => {
    const { output } = run({
      abstract: async () => {
        throw new Error('boom')
      },
    })
    expect(await output).toMatchObject({ status: 'queued', failure: { stage: 'abstract', code: 'internal_error', message: 'abstract crashed: boom' } })
  })

  it('ends cancelled when the job was cancelled before the claim took effect', async () => {
    const { output } = run({ begin: async () => failure('cancelled', false) })
    expect(await output).toEqual({ status: 'cancelled', progress: { stage: 'queued', filesDone: 0, filesTotal: 3, callsUsed: 0, callBudget: 8 } })
  })

  it('stops the running stage on cancel: its signal is aborted and nothing is published', async () => {
    let signal: AbortSignal | undefined
    let published = false
    const { actor, output } = run({
      summarise: (_, given) => {
        signal = given
        return new Promise<never>(() => {})
      },
      publish: async () => {
        published = true
        return { ok: true, artifacts: [] }
      },
    })
    await vi.waitFor(() => expect(signal).toBeDefined())
    actor.send({ type: 'job.cancel' })
    expect(await output).toMatchObject({ status: 'cancelled', progress: { stage: 'summarising', filesDone: 0 } })
    expect(signal!.aborted).toBe(true)
    expect(published).toBe(false)
  })

  it('lets a started publish finish: the database row decides whether the job was cancelled', async () => {
    let release: (output: PublishOutput) => void = () => {}
    const { actor, output } = run({ publish: () => new Promise((resolve) => (release = resolve)) })
    await vi.waitFor(() => expect(actor.getSnapshot().value).toBe('publishing'))
    actor.send({ type: 'job.cancel' })
    actor.send({ type: 'job.interrupt', reason: 'shutdown' })
    expect(actor.getSnapshot().value).toBe('publishing')
    release(failure('cancelled', false))
    expect(await output).toMatchObject({ status: 'cancelled' })
  })

  it('releases the job for retry when the worker stops', async () => {
    let signal: AbortSignal | undefined
    const machine = machineWith().provide({
      actors: {
        parse: fromPromise<ParseOutput, ParseInput>(({ signal: given }) => {
          signal = given
          return new Promise<never>(() => {})
        }),
      },
    })
    const actor = createActor(machine, { input: INPUT }).start()
    await vi.waitFor(() => expect(signal).toBeDefined())
    actor.send({ type: 'job.interrupt', reason: 'shutdown' })
    expect(await toPromise(actor)).toMatchObject({
      status: 'queued',
      failure: { stage: 'parsing', code: 'interrupted', message: 'the worker stopped during parsing', bodyReadable: false },
    })
    expect(signal!.aborted).toBe(true)
  })

  it('times the attempt out, stopping the running stage', async () => {
    vi.useFakeTimers()
    let signal: AbortSignal | undefined
    const { output } = run({
      summarise: (_, given) => {
        signal = given
        return new Promise<never>(() => {})
      },
    })
    await vi.advanceTimersByTimeAsync(59_999)
    expect(signal?.aborted).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(await output).toMatchObject({
      status: 'queued',
      failure: { stage: 'summarising', code: 'timeout', message: 'the attempt ran past its timeout of 60 s during summarising', retryable: true },
    })
    expect(signal!.aborted).toBe(true)
  })
})
