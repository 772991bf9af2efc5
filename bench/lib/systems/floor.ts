// The stateful floor (issue 42): the least a server can do per turn and still keep the spec's
// guarantees at a turn's start and end — a bare `node:http` server, no express, xstate or Effect.
// Per turn: the bearer token's keyed hash (a memo from hash to user, as knowagent's token memo),
// the real admission statement of knowagent (`admitTurnQuery`: the node, the token still live,
// the rate-limit slot and the turn's `running` row, in one statement) on an embedded PostgreSQL
// started the same way as knowagent's (src/effects/db, a fresh data dir, migrated), the provider's
// stream parsed and re-encoded as knowagent's SSE events (`delta`, `tool`, `done`), in the tools
// variant the `ls` tool's real query (`childrenPageQuery`) and the second model request, and the
// turn's outcome written (`finishTurnQuery`) before `done`. Statements go to a `pg` pool directly,
// as named statements. The client's reader and request body are knowagent's.
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { openDatabase, migrateOnOwnConnection } from '../../../src/effects/db/database.ts'
import { createApiTokenFor, createUser } from '../../../src/effects/auth/users.ts'
import { hashToken } from '../../../src/effects/auth/tokens.ts'
import { admitTurnQuery } from '../../../src/effects/turn/turn-admission.ts'
import { finishTurnQuery } from '../../../src/effects/turn/turn-records.ts'
import { putFile } from '../../../src/effects/workspace/store.ts'
import { childrenPageQuery } from '../../../src/effects/workspace/folder-listing.ts'
import { createSseDecoder, type SseEvent } from '../../../src/sse/sse-decoder.ts'
import { BENCH_MODEL, TOOL_NAME, type SystemServer } from '../protocol.ts'
import { readBody } from './raw-proxy.ts'

const SECRET = 'bench-floor-secret-0123456789abcdef'
const LOGIN = 'bench'
const SYSTEM_PROMPT = 'You answer questions about the selected directory of the user\'s knowledge workspace; use the tools to look.'
const LS_TOOL = {
  type: 'function',
  function: { name: TOOL_NAME, description: 'List the direct children of a directory.', parameters: { type: 'object', properties: { uri: { type: 'string' } }, required: ['uri'] } },
} as const

interface ToolCall {
  id: string
  name: string
  arguments: string
}

export async function startFloorServer({ providerBaseUrl }: { providerBaseUrl: string }): Promise<SystemServer & { readonly dbQueries: () => number; readonly stop: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'knowagent-bench-floor-'))
  const handle = await openDatabase({ databaseUrl: undefined, dataDir, exclusive: true })
  await migrateOnOwnConnection(handle)
  const { db } = handle
  const user = await createUser(db, { login: LOGIN, password: 'bench-password-0123' })
  const token = await createApiTokenFor(db, { secret: SECRET, login: LOGIN })
  const note = 'Benchmark note: the workspace the `ls` tool lists.\n'
  await putFile(db, { owner: user, segments: ['notes', 'bench.md'], bytes: new TextEncoder().encode(note), parsed: { ok: true, mime: 'text/markdown', text: note } })
  const root = await db.selectFrom('nodes').select('id').where('owner_id', '=', user.id).where('path', '=', '').executeTakeFirstOrThrow()
  const users = new Map([[hashToken({ secret: SECRET, token }), user]])
  const pool = new pg.Pool({ ...handle.connection, max: 10 })
  pool.on('error', () => {})
  let queries = 0
  const run = async <Row>(name: string, compiled: { sql: string; parameters: ReadonlyArray<unknown> }): Promise<Row[]> => {
    queries += 1
    const result = await pool.query({ name, text: compiled.sql, values: [...compiled.parameters] })
    return result.rows as Row[]
  }

  const upstreamUrl = `${providerBaseUrl}/chat/completions`
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity })
  /** One model request; calls `onDelta` per content piece; resolves with the tool calls it asked for. */
  const callModel = (messages: unknown[], signal: AbortSignal, onDelta: (text: string) => void): Promise<ToolCall[]> =>
    new Promise((resolve, reject) => {
      const calls: ToolCall[] = []
      const decoder = createSseDecoder({
        onEvent: (event: SseEvent) => {
          if (event.data === '[DONE]') return
          const delta = (JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: string | null; tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> } }> })
            .choices?.[0]?.delta
          if (typeof delta?.content === 'string' && delta.content !== '') onDelta(delta.content)
          for (const part of delta?.tool_calls ?? []) {
            const call = (calls[part.index] ??= { id: '', name: '', arguments: '' })
            if (part.id) call.id = part.id
            if (part.function?.name) call.name += part.function.name
            if (part.function?.arguments) call.arguments += part.function.arguments
          }
        },
      })
      const req = request(upstreamUrl, { method: 'POST', agent, signal, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (response: IncomingMessage) => {
        if (response.statusCode !== 200) {
          response.resume()
          return reject(new Error(`provider answered ${response.statusCode}`))
        }
        response.on('data', (chunk: Buffer) => decoder.push(chunk))
        response.on('end', () => {
          decoder.end()
          resolve(calls)
        })
        response.on('error', reject)
      })
      req.on('socket', (socket) => socket.setNoDelay(true))
      req.on('error', reject)
      req.end(JSON.stringify({ model: BENCH_MODEL, messages, stream: true, tools: [LS_TOOL] }))
    })

  const event = (res: ServerResponse, name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
  const refuse = (res: ServerResponse, status: number, code: string) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { code } }))
  }

  const turn = async (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.parse(await readBody(req)) as { uri: string; model_id: string; message: string }
    const tokenHash = hashToken({ secret: SECRET, token: (req.headers.authorization ?? '').replace(/^Bearer /, '') })
    const caller = users.get(tokenHash)
    if (!caller) return refuse(res, 401, 'unauthorized')
    const turnId = randomUUID()
    const now = Date.now()
    const [admission] = await run<{ admitted: boolean; token_ok: boolean }>(
      'floor_admit',
      admitTurnQuery.compile(db, {
        ownerId: caller.id,
        path: '',
        key: `stream:${caller.id}`,
        at: new Date(now),
        since: new Date(now - 60_000),
        limit: 1_000_000,
        turnId,
        uri: body.uri,
        modelId: body.model_id,
        instanceId: null,
        tokenHash,
      }),
    )
    if (!admission?.token_ok) return refuse(res, 401, 'unauthorized')
    if (!admission.admitted) return refuse(res, 429, 'rate_limited')
    const controller = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) controller.abort()
    })
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
    const messages: unknown[] = [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: body.message },
    ]
    const onDelta = (text: string) => event(res, 'delta', { text })
    let status: 'done' | 'failed' = 'done'
    try {
      const calls = await callModel(messages, controller.signal, onDelta)
      if (calls.length > 0) {
        messages.push({ role: 'assistant', content: null, tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) })
        for (const call of calls) {
          event(res, 'tool', { phase: 'start', call_id: call.id, name: call.name })
          const rows = await run<{ name: string | null; kind: string; path: string; total: string }>('floor_ls', childrenPageQuery.compile(db, { ownerId: caller.id, parentId: root.id, offset: 0, limit: 100 }))
          const entries = rows.filter((row) => row.name !== null).map((row) => ({ name: row.name, kind: row.kind, uri: `kb://users/${LOGIN}/${row.path}${row.kind === 'directory' ? '/' : ''}` }))
          const content = JSON.stringify({ entries, total: Number(rows[0]?.total ?? 0) })
          event(res, 'tool', { phase: 'end', call_id: call.id, name: call.name, ok: true, summary: `${entries.length} entries` })
          messages.push({ role: 'tool', tool_call_id: call.id, content })
        }
        await callModel(messages, controller.signal, onDelta)
      }
    } catch {
      status = 'failed'
    }
    await run('floor_finish', finishTurnQuery.compile(db, { id: turnId, status, finishReason: null, errorCode: status === 'failed' ? 'provider_error' : null, errorMessage: null, counters: null, usage: null }))
    event(res, status === 'done' ? 'done' : 'error', status === 'done' ? { turn_id: turnId } : { code: 'provider_error', message: 'the model request failed' })
    res.end()
  }

  const server = createServer({ noDelay: true }, (req, res) => {
    turn(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  queries = 0
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    headers: { authorization: `Bearer ${token}` },
    dbQueries: () => queries,
    stop: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      agent.destroy()
      await pool.end()
      await handle.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
