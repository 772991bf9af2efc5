// A bearer token verified a moment ago is remembered by its hash (src/effects/auth/token-memo.ts):
// on the two turn endpoints its next request skips the token's own lookup, and the turn's
// admission statement checks it instead. A token revoked meanwhile must still be refused on its
// very next request — with 401, before and instead of any other error — and nothing written.
import type { Request } from 'express'
import { sql, type KyselyPlugin } from 'kysely'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { hashToken } from '../../src/effects/auth/tokens.ts'
import { createApiTokenFor } from '../../src/effects/auth/users.ts'
import { createTokenMemo } from '../../src/effects/auth/token-memo.ts'
import type { AppContext } from '../../src/http/app-context.ts'
import { resolveAuth } from '../../src/http/authenticate.ts'
import { addUserWithToken, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { readSseEvents, terminalEvents } from '../support/sse-frames.ts'
import { streamScript, textAnswerSse, type ScriptedProvider } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { putText } from '../support/text-file.ts'

let provider: ScriptedProvider
let server: TestServer
let close: (() => Promise<void>) | undefined
let dana: Awaited<ReturnType<typeof addUserWithToken>>

beforeAll(async () => {
  ;({ server, provider, close } = await startScriptedServer())
  dana = await addUserWithToken(server, 'dana')
  const text = 'notes'
  await putText(server.database.db, { owner: dana.user, segments: ['docs', 'a.md'], text })
})
beforeEach(() => provider.setHandler(() => streamScript(textAnswerSse('fine'))))
afterAll(() => close?.())

const STREAM = '/api/v1/knowledge-agent/stream'
const COMPLETIONS = '/v1/chat/completions'
const send = (path: string, token: string, body: string) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
const streamBody = (overrides: Record<string, unknown> = {}) => JSON.stringify({ uri: 'kb://me/docs/', model_id: 'remote', message: 'hello', ...overrides })

/** A new token of dana's, used once (so the memo holds it), then revoked as another process would. */
async function rememberedThenRevoked(): Promise<string> {
  const token = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'dana' })
  const first = await send(STREAM, token, streamBody())
  expect(first.status).toBe(200)
  expect(terminalEvents((await readSseEvents(first)).events)).toEqual([expect.objectContaining({ event: 'done' })])
  expect(server.ctx.tokenMemo!.get(hashToken({ secret: TEST_SECRET, token }))?.id).toBe(dana.user.id)
  await server.database.db.updateTable('api_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', hashToken({ secret: TEST_SECRET, token })).execute()
  return token
}

const written = async () => {
  const turns = await server.database.db.selectFrom('turns').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  const hits = await server.database.db.selectFrom('rate_limit_hits').select('hits').where('key', '=', `stream:${dana.user.id}`).executeTakeFirst()
  return { turns: Number(turns.n), hits: hits?.hits.length ?? 0 }
}

describe('a remembered bearer token on the turn endpoints', () => {
  it('keeps working while it is live', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await send(STREAM, dana.token, streamBody())
      expect(res.status).toBe(200)
      expect(terminalEvents((await readSseEvents(res)).events)).toEqual([expect.objectContaining({ event: 'done' })])
    }
  })

  it('revoked, its next stream is 401 and writes nothing: no turn, no slot taken', async () => {
    const token = await rememberedThenRevoked()
    const before = await written()
    const res = await send(STREAM, token, streamBody())
    expect(res.status).toBe(401)
    expect((await res.json()).error).toEqual({ code: 'unauthorized', message: 'invalid or revoked API token', request_id: expect.any(String) })
    expect(await written()).toEqual(before)
    expect(server.ctx.tokenMemo!.get(hashToken({ secret: TEST_SECRET, token }))).toBeUndefined()
    expect((await send(STREAM, token, streamBody())).status).toBe(401) // and from then on by the lookup itself
  })

  it.each([
    ['a body that is not JSON', '{"uri":'],
    ['a body the schema refuses', JSON.stringify({ uri: 'kb://me/', model_id: 'remote' })],
    ['an unknown model', streamBody({ model_id: 'nope' })],
    ["another user's workspace", streamBody({ uri: 'kb://users/nobody/' })],
    ['a missing node (admitted step by step)', streamBody({ uri: 'kb://me/missing/' })],
    ['a message the model cannot take', streamBody({ message: 'x'.repeat(31_000) })],
  ])('revoked, a stream request with %s is 401 too, never the other error', async (_what, body) => {
    const token = await rememberedThenRevoked()
    const before = await written()
    const res = await send(STREAM, token, body)
    expect(res.status).toBe(401)
    expect((await res.json()).error.code).toBe('unauthorized')
    expect(await written()).toEqual(before)
  })

  it.each([
    ['a question', { model: 'knowagent/remote', messages: [{ role: 'user', content: 'q' }], stream: true }],
    ['an unknown model', { model: 'knowagent/nope', messages: [{ role: 'user', content: 'q' }] }],
    ['a missing directory', { model: 'knowagent/remote', messages: [{ role: 'user', content: 'q' }], kb_uri: 'kb://me/missing/' }],
  ])('revoked, /v1/chat/completions with %s is 401 in the OpenAI error shape', async (_what, body) => {
    const token = await rememberedThenRevoked()
    const warm = await send(COMPLETIONS, token, JSON.stringify(body)) // the memo knows it, the database no longer accepts it
    expect(warm.status).toBe(401)
    expect(warm.headers.get('www-authenticate')).toBe('Bearer')
    expect((await warm.json()).error).toMatchObject({ code: 'unauthorized', type: 'authentication_error', message: 'invalid or revoked API token' })
  })
})

describe('when the token cannot be checked', () => {
  it('an error before admission is a plain JSON 500 that says nothing of either failure', async () => {
    const token = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'dana' })
    expect((await send(STREAM, token, streamBody())).status).toBe(200) // remembered
    await sql`alter table api_tokens rename to api_tokens_away`.execute(server.database.db)
    try {
      const stream = await send(STREAM, token, streamBody({ model_id: 'nope' }))
      expect([stream.status, stream.headers.get('content-type')]).toEqual([500, 'application/json; charset=utf-8'])
      expect(await stream.json()).toEqual({ error: { code: 'internal_error', message: 'internal server error', request_id: expect.any(String) } })
      const completion = await send(COMPLETIONS, token, JSON.stringify({ model: 'knowagent/nope', messages: [{ role: 'user', content: 'q' }] }))
      expect(completion.status).toBe(500)
      const body = await completion.text()
      expect(JSON.parse(body).error).toMatchObject({ code: 'internal_error', type: 'server_error' })
      expect(body).not.toMatch(/api_tokens|node_modules|nope/)
    } finally {
      await sql`alter table api_tokens_away rename to api_tokens`.execute(server.database.db)
    }
    expect(server.logLines.some((line) => line.includes('could not check the API token'))).toBe(true)
  })
})

describe('resolveAuth and the memo', () => {
  function counting(): { readonly plugin: KyselyPlugin; readonly count: () => number } {
    let statements = 0
    return {
      count: () => statements,
      plugin: { transformQuery: ({ node }) => ((statements += 1), node), transformResult: async ({ result }) => result },
    }
  }
  async function authenticate(ctx: AppContext, method: string, path: string, token: string): Promise<Request> {
    const req = { method, path, get: (name: string) => (name.toLowerCase() === 'authorization' ? `Bearer ${token}` : undefined) } as unknown as Request
    await new Promise<void>((resolve, reject) => void resolveAuth(ctx)(req, {} as never, (error?: unknown) => (error ? reject(error) : resolve())))
    return req
  }

  it('takes a remembered token unchecked only on the two turn endpoints; everywhere else it is looked up', async () => {
    const log = counting()
    const ctx = { ...server.ctx, db: server.database.db.withPlugin(log.plugin), tokenMemo: createTokenMemo() } as AppContext
    const first = await authenticate(ctx, 'POST', STREAM, dana.token)
    expect([log.count(), first.auth?.uncheckedTokenHash]).toEqual([1, undefined]) // not remembered yet: looked up, then remembered
    for (const path of [STREAM, COMPLETIONS]) {
      const req = await authenticate(ctx, 'POST', path, dana.token)
      expect(req.auth).toMatchObject({ user: { id: dana.user.id }, via: 'token', uncheckedTokenHash: hashToken({ secret: TEST_SECRET, token: dana.token }) })
    }
    expect(log.count()).toBe(1)
    for (const [method, path] of [['GET', '/api/v1/knowledge-agent/options'], ['POST', '/api/v1/knowledge-agent/command'], ['GET', STREAM], ['POST', '/v1/models']]) {
      const req = await authenticate(ctx, method!, path!, dana.token)
      expect(req.auth?.uncheckedTokenHash).toBeUndefined()
    }
    expect(log.count()).toBe(5)
  })
})
