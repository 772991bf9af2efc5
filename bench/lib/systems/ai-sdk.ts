// The peer: the Vercel AI SDK (v6) — `streamText` over `createOpenAICompatible` pointing at the
// same local provider, served from a plain Node http server as a UI message stream
// (`pipeUIMessageStreamToResponse`). The same `ls` tool is offered in both variants; its
// `execute` returns a small JSON, and `stopWhen: stepCountIs(2)` lets the model answer after it.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { jsonSchema, stepCountIs, streamText, tool } from 'ai'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { BENCH_MODEL, FAKE_LS_RESULT, streamPrompt, type SystemServer } from '../protocol.ts'
import { readBody } from './raw-proxy.ts'

export async function startAiSdkServer({ providerBaseUrl }: { providerBaseUrl: string }): Promise<SystemServer> {
  const provider = createOpenAICompatible({ name: 'bench', baseURL: providerBaseUrl })
  const model = provider.chatModel(BENCH_MODEL)
  const tools = {
    ls: tool({
      description: 'List the direct children of a directory in the selected scope.',
      inputSchema: jsonSchema<{ uri: string }>({
        type: 'object',
        properties: { uri: { type: 'string' } },
        required: ['uri'],
        additionalProperties: false,
      }),
      execute: async () => FAKE_LS_RESULT,
    }),
  }

  const server = createServer({ noDelay: true }, (req, res) => {
    void (async () => {
      const { id } = JSON.parse(await readBody(req)) as { id: number }
      const controller = new AbortController()
      res.on('close', () => {
        if (!res.writableFinished) controller.abort()
      })
      const result = streamText({
        model,
        prompt: streamPrompt(id),
        tools,
        stopWhen: stepCountIs(2),
        maxRetries: 0,
        abortSignal: controller.signal,
      })
      result.pipeUIMessageStreamToResponse(res)
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`, headers: {} }
}
