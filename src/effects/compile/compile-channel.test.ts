import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createScriptedModel, textResult } from '../../../tests/support/scripted-model.ts'
import { MissingApiKey, ProviderHttpError, ProviderStreamError } from '../llm/model-errors.ts'
import { describeModelError } from '../llm/model-failure.ts'
import { makeLocalChatModel } from '../llm/local/index.ts'
import { ChannelFailure } from './channel-failure.ts'
import { channelForModel, makeCliChannel, makeLlmChannel } from './compile-channel.ts'
import { abstractRequest, overviewRequest, summaryRequest } from './compile-prompts.ts'
import { stepFingerprint } from './compile-snapshot.ts'

const FAKE_CLI = fileURLToPath(new URL('../../../tests/fixtures/cli/fake-cli.mjs', import.meta.url))
const SKILL = { name: 'wiki-default', body: 'Keep numbers.' }
const BODY = 'Knowagent compiles raw files. It writes summaries, an overview and an abstract. The overview lists every document.'
const request = summaryRequest({ name: 'guide.md', uri: 'kb://users/a/d/guide.md', body: BODY, skill: SKILL, maxInputChars: 10_000 })

async function failureOf(effect: Effect.Effect<string, ChannelFailure>): Promise<ChannelFailure> {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${exit.value}`)
  const reason = exit.cause.reasons.find((r) => r._tag === 'Fail')
  return (reason as { error: ChannelFailure }).error
}

describe('the LLM channel', () => {
  it('sends the instruction with the skill as system message and the material as user message, without tools', async () => {
    const model = createScriptedModel({ script: [{ kind: 'result', result: textResult('  A summary.  ') }] })
    expect(await Effect.runPromise(makeLlmChannel(model).complete(request))).toBe('A summary.')
    expect(model.requests[0]!.tools).toBeUndefined()
    expect(model.requests[0]!.messages).toEqual([
      { role: 'system', content: expect.stringContaining('Follow this compile skill ("wiki-default"):\nKeep numbers.') },
      { role: 'user', content: `Document: guide.md\nURI: kb://users/a/d/guide.md\nText:\n---\n${BODY}` },
    ])
  })

  it.each([
    ['a cut-short answer', { kind: 'result' as const, result: textResult('Half', 'length') }, 'model.cut_short', false],
    ['an empty answer', { kind: 'result' as const, result: textResult('  ') }, 'model.empty', true],
    ['a rate limit', { kind: 'error' as const, error: new ProviderHttpError({ status: 429, code: undefined, message: 'slow', retryAfterMs: undefined }) }, 'provider.http', true],
    ['a bad request', { kind: 'error' as const, error: new ProviderHttpError({ status: 400, code: undefined, message: 'bad', retryAfterMs: undefined }) }, 'provider.http', false],
    ['a missing key', { kind: 'error' as const, error: new MissingApiKey({ modelId: 'm', envName: 'M_KEY', message: 'no key' }) }, 'provider.missing_api_key', false],
  ])('fails on %s', async (_, step, code, retryable) => {
    const model = createScriptedModel({ script: [step] })
    expect(await failureOf(makeLlmChannel(model).complete(request))).toMatchObject({ code, retryable })
  })

  it.each([
    ['a stream error (the provider\'s code kept)', new ProviderStreamError({ code: 'overloaded', message: 'try later', partialText: 'par' })],
    ['a missing key', new MissingApiKey({ modelId: 'm', envName: 'M_KEY', message: 'no key' })],
  ])('words %s as a turn does', async (_, error) => {
    const model = createScriptedModel({ script: [{ kind: 'error', error }] })
    const { code, message, retryable } = describeModelError(error)
    expect(await failureOf(makeLlmChannel(model).complete(request))).toMatchObject({ code, message, retryable })
  })

  it('aborts the model call when interrupted', async () => {
    const model = createScriptedModel({ script: [{ kind: 'hang' }] })
    const controller = new AbortController()
    const running = Effect.runPromiseExit(makeLlmChannel(model).complete(request), { signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 10))
    controller.abort()
    expect(Exit.isFailure(await running)).toBe(true)
    expect(model.tracker.interrupted).toEqual(['model'])
  })
})

describe('the local channel', () => {
  const local = channelForModel(makeLocalChatModel({ deltaDelayMs: 0 }))

  it('is chosen for the built-in model and writes extractive text: only sentences of the source', async () => {
    expect(local.engine).toBe('llm:local')
    const summary = await Effect.runPromise(local.complete(request))
    expect(summary.length).toBeGreaterThan(0)
    // its subject line, then "- " points under "Label:" lines (issue 35)
    const points = summary.split('\n').filter((line) => line.trim() !== '' && !/^[^-].{0,60}:$/u.test(line)).map((line) => line.replace(/^- /u, ''))
    for (const sentence of points.flatMap((point) => point.split(/(?<=\.)\s+/))) expect(BODY).toContain(sentence.replace(/\.$/u, ''))
  })

  it('writes an overview that names every document with its URI, and an abstract from it', async () => {
    const parts = [
      { name: 'guide.md', uri: 'kb://users/a/d/guide.md', summary: 'Knowagent compiles raw files into a wiki.' },
      { name: 'runbook.md', uri: 'kb://users/a/d/runbook.md', summary: 'The runbook says how to restart workers safely.' },
    ]
    const overview = await Effect.runPromise(local.complete(overviewRequest({ directoryName: 'd', summaries: parts, skill: undefined, maxInputChars: 10_000 })))
    expect(overview).toContain('d holds 2 compiled documents.')
    for (const part of parts) expect(overview).toContain(`**${part.name}** (${part.uri}) — ${part.summary}`)
    const abstract = await Effect.runPromise(local.complete(abstractRequest({ directoryName: 'd', overview, skill: undefined })))
    expect(abstract).toMatch(/^d holds 2 documents: /)
    expect(Array.from(abstract).length).toBeLessThanOrEqual(500)
    for (const part of parts) expect(abstract, 'each document says what it is, without its URI').toContain(part.summary.replace(/\.$/u, ''))
    expect(abstract).not.toContain('kb://')
  })

  it('is deterministic, so the fingerprint of a step names its output', async () => {
    expect(await Effect.runPromise(local.complete(request))).toBe(await Effect.runPromise(local.complete(request)))
  })
})

describe('the CLI channel', () => {
  const profile = {
    id: 'fake',
    name: 'Fake',
    command: [process.execPath, FAKE_CLI, '--mode', 'summarise', '--model', '{model}', '--reasoning', '{reasoning}'] as [string, ...string[]],
    models: ['m1'] as [string, ...string[]],
    reasoningLevels: ['low', 'high'],
  }

  it('runs the profile with the prompt on stdin', async () => {
    const channel = makeCliChannel({ profile, model: 'm1', reasoning: 'high', serverEnv: {} })
    expect(channel.engine).toBe('cli:fake:m1:high')
    expect(await Effect.runPromise(channel.complete(request))).toBe(`[m1/high] ${BODY.split(' ').slice(0, 24).join(' ')}`)
  })

  it('refuses a model the profile does not allow, without retry', async () => {
    const channel = makeCliChannel({ profile, model: 'other', reasoning: 'high', serverEnv: {} })
    expect(await failureOf(channel.complete(request))).toMatchObject({ code: 'cli.not_allowed', retryable: false })
  })
})

describe('stepFingerprint', () => {
  const base = { engine: 'llm:m', reasoningLevel: 'medium', system: 'sys', input: 'in' }
  it.each([['engine', { engine: 'llm:n' }], ['reasoning level', { reasoningLevel: 'high' }], ['instruction or skill', { system: 'sys2' }], ['input', { input: 'in2' }]])(
    'changes with the %s',
    (_, change) => {
      expect(stepFingerprint({ ...base, ...change })).not.toBe(stepFingerprint(base))
    },
  )
  it('is stable', () => expect(stepFingerprint(base)).toBe(stepFingerprint({ ...base })))
})
