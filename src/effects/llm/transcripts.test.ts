// Every transcript of tests/fixtures/transcripts/ through the real client, over real HTTP,
// against the scripted provider; then (property) any re-chunking of its bytes, through the
// pure stream parser and over HTTP, gives the same outcome and the same events.
import { fc, test as propertyTest } from '@fast-check/vitest'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  loadTranscripts,
  splitBytes,
  startScriptedProvider,
  transcriptBytes,
  transcriptChunkBytes,
  transcriptScript,
  type ScriptedProvider,
  type Transcript,
} from '../../../tests/support/scripted-provider.ts'
import { createChatCompletionStreamParser } from './chat-completion-stream.ts'
import type { ModelConfig } from './model-config.ts'
import type { ModelStreamEvent } from './model.ts'
import { makeOpenAiChatModel } from './openai-client.ts'

const transcripts = loadTranscripts()
const FAKE_KEY = 'sk-transcript-7f3a9c1e5b'

let provider: ScriptedProvider
beforeAll(async () => {
  provider = await startScriptedProvider()
})
afterAll(async () => {
  await provider.close()
})

function configFor(transcript: Transcript): ModelConfig {
  return {
    id: 'scripted',
    name: 'Scripted',
    profile: 'test',
    baseUrl: provider.baseUrl,
    apiKeyEnv: 'SCRIPTED_KEY',
    model: 'scripted-model',
    contextWindow: 32_000,
    maxOutputTokens: 1_000,
    supportsNativeToolCalling: true,
    maxRetries: 0,
    ...transcript.model,
  } as ModelConfig
}

/** JSON round trip: fields that are undefined drop out, as they do in the fixtures. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value))
}

/**
 * The real client holds back the end of a delta that could begin its key (redaction of a key split
 * across deltas), so its events may be cut differently from the parser's: compare the text of each
 * run of events of one type.
 */
function withMergedEvents(value: unknown): unknown {
  const { events, ...rest } = value as { events: ModelStreamEvent[] }
  const merged: ModelStreamEvent[] = []
  for (const event of events) {
    const last = merged.at(-1)
    if (last?.type === event.type) merged[merged.length - 1] = { type: event.type, text: last.text + event.text }
    else merged.push(event)
  }
  return { ...rest, events: merged }
}

async function runOverHttp(transcript: Transcript, splitAt?: ReadonlyArray<number>): Promise<unknown> {
  provider.enqueue(transcriptScript(transcript, { splitAt }))
  const model = makeOpenAiChatModel(configFor(transcript), { env: { SCRIPTED_KEY: FAKE_KEY } })
  const events: ModelStreamEvent[] = []
  const exit = await Effect.runPromiseExit(
    model.stream({ messages: [{ role: 'user', content: transcript.name }], onEvent: (event) => events.push(event) }),
  )
  if (Exit.isSuccess(exit)) return withMergedEvents(plain({ result: exit.value, events }))
  const failure = exit.cause.reasons.find((reason) => reason._tag === 'Fail')
  if (failure === undefined) throw new Error(`${transcript.name}: not a typed failure: ${String(exit.cause)}`)
  return withMergedEvents(plain({ error: failure.error, events }))
}

function runThroughParser(transcript: Transcript, chunks: ReadonlyArray<Uint8Array>): unknown {
  const events: ModelStreamEvent[] = []
  const parser = createChatCompletionStreamParser({ onEvent: (event) => events.push(event) })
  for (const chunk of chunks) parser.pushBytes(chunk)
  const idleMs = Number(transcript.model?.['idleTimeoutMs'] ?? 60_000)
  const final =
    transcript.end === 'hang' ? parser.idle(idleMs) : parser.end(transcript.end === 'reset' ? 'connection-lost' : 'eof')
  return plain(final.status === 'succeeded' ? { result: final.result, events } : { error: final.error, events })
}

describe('transcript corpus', () => {
  test('has at least 30 transcripts, each with an expected result or failure', () => {
    expect(transcripts.length).toBeGreaterThanOrEqual(30)
    for (const transcript of transcripts) {
      expect('result' in transcript.expected || 'error' in transcript.expected, transcript.name).toBe(true)
    }
  })

  test.each(transcripts.map((t) => [t.name, t] as const))('%s — real client over HTTP', async (_name, transcript) => {
    expect(await runOverHttp(transcript)).toEqual(withMergedEvents(transcript.expected))
    const request = provider.requests.at(-1)
    expect(request?.path).toBe('/v1/chat/completions')
    expect(request?.headers.authorization).toBe(`Bearer ${FAKE_KEY}`)
  })

  test.each(transcripts.map((t) => [t.name, t] as const))('%s — recorded chunks through the parser', (_name, transcript) => {
    expect(runThroughParser(transcript, transcript.chunks.map(transcriptChunkBytes))).toEqual(transcript.expected)
  })
})

describe('re-chunking never changes the outcome', () => {
  const transcriptIndex = fc.integer({ min: 0, max: transcripts.length - 1 })
  const cuts = fc.array(fc.integer({ min: 1, max: 4096 }), { maxLength: 40 })

  propertyTest.prop([transcriptIndex, cuts], { numRuns: 400 })('any split of any transcript, pure parser', (index, offsets) => {
    const transcript = transcripts[index]!
    const bytes = transcriptBytes(transcript)
    const chunks = splitBytes(bytes, offsets.map((o) => o % Math.max(1, bytes.length)))
    expect(runThroughParser(transcript, chunks)).toEqual(transcript.expected)
  })

  propertyTest.prop([transcriptIndex], { numRuns: 60 })('one byte per chunk, pure parser', (index) => {
    const transcript = transcripts[index]!
    const bytes = transcriptBytes(transcript)
    const chunks = splitBytes(bytes, Array.from({ length: bytes.length }, (_, i) => i))
    expect(runThroughParser(transcript, chunks)).toEqual(transcript.expected)
  })

  const quickTranscripts = transcripts.filter((t) => t.end !== 'hang')
  propertyTest.prop([fc.integer({ min: 0, max: quickTranscripts.length - 1 }), cuts], { numRuns: 40 })(
    'any split of any transcript, real client over HTTP',
    async (index, offsets) => {
      const transcript = quickTranscripts[index]!
      const length = transcriptBytes(transcript).length
      expect(await runOverHttp(transcript, offsets.map((o) => o % Math.max(1, length)))).toEqual(withMergedEvents(transcript.expected))
    },
  )
})
