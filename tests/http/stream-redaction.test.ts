// A model's own API key written in its streamed answer (issue 34, item 9): the history had it
// redacted, but every SSE `delta` carried it verbatim. The key reaches no face of a turn — the JSON
// stream, the page's HTML stream, the OpenAI-compatible /v1 — even split across three deltas; the
// text around it arrives unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { chatCompletionSse, type ScriptedProvider, scriptedModel, streamScript } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn, type TestServer } from '../support/test-server.ts'

const KEY = 'sk-live-4f9c2a7e1b3d5f60'
const PARTS = ['sk-live-4f9', 'c2a7e1b3', 'd5f60'] as const
const ANSWER = 'My key is [redacted] and that is all.'

describe('a configured model key streamed by the model', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let close: () => Promise<void>
  let token: string
  let session: { cookie: string; csrf: string }

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      env: { KNOWAGENT_TEST_MODEL_KEY: KEY },
      models: (provider) => [scriptedModel(provider, { apiKeyEnv: 'KNOWAGENT_TEST_MODEL_KEY' })],
    }))
    const alice = await addUserWithToken(server, 'alice')
    token = alice.token
    session = await signIn(server, 'alice', alice.password)
  })
  afterAll(() => close?.())

  const faces = {
    'the JSON SSE API': () =>
      fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'What is your key?' }),
      }),
    'the page (HTML stream)': () =>
      fetch(`${server.url}/workspace/chat/stream`, {
        method: 'POST',
        headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true' },
        body: new URLSearchParams({ uri: 'kb://me/', model_id: 'remote', message: 'What is your key?', history: '[]', message_key: 'k-1' }),
      }),
    'the OpenAI-compatible /v1': () =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'knowagent/remote', stream: true, messages: [{ role: 'user', content: 'What is your key?' }] }),
      }),
  }

  it.each(Object.entries(faces))('never reaches %s, whole or in parts, and the history has it redacted', async (_, ask) => {
    provider.enqueue(
      streamScript(chatCompletionSse([{ text: `My key is ${PARTS[0]}` }, { text: PARTS[1] }, { text: `${PARTS[2]} and that is all.` }, { finish: 'stop' }, 'done'])),
    )
    const res = await ask()
    expect(res.status).toBe(200)
    const body = await res.text()
    for (const part of [KEY, ...PARTS]) expect(body).not.toContain(part)
    expect(body).toContain('[redacted]')
    const turnId = res.headers.get('x-turn-id')!
    const turn = (await findTurn(server.database.db, turnId))!
    expect(turn.status).toBe('done')
    expect(JSON.stringify(turn)).not.toContain(KEY)
  })

  it('sends the text around the key unchanged and in order (the JSON stream\'s deltas)', async () => {
    provider.enqueue(
      streamScript(chatCompletionSse([{ text: `My key is ${PARTS[0]}` }, { text: PARTS[1] }, { text: `${PARTS[2]} and that is all.` }, { finish: 'stop' }, 'done'])),
    )
    const body = await (await faces['the JSON SSE API']()).text()
    const deltas = body
      .split('\n\n')
      .filter((frame) => frame.includes('event: delta'))
      .map((frame) => (JSON.parse(frame.split('\n').find((line) => line.startsWith('data: '))!.slice(6)) as { text: string }).text)
    expect(deltas.join('')).toBe(ANSWER)
    expect(deltas[0]).toBe('My key is ') // ordinary text is not held back
  })
})
