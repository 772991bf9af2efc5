// A job stream lives as long as its credential: a revoked bearer token, a signed-out session or a
// password change ends it at once — the change feed says which user's credentials ended, and that
// user's streams re-check theirs — with a last message that says why, and the stream's slot is
// released. A timer re-checks too (AppContext.credentialRecheckMs, 15 s by default), for what
// sends no notice: a session that expired. A stream whose credential still holds goes on.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApiTokenFor, createUser, listApiTokens, revokeApiTokens, setPassword } from '../../src/effects/auth/users.ts'
import { hashToken } from '../../src/effects/auth/tokens.ts'
import { decodeSseStream, type SseEvent } from '../../src/sse/sse-decoder.ts'
import { fakeCliProfile } from '../support/compile-harness.ts'
import { signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'
import { TEST_PASSWORD_COST } from '../support/test-database.ts'

const API = '/api/v1/knowledge-agent'
/** vi.waitFor gives up after 1 s by default; a loaded machine may need longer (it returns as soon as the condition holds). */
const WAIT = { timeout: 10_000 }

/** An open SSE response: every event as it arrives, and whether the stream has ended. */
function follow(res: Response) {
  const events: SseEvent[] = []
  let ended = false
  const reading = (async () => {
    try {
      for await (const event of decodeSseStream(res.body!)) events.push(event)
    } finally {
      ended = true
    }
  })()
  reading.catch(() => {})
  return { events, ended: () => ended, done: reading }
}

describe('job streams end as soon as their credential does', () => {
  let server: TestServer
  let user: Awaited<ReturnType<typeof createUser>>
  const controllers: AbortController[] = []
  const open = (path: string, headers: Record<string, string>) => {
    const controller = new AbortController()
    controllers.push(controller)
    return fetch(`${server.url}${path}`, { headers, signal: controller.signal })
  }
  const tokenId = async (label: string) => (await listApiTokens(server.database.db, { userId: user.id })).find((token) => token.label === label)!.id

  beforeAll(async () => {
    // the timer alone would take an hour: whatever ends a stream here is the change feed's notice
    server = await startTestServer({ compile: { worker: false, cliProfiles: [fakeCliProfile()] }, credentialRecheckMs: 3_600_000 })
    await server.ctx.feed!.ready()
    user = await createUser(server.database.db, { login: 'carol', password: 'password-carol', hashCost: TEST_PASSWORD_COST })
    await putText(server.database.db, { owner: user, segments: ['docs', 'a.md'], text: '# A' })
  })
  afterAll(async () => {
    for (const controller of controllers) controller.abort()
    await server?.close()
  })

  it('a revoked token gets a last `error` event (unauthorized) and its stream ends; another token of the same user keeps streaming', async () => {
    const leaked = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'carol', label: 'leaked' })
    const kept = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'carol', label: 'kept' })
    const subscribers = server.ctx.compile!.events.subscribers()
    const revokedStream = follow(await open(`${API}/jobs/stream`, { authorization: `Bearer ${leaked}` }))
    const keptStream = follow(await open(`${API}/jobs/stream`, { authorization: `Bearer ${kept}` }))
    await vi.waitFor(() => expect(revokedStream.events.map((event) => event.event)).toEqual(['jobs']), WAIT)
    await vi.waitFor(() => expect(keptStream.events.map((event) => event.event)).toEqual(['jobs']), WAIT)
    expect(server.ctx.compile!.events.subscribers()).toBe(subscribers + 2)

    expect(await revokeApiTokens(server.database.db, { userId: user.id, tokenId: await tokenId('leaked') })).toBe(1)
    await revokedStream.done
    const last = revokedStream.events.at(-1)!
    expect(last.event).toBe('error')
    expect(JSON.parse(last.data)).toEqual({ code: 'unauthorized', message: expect.stringContaining('no longer valid') })
    await vi.waitFor(() => expect(server.ctx.compile!.events.subscribers()).toBe(subscribers + 1), WAIT)

    // the stream of the token that still holds sees the next change
    const queued = await fetch(`${server.url}${API}/compile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${kept}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uris: ['kb://me/docs/a.md'], channel: 'cli', profile_id: 'fake', model_id: 'fake-model' }),
    })
    expect(queued.status).toBe(201)
    const { jobs } = (await queued.json()) as { jobs: Array<{ id: string }> }
    await vi.waitFor(() => expect(keptStream.events.some((event) => event.event === 'job' && (JSON.parse(event.data) as { job: { id: string } }).job.id === jobs[0]!.id)).toBe(true), WAIT)
    expect(keptStream.ended()).toBe(false)
  })

  it('a signed-out session gets the table’s close event and its stream ends; its slot is free again', async () => {
    const { cookie, csrf } = await signIn(server, 'carol', 'password-carol')
    const subscribers = server.ctx.compile!.events.subscribers()
    const res = await open('/tasks/stream', { cookie, 'hx-request': 'true' })
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const stream = follow(res)
    await vi.waitFor(() => expect(stream.events.length).toBeGreaterThan(0), WAIT) // the rows as they are
    expect(stream.events[0]!.event).toBe('message')

    const signedOut = await fetch(`${server.url}/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }),
    })
    expect(signedOut.status).toBe(303)
    await stream.done
    expect(stream.events.at(-1)!.event).toBe('signed-out')
    await vi.waitFor(() => expect(server.ctx.compile!.events.subscribers()).toBe(subscribers), WAIT)
  })

  it('a password change (`knowagent user passwd`: its notice goes through PostgreSQL, as from any process) ends the sessions’ streams', async () => {
    const { cookie } = await signIn(server, 'carol', 'password-carol')
    const stream = follow(await open('/tasks/stream', { cookie, 'hx-request': 'true' }))
    await vi.waitFor(() => expect(stream.events.length).toBeGreaterThan(0), WAIT)
    const change = await setPassword(server.database.db, { login: 'carol', password: 'another-password-carol' })
    expect(change.sessionsEnded).toBeGreaterThan(0)
    await stream.done
    expect(stream.events.at(-1)!.event).toBe('signed-out')
    await setPassword(server.database.db, { login: 'carol', password: 'password-carol' })
  })
})

describe('job streams re-check their credential on a timer too', () => {
  let server: TestServer
  const controller = new AbortController()
  beforeAll(async () => {
    server = await startTestServer({ compile: { worker: false, cliProfiles: [fakeCliProfile()] }, credentialRecheckMs: 50 })
    await createUser(server.database.db, { login: 'dave', password: 'password-dave', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    controller.abort()
    await server?.close()
  })

  it('a session that expired (no notice is sent for that) ends its stream at the next check', async () => {
    const { cookie } = await signIn(server, 'dave', 'password-dave')
    const stream = follow(await fetch(`${server.url}/tasks/stream`, { headers: { cookie, 'hx-request': 'true' }, signal: controller.signal }))
    await vi.waitFor(() => expect(stream.events.length).toBeGreaterThan(0), WAIT)
    const token = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1))
    const expired = await server.database.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id_hash', '=', hashToken({ secret: TEST_SECRET, token }))
      .executeTakeFirst()
    expect(Number(expired.numUpdatedRows)).toBe(1)
    await stream.done
    expect(stream.events.at(-1)!.event).toBe('signed-out')
  })
})
