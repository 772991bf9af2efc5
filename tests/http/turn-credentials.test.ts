// A running turn lives as long as the credential it was started with: a revoked bearer token or a
// password change (which signs out every session) ends the owner's running turns at once, through
// the turn's cancel path — one terminal `error` event with code `auth.revoked` and the text so far,
// the turn recorded `cancelled`, the provider's request let go. The notice comes through
// PostgreSQL (NOTIFY), as it does from the CLI or another server process. A turn whose credential
// still holds runs on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiTokenFor, createUser, listApiTokens, revokeApiTokens, setPassword } from '../../src/effects/auth/users.ts'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { readSseEvents, terminalEvents } from '../support/sse-frames.ts'
import { type ScriptedProvider, textAnswerSse } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { signIn, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { TEST_PASSWORD_COST } from '../support/test-database.ts'

const HALF = 'data: {"choices":[{"index":0,"delta":{"content":"half an answer"}}]}\n\n'

describe('running turns end when their credential does', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let close: (() => Promise<void>) | undefined
  let user: Awaited<ReturnType<typeof createUser>>

  beforeAll(async () => {
    // The timer alone would take an hour: whatever ends a turn here is the change feed's notice.
    ;({ server, provider, close } = await startScriptedServer({ compile: { worker: false }, credentialRecheckMs: 3_600_000 }))
    await server.ctx.feed!.ready()
    user = await createUser(server.database.db, { login: 'carol', password: 'password-carol', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(() => close?.())

  /** A turn whose provider streams half an answer and then waits for `release`. */
  async function startTurn(headers: Record<string, string>, release: Promise<unknown>) {
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: HALF }, { bytes: textAnswerSse(' and the rest'), after: release }] })
    const index = provider.requests.length
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'remote', message: 'q' }),
    })
    expect(res.status).toBe(200)
    await provider.waitForRequests(index + 1)
    return { index, turnId: res.headers.get('x-turn-id')!, reading: readSseEvents(res) }
  }

  it('a revoked token ends its turn with auth.revoked and the partial text; a turn of another token of the same user runs on', async () => {
    const leaked = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'carol', label: 'leaked' })
    const kept = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'carol', label: 'kept' })
    const never = Promise.withResolvers<void>()
    const later = Promise.withResolvers<void>()
    const revokedTurn = await startTurn({ authorization: `Bearer ${leaked}` }, never.promise)
    const keptTurn = await startTurn({ authorization: `Bearer ${kept}` }, later.promise)

    const leakedId = (await listApiTokens(server.database.db, { userId: user.id })).find((token) => token.label === 'leaked')!.id
    expect(await revokeApiTokens(server.database.db, { userId: user.id, tokenId: leakedId })).toBe(1)

    const { events } = await revokedTurn.reading
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'auth.revoked', partial: 'half an answer' } })
    const turn = await findTurn(server.database.db, revokedTurn.turnId)
    expect({ status: turn!.status, code: turn!.error_code }).toEqual({ status: 'cancelled', code: 'auth.revoked' })
    expect((await provider.waitForClientClose(revokedTurn.index)).clientClosedAt).toBeDefined()

    // the other token's turn was not touched: it finishes its answer
    later.resolve()
    const kept_ = await keptTurn.reading
    expect(kept_.events.at(-1)!.event).toBe('done')
    expect(kept_.events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('')).toBe('half an answer and the rest')
    never.resolve()
  })

  it('a password change (`knowagent user passwd`, from any process) ends the turns of the sessions it signs out', async () => {
    const { cookie, csrf } = await signIn(server, 'carol', 'password-carol')
    const never = Promise.withResolvers<void>()
    const sessionTurn = await startTurn({ cookie, 'x-csrf-token': csrf }, never.promise)
    const change = await setPassword(server.database.db, { login: 'carol', password: 'another-password-carol' })
    expect(change.sessionsEnded).toBeGreaterThan(0)
    const { events } = await sessionTurn.reading
    expect(terminalEvents(events)).toHaveLength(1)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'auth.revoked', partial: 'half an answer' } })
    expect((await findTurn(server.database.db, sessionTurn.turnId))!.status).toBe('cancelled')
    never.resolve()
  })
})
