// The compile API, the compile form and the task center behind the guards every other route has:
// sign-in (401 / a sign-in redirect), revocable tokens, CSRF (header or form field, never the
// query), the shared query decoder (400 invalid_request), a per-person request limit counted in
// PostgreSQL across server processes, and a cap on the live job streams one person holds open.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { revokeApiTokens } from '../../src/effects/auth/users.ts'
const MAX_JOB_STREAMS_PER_USER = 10
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const API = '/api/v1/knowledge-agent'
const LIMIT = 3
const SOME_JOB = '00000000-0000-4000-8000-000000000000'

describe('compile and task routes: the same guards as the rest', () => {
  let clock = Date.parse('2026-12-01T00:00:00Z')
  const now = () => clock
  let first: TestServer
  let second: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  let carol: Awaited<ReturnType<typeof addUserWithToken>>
  let session: { cookie: string; csrf: string }
  const configure = (config: Parameters<NonNullable<Parameters<typeof startTestServer>[0]>['configure'] & {}>[0]) => ({
    ...config,
    compileRequestsPerMinute: LIMIT,
  })
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const compileBody = JSON.stringify({ uris: ['kb://me/missing.md'], channel: 'llm', model_id: 'nope' })
  const postCompile = (server: TestServer, token: string) =>
    fetch(`${server.url}${API}/compile`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: compileBody })

  beforeAll(async () => {
    first = await startTestServer({ compile: { worker: false }, configure, now })
    second = await startTestServer({ compile: { worker: false }, configure, now, databaseUrl: first.database.url })
    alice = await addUserWithToken(first, 'alice')
    bob = await addUserWithToken(first, 'bob')
    carol = await addUserWithToken(first, 'carol')
    session = await signIn(first, 'alice', alice.password)
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
  })

  it('refuses anonymous callers on every compile and task route (401 for the API and htmx, a sign-in redirect for pages)', async () => {
    const api: Array<[string, string]> = [
      ['POST', `${API}/compile`],
      ['GET', `${API}/jobs`],
      ['GET', `${API}/jobs/stream`],
      ['GET', `${API}/jobs/${SOME_JOB}`],
      ['POST', `${API}/jobs/${SOME_JOB}/cancel`],
      ['POST', `${API}/jobs/${SOME_JOB}/retry`],
      ['POST', '/workspace/compile'],
      ['POST', '/workspace/compile/skills'],
      ['POST', `/tasks/${SOME_JOB}/cancel`],
      ['POST', `/tasks/${SOME_JOB}/retry`],
    ]
    for (const [method, path] of api) {
      const res = await fetch(`${first.url}${path}`, { method, redirect: 'manual' })
      expect([method, path, res.status]).toEqual([method, path, 401])
    }
    for (const path of ['/tasks', '/tasks/stream', '/workspace/compile/form?uri=kb://me/']) {
      const page = await fetch(`${first.url}${path}`, { redirect: 'manual' })
      expect([path, page.status, page.headers.get('location')]).toEqual([path, 303, `/login?next=${encodeURIComponent(path)}`])
      const htmx = await fetch(`${first.url}${path}`, { redirect: 'manual', headers: { 'hx-request': 'true' } })
      expect([path, htmx.status]).toEqual([path, 401])
      expect(htmx.headers.get('hx-redirect')).toMatch(/^\/login\?next=/)
    }
  })

  it('refuses a revoked token on the very next compile request', async () => {
    const dave = await addUserWithToken(first, 'dave')
    expect((await fetch(`${first.url}${API}/jobs`, { headers: bearer(dave.token) })).status).toBe(200)
    await revokeApiTokens(first.database.db, { userId: dave.user.id, tokenId: 'all' })
    for (const server of [first, second]) {
      const res = await fetch(`${server.url}${API}/jobs`, { headers: bearer(dave.token) })
      expect(res.status).toBe(401)
    }
  })

  it('lets a signed-in person through whatever other Authorization scheme a proxy adds', async () => {
    const res = await fetch(`${first.url}/tasks`, { headers: { cookie: session.cookie, authorization: 'Basic cHJveHk6c2VjcmV0' } })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('Task center')
  })

  it('needs the CSRF token (header or _csrf field, never the query) for every state-changing compile and task request', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie }
    const targets: Array<[string, string]> = [
      ['/workspace/compile', 'directory_uri=kb://me/&engine=llm|local&call_budget=5&timeout_seconds=120'],
      ['/workspace/compile/skills', 'skill_name=mine&skill_description=short'],
      [`/tasks/${SOME_JOB}/cancel`, ''],
      [`/tasks/${SOME_JOB}/retry`, ''],
      [`${API}/jobs/${SOME_JOB}/cancel`, ''],
    ]
    for (const [path, body] of targets) {
      const without = await fetch(`${first.url}${path}`, { method: 'POST', headers: form, body })
      expect([path, without.status]).toEqual([path, 403])
      const inQuery = await fetch(`${first.url}${path}?_csrf=${encodeURIComponent(session.csrf)}`, { method: 'POST', headers: form, body })
      expect([path, inQuery.status]).toEqual([path, 403])
    }
    // The documented form field is accepted (an empty selection queues nothing and costs nothing).
    const field = await fetch(`${first.url}/workspace/compile`, {
      method: 'POST',
      headers: form,
      body: new URLSearchParams({ directory_uri: 'kb://me/', engine: 'llm|local', call_budget: '5', timeout_seconds: '120', _csrf: session.csrf }),
    })
    expect(field.status).toBe(200)
    const header = await fetch(`${first.url}/tasks/${SOME_JOB}/cancel`, { method: 'POST', headers: { ...form, 'x-csrf-token': session.csrf } })
    expect(header.status).toBe(404)
  })

  it.each([
    ['offset=1e400'],
    ['offset=99999999999999999999'],
    ['offset=-1'],
    ['limit=-1'],
    ['limit=abc'],
    ['limit=0'],
    ['limit=101'],
    ['limit=1&limit=2'],
    ['status=running&status=failed'],
  ])('decodes the job list query like every other endpoint: %s is 400 invalid_request', async (query) => {
    for (const path of [`${API}/jobs`, `${API}/jobs/stream`]) {
      const res = await fetch(`${first.url}${path}?${query}`, { headers: bearer(alice.token) })
      expect([path, res.status]).toEqual([path, 400])
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request')
    }
    for (const path of ['/tasks', '/tasks/stream']) {
      const res = await fetch(`${first.url}${path}?${query}`, { headers: { cookie: session.cookie } })
      expect([path, res.status]).toEqual([path, 400])
    }
  })

  it.each([
    ['call_budget', '0'],
    ['call_budget', '100000'],
    ['call_budget', '1e3'],
    ['timeout_seconds', '1'],
    ['timeout_seconds', '-600'],
  ])('refuses a compile form with %s=%s (400, never silently corrected)', async (field, value) => {
    const fields = { directory_uri: 'kb://me/', uris: 'kb://me/missing.md', engine: 'llm|local', call_budget: '5', timeout_seconds: '120', [field]: value }
    const res = await fetch(`${first.url}/workspace/compile`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie, 'x-csrf-token': session.csrf },
      body: new URLSearchParams(fields),
    })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain(field)
  })

  it('decodes the compile form query: no uri, or two, is 400', async () => {
    for (const query of ['', '?uri=', '?uri=kb://me/&uri=kb://me/x/']) {
      const res = await fetch(`${first.url}/workspace/compile/form${query}`, { headers: { cookie: session.cookie } })
      expect([query, res.status]).toEqual([query, 400])
    }
  })

  it('limits compile requests per person across server processes (429 with Retry-After), and lets them through again after the window', async () => {
    // bob's requests on two servers sharing the database draw on one budget.
    for (let i = 0; i < LIMIT; i++) {
      const res = await postCompile(i % 2 === 0 ? first : second, bob.token)
      expect(res.status).toBe(200)
    }
    for (const server of [first, second]) {
      const refused = await postCompile(server, bob.token)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('60')
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited')
    }
    // Asking to retry a job that is not there is answered (404) without drawing on the budget: twenty of
    // them leave carol's compile requests untouched (they used to lock her out for the window).
    const retry = await fetch(`${second.url}${API}/jobs/${SOME_JOB}/retry`, { method: 'POST', headers: bearer(bob.token) })
    expect(retry.status).toBe(404)
    for (let i = 0; i < 20; i++) {
      expect((await fetch(`${first.url}${API}/jobs/${SOME_JOB}/retry`, { method: 'POST', headers: bearer(carol.token) })).status).toBe(404)
    }
    // Another person is not affected.
    expect((await postCompile(first, carol.token)).status).toBe(200)
    // A request that does not decode costs nothing and says what is wrong.
    const bad = await fetch(`${first.url}${API}/compile`, { method: 'POST', headers: { ...bearer(carol.token), 'content-type': 'application/json' }, body: '{"uris":[]}' })
    expect(bad.status).toBe(400)

    clock += 60_000
    expect((await postCompile(second, bob.token)).status).toBe(200)
  })

  it('limits the compile form the same way, with the reason in the fragment', async () => {
    const erin = await addUserWithToken(first, 'erin')
    const { cookie, csrf } = await signIn(first, 'erin', erin.password)
    const send = () =>
      fetch(`${first.url}/workspace/compile`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-csrf-token': csrf },
        body: new URLSearchParams({ directory_uri: 'kb://me/', uris: 'kb://me/missing.md', engine: 'llm|nope', call_budget: '5', timeout_seconds: '120' }),
      })
    for (let i = 0; i < LIMIT; i++) expect((await send()).status).toBe(200)
    const refused = await send()
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(await refused.text()).toContain(`at most ${LIMIT} compile requests per minute`)
  })

  it('answers a task-center retry of a job that cannot be retried (missing, queued, running, succeeded) without using the compile rate limit; a retry that queues work uses it', async () => {
    // Regression: POST /tasks/:id/retry drew on the limit before asking whether the job could be retried at all (the API's retry did not).
    const gina = await addUserWithToken(first, 'gina')
    const { cookie, csrf } = await signIn(first, 'gina', gina.password)
    for (const name of ['a.md', 'b.md', 'c.md']) {
      await putText(first.database.db, { owner: gina.user, segments: ['limits', name], text: `# ${name}` })
    }
    const queue = (name: string) =>
      fetch(`${first.url}${API}/compile`, { method: 'POST', headers: { ...bearer(gina.token), 'content-type': 'application/json' }, body: JSON.stringify({ uris: [`kb://me/limits/${name}`], channel: 'llm', model_id: 'local' }) })
    const row = (action: 'retry' | 'cancel', id: string) =>
      fetch(`${first.url}/tasks/${id}/${action}`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'hx-request': 'true' } })
    const setStatus = (id: string, status: 'running' | 'succeeded') => first.database.db.updateTable('jobs').set({ status }).where('id', '=', id).execute()

    const queued = await queue('a.md') // 1 of LIMIT
    expect(queued.status).toBe(201)
    const id = ((await queued.json()) as { jobs: Array<{ id: string }> }).jobs[0]!.id
    for (let i = 0; i < LIMIT + 1; i++) {
      expect((await row('retry', SOME_JOB)).status).toBe(404)
      const notQueuedAgain = await row('retry', id)
      expect(notQueuedAgain.status).toBe(409)
      expect(await notQueuedAgain.text()).toContain('only a failed or cancelled job can be retried')
    }
    for (const status of ['running', 'succeeded'] as const) {
      await setStatus(id, status)
      for (let i = 0; i < LIMIT + 1; i++) expect((await row('retry', id)).status).toBe(409)
    }
    expect((await queue('b.md')).status).toBe(201) // 2 of LIMIT: none of the retries above used one
    // A retry that queues work again is a compile request like any other.
    await setStatus(id, 'running')
    expect((await row('cancel', id)).status).toBe(200)
    const retried = await row('retry', id) // 3 of LIMIT
    expect(retried.status).toBe(200)
    expect(await retried.text()).toContain('data-status="queued"')
    const refused = await queue('c.md')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).not.toBeNull()
  })

  it('caps the live job streams one person holds open, and gives a place back when a stream closes', async () => {
    const open = async (token: string) => {
      const controller = new AbortController()
      const res = await fetch(`${first.url}${API}/jobs/stream`, { headers: bearer(token), signal: controller.signal })
      return { res, close: () => controller.abort() }
    }
    const streams = []
    for (let i = 0; i < MAX_JOB_STREAMS_PER_USER; i++) {
      const stream = await open(alice.token)
      expect(stream.res.status).toBe(200)
      streams.push(stream)
    }
    const refused = await open(alice.token)
    expect(refused.res.status).toBe(429)
    expect(((await refused.res.json()) as { error: { code: string } }).error.code).toBe('too_many_streams')
    const htmx = await fetch(`${first.url}/tasks/stream`, { headers: { cookie: session.cookie } })
    expect(htmx.status).toBe(429)

    const others = await open(bob.token)
    expect(others.res.status).toBe(200)
    others.close()

    streams.pop()!.close()
    // The server frees the place when it sees the connection close.
    const again = await vi.waitFor(
      async () => {
        const stream = await open(alice.token)
        if (stream.res.status !== 200) throw new Error(`still ${stream.res.status}`)
        return stream
      },
      { timeout: 5000, interval: 20 },
    )
    streams.push(again)
    for (const stream of streams) stream.close()
  })
})
