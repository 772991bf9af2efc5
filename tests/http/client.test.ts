// The typed client against a raw HTTP server emitting crafted bytes: split UTF-8, CRLF, several
// events per chunk, and EOF without a terminal event (a failure that keeps the text).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { createKnowagentClient } from '../../src/client/index.ts'

let server: Server
let url = ''
let script: Array<Uint8Array> = []
let status = 200

beforeAll(async () => {
  server = createServer(async (req, res) => {
    for await (const _ of req) void _
    if (status !== 200) {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'unknown_model', message: 'unknown model id "x"' } }))
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-turn-id': 't-1' })
    for (const chunk of script) {
      res.write(chunk)
      await new Promise((r) => setTimeout(r, 2))
    }
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const bytes = (s: string) => new TextEncoder().encode(s)
function splitEverywhere(text: string, size: number): Uint8Array[] {
  const all = bytes(text)
  const out: Uint8Array[] = []
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size))
  return out
}

describe('knowagent client stream', () => {
  const client = () => createKnowagentClient({ baseUrl: url, token: 'ka_test' })
  const body = { uri: 'kb://me/', model_id: 'local', message: 'q' }

  it.each([1, 2, 3, 7])('decodes CRLF frames split every %i bytes (inside UTF-8 and between CR and LF)', async (size) => {
    const frames =
      'event: delta\r\ndata: {"text":"知识"}\r\n\r\n' +
      ': keep-alive\r\n\r\n' +
      'event: delta\r\ndata: {"text":"库 😀"}\r\n\r\nevent: tool\r\ndata: {"call_id":"c","name":"ls","arguments":{},"phase":"start"}\r\n\r\n' +
      'event: done\r\ndata: {"finish_reason":"stop","turn_id":"t-1"}\r\n\r\n'
    script = splitEverywhere(frames, size)
    const tools: string[] = []
    const outcome = await client().stream(body, { handlers: { onTool: (t) => tools.push(t.name) } })
    expect(outcome).toMatchObject({ ok: true, text: '知识库 😀', turnId: 't-1', done: { finish_reason: 'stop' } })
    expect(tools).toEqual(['ls'])
  })

  it('treats EOF without done or error as a failure that keeps the received text', async () => {
    script = [bytes('event: delta\ndata: {"text":"half an ans"}\n\nevent: delta\ndata: {"text":"wer"}\n\n')]
    const outcome = await client().stream(body)
    expect(outcome).toMatchObject({ ok: false, text: 'half an answer', error: { code: 'stream.incomplete', partial: 'half an answer' } })
  })

  it('does not trust an unterminated last event', async () => {
    script = [bytes('event: delta\ndata: {"text":"a"}\n\nevent: done\ndata: {"finish_reason":"stop"}')]
    const outcome = await client().stream(body)
    expect(outcome.ok).toBe(false)
  })

  it('returns the server error for a non-200 answer', async () => {
    status = 400
    const outcome = await client().stream(body)
    status = 200
    expect(outcome).toMatchObject({ ok: false, status: 400, error: { code: 'unknown_model' } })
  })
})
