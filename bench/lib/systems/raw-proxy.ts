// The floor: a minimal Node http proxy. Text variant: one upstream chat-completions request,
// whose bytes are piped to the client untouched. Tool-call variant: the proxy reads the
// upstream tool-call response to its end (no tool runs: it answers with a canned result), makes
// the second request, and pipes that answer. No parsing of the answer, no re-encoding.
import { Agent, createServer, request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { BENCH_MODEL, FAKE_LS_RESULT, streamPrompt, TOOL_ARGUMENTS, TOOL_NAME, type SystemServer, type Variant } from '../protocol.ts'

export async function startRawProxy({ providerBaseUrl }: { providerBaseUrl: string }): Promise<SystemServer> {
  const upstreamUrl = `${providerBaseUrl}/chat/completions`
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
  const upstream = (body: unknown): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const req = request(upstreamUrl, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, resolve)
      req.on('socket', (socket) => socket.setNoDelay(true))
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })

  const server = createServer({ noDelay: true }, (req, res) => {
    void (async () => {
      const { id, variant } = JSON.parse(await readBody(req)) as { id: number; variant: Variant }
      const user = { role: 'user', content: streamPrompt(id) }
      let messages: unknown[] = [user]
      if (variant === 'tools') {
        const first = await upstream({ model: BENCH_MODEL, messages, stream: true, tools: [{ type: 'function', function: { name: TOOL_NAME, parameters: { type: 'object' } } }] })
        first.resume()
        await new Promise((resolve) => first.on('end', resolve))
        messages = [
          user,
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_bench_1', type: 'function', function: { name: TOOL_NAME, arguments: TOOL_ARGUMENTS } }] },
          { role: 'tool', tool_call_id: 'call_bench_1', content: JSON.stringify(FAKE_LS_RESULT) },
        ]
      }
      const answer = await upstream({ model: BENCH_MODEL, messages, stream: true })
      res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'text/event-stream', 'cache-control': 'no-cache' })
      answer.pipe(res)
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
      res.end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, headers: {} }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', reject)
  })
}
