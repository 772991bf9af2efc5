// Every knowledge-chat transcript of tests/fixtures/bailian-chat/ through the pure parser and
// through the real client over real HTTP against the fake service; then (property) any re-cut of
// its bytes gives the same outcome and the same events.
import { fc, test as propertyTest } from '@fast-check/vitest'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type FakeBailian, startFakeBailian } from '../../../tests/support/fake-bailian.ts'
import {
  loadTranscripts,
  splitBytes,
  type Transcript,
  transcriptBytes,
  transcriptChunkBytes,
  transcriptScript,
} from '../../../tests/support/scripted-provider.ts'
import { type BailianChatEvent, createBailianChatStreamParser } from './bailian-chat-stream.ts'
import { makeBailianClient } from './bailian-client.ts'

const DIR = fileURLToPath(new URL('../../../tests/fixtures/bailian-chat/', import.meta.url))
const transcripts = loadTranscripts(DIR)
const API_KEY = 'sk-bailian-transcript-51c0ffee'

let fake: FakeBailian
beforeAll(async () => {
  fake = await startFakeBailian({ workspaces: { 'ws-t': { apiKey: API_KEY, services: [] } } })
})
afterAll(async () => {
  await fake.close()
})

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

function runThroughParser(transcript: Transcript, chunks: ReadonlyArray<Uint8Array>): unknown {
  const events: BailianChatEvent[] = []
  const parser = createBailianChatStreamParser({ onEvent: (event) => events.push(event) })
  for (const chunk of chunks) parser.pushBytes(chunk)
  const final = parser.end(transcript.end === 'reset' ? 'connection-lost' : 'eof')
  return plain(final.status === 'succeeded' ? { result: final.result, events } : { error: final.error, events })
}

async function runOverHttp(transcript: Transcript, splitAt?: ReadonlyArray<number>): Promise<unknown> {
  fake.enqueue('chat', transcriptScript(transcript, { splitAt }))
  const events: BailianChatEvent[] = []
  const client = makeBailianClient()
  const exit = await Effect.runPromiseExit(
    client.chat(
      { apiKey: API_KEY, workspaceId: 'ws-t', endpointHost: fake.endpointHost },
      { agentId: 'chat-1', question: transcript.name, timeoutMs: 10_000, onEvent: (event) => events.push(event) },
    ),
  )
  if (Exit.isSuccess(exit)) return plain({ result: exit.value, events })
  const failure = exit.cause.reasons.find((reason) => reason._tag === 'Fail')
  if (failure === undefined) throw new Error(`${transcript.name}: not a typed failure: ${String(exit.cause)}`)
  return plain({ error: failure.error, events })
}

describe('knowledge-chat transcript corpus', () => {
  test('has a dozen transcripts, each with an expected result or failure', () => {
    expect(transcripts.length).toBeGreaterThanOrEqual(12)
    for (const transcript of transcripts) expect('result' in transcript.expected || 'error' in transcript.expected, transcript.name).toBe(true)
  })

  test.each(transcripts.map((t) => [t.name, t] as const))('%s — recorded chunks through the parser', (_name, transcript) => {
    expect(runThroughParser(transcript, transcript.chunks.map(transcriptChunkBytes))).toEqual(transcript.expected)
  })

  test.each(transcripts.map((t) => [t.name, t] as const))('%s — real client over HTTP', async (_name, transcript) => {
    expect(await runOverHttp(transcript)).toEqual(transcript.expected)
    const request = fake.requests.at(-1)!
    expect(request.operation).toBe('chat')
    expect(request.workspaceId).toBe('ws-t')
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`)
    expect(request.headers.accept).toBe('text/event-stream')
    expect(request.body).toEqual({
      input: { messages: [{ role: 'user', content: transcript.name }] },
      parameters: { agent_options: { agent_id: 'chat-1' } },
      stream: true,
    })
  })
})

describe('re-chunking never changes the outcome', () => {
  const transcriptIndex = fc.integer({ min: 0, max: transcripts.length - 1 })
  const cuts = fc.array(fc.integer({ min: 1, max: 4096 }), { maxLength: 40 })

  propertyTest.prop([transcriptIndex, cuts], { numRuns: 300 })('any split of any transcript, pure parser', (index, offsets) => {
    const transcript = transcripts[index]!
    const bytes = transcriptBytes(transcript)
    const chunks = splitBytes(bytes, offsets.map((o) => o % Math.max(1, bytes.length)))
    expect(runThroughParser(transcript, chunks)).toEqual(transcript.expected)
  })

  propertyTest.prop([transcriptIndex], { numRuns: 40 })('one byte per chunk, pure parser', (index) => {
    const transcript = transcripts[index]!
    const bytes = transcriptBytes(transcript)
    const chunks = splitBytes(bytes, Array.from({ length: bytes.length }, (_, i) => i))
    expect(runThroughParser(transcript, chunks)).toEqual(transcript.expected)
  })

  propertyTest.prop([transcriptIndex, cuts], { numRuns: 30 })('any split of any transcript, real client over HTTP', async (index, offsets) => {
    const transcript = transcripts[index]!
    const length = transcriptBytes(transcript).length
    expect(await runOverHttp(transcript, offsets.map((o) => o % Math.max(1, length)))).toEqual(transcript.expected)
  })
})
