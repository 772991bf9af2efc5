// The MCP face's test clients: the SDK's own client over real HTTP, a connection's stream read raw,
// and the fake Bailian workspace both MCP suites use (a search and a chat service, one key).
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { expect } from 'vitest'
import { decodeSseStream } from '../../src/sse/sse-decoder.ts'
import { type FakeBailian, startFakeBailian } from './fake-bailian.ts'
import type { TestServer } from './test-server.ts'

export const MCP_PROTOCOL = '2025-06-18'
export const MCP_BAILIAN_KEY = 'sk-mcp-bailian-5c5c'
export const MCP_BAILIAN_WORKSPACE = 'ws-mcp'

/** A fake Bailian with the services `search-docs` and `chat-docs` in MCP_BAILIAN_WORKSPACE. */
export function startMcpBailian(): Promise<FakeBailian> {
  return startFakeBailian({
    workspaces: {
      [MCP_BAILIAN_WORKSPACE]: {
        apiKey: MCP_BAILIAN_KEY,
        services: [
          { agent_id: 'search-docs', agent_name: 'Docs search', scene: 'search' },
          { agent_id: 'chat-docs', agent_name: 'Docs Q&A', scene: 'chat' },
        ],
      },
    },
  })
}

/** Points a user's retrieval settings at the fake's workspace. */
export async function useMcpBailian(server: TestServer, userId: string): Promise<void> {
  await server.ctx.retrieval!.settings.setApiKey(userId, MCP_BAILIAN_KEY)
  await server.ctx.retrieval!.settings.saveSettings(userId, { workspaceId: MCP_BAILIAN_WORKSPACE })
}

/** The SDK's client on `<url>/mcp` with a bearer token; `sent` records every JSON-RPC message it POSTs. */
export async function connectMcp(url: string, token: string, { sent = [] }: { sent?: Array<{ id?: unknown; method?: string }> } = {}): Promise<Client> {
  const client = new Client({ name: 'knowagent-test', version: '1' })
  const recording: typeof fetch = (input, init) => {
    if (typeof init?.body === 'string') sent.push(JSON.parse(init.body))
    return fetch(input, init)
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } }, fetch: recording }))
  return client
}

/** The session id the server gave a client at initialize. */
export const sessionOf = (client: Client): string => (client.transport as StreamableHTTPClientTransport).sessionId!

/** A connection's stream (GET /mcp), read one JSON-RPC message at a time; `next` is undefined once the server ended it. */
export async function openMcpStream(url: string, token: string, session: string) {
  const res = await fetch(`${url}/mcp`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': MCP_PROTOCOL } })
  expect(res.status).toBe(200)
  const events = decodeSseStream(res.body!)[Symbol.asyncIterator]()
  const next = async (): Promise<Record<string, unknown> | undefined> => {
    for (;;) {
      const { value, done } = await events.next()
      if (done) return undefined
      if (value.data !== '') return JSON.parse(value.data) as Record<string, unknown>
    }
  }
  return { next, close: () => void events.return?.() }
}
