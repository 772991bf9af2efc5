// The typed client against crafted bytes, replayed by the scripted provider as a raw HTTP server:
// split UTF-8, CRLF, several events per chunk, and EOF without a terminal event (a failure that
// keeps the text).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKnowagentClient } from '../../src/client/index.ts'
import { httpResponseScript, startScriptedProvider, type ScriptedProvider } from '../support/scripted-provider.ts'

let provider: ScriptedProvider

beforeAll(async () => {
  provider = await startScriptedProvider()
})
afterAll(() => provider?.close())

/** The next stream answers with these chunks, each written on its own. */
const answerWith = (chunks: ReadonlyArray<Uint8Array>) =>
  provider.enqueue({ kind: 'stream', headers: { 'content-type': 'text/event-stream', 'x-turn-id': 't-1' }, chunks: chunks.map((bytes) => ({ bytes, delayMs: 2 })) })

const bytes = (s: string) => new TextEncoder().encode(s)
function splitEverywhere(text: string, size: number): Uint8Array[] {
  const all = bytes(text)
  const out: Uint8Array[] = []
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size))
  return out
}

describe('knowagent client stream', () => {
  // decoding only: a cut stream is not picked up again here (tests/http/turn-commands.test.ts does that against the server)
  const client = () => createKnowagentClient({ baseUrl: `http://127.0.0.1:${provider.port}`, token: 'ka_test', resumeAttempts: 0 })
  const body = { uri: 'kb://me/', model_id: 'local', message: 'q' }

  it.each([1, 2, 3, 7])('decodes CRLF frames split every %i bytes (inside UTF-8 and between CR and LF)', async (size) => {
    const frames =
      'event: delta\r\ndata: {"text":"知识"}\r\n\r\n' +
      ': keep-alive\r\n\r\n' +
      'event: delta\r\ndata: {"text":"库 😀"}\r\n\r\nevent: tool\r\ndata: {"call_id":"c","name":"ls","arguments":{},"phase":"start"}\r\n\r\n' +
      'event: done\r\ndata: {"finish_reason":"stop","turn_id":"t-1"}\r\n\r\n'
    answerWith(splitEverywhere(frames, size))
    const tools: string[] = []
    const outcome = await client().stream(body, { handlers: { onTool: (t) => tools.push(t.name) } })
    expect(outcome).toMatchObject({ ok: true, text: '知识库 😀', turnId: 't-1', done: { finish_reason: 'stop' } })
    expect(tools).toEqual(['ls'])
  })

  it('treats EOF without done or error as a failure that keeps the received text', async () => {
    answerWith([bytes('event: delta\ndata: {"text":"half an ans"}\n\nevent: delta\ndata: {"text":"wer"}\n\n')])
    const outcome = await client().stream(body)
    expect(outcome).toMatchObject({ ok: false, text: 'half an answer', error: { code: 'stream.incomplete', partial: 'half an answer' } })
  })

  it('does not trust an unterminated last event', async () => {
    answerWith([bytes('event: delta\ndata: {"text":"a"}\n\nevent: done\ndata: {"finish_reason":"stop"}')])
    const outcome = await client().stream(body)
    expect(outcome.ok).toBe(false)
  })

  it('returns the server error for a non-200 answer', async () => {
    provider.enqueue(httpResponseScript(400, { error: { code: 'unknown_model', message: 'unknown model id "x"' } }))
    const outcome = await client().stream(body)
    expect(outcome).toMatchObject({ ok: false, status: 400, error: { code: 'unknown_model' } })
  })
})
