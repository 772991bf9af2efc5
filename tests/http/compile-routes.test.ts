// The compile API and the task center over real HTTP: two app servers (two "processes") on one
// PostgreSQL, one of them running a worker; live updates reach the other through LISTEN/NOTIFY.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { decodeSseStream } from '../../src/sse/sse-decoder.ts'
import { COMPILE_STAGES } from '../../src/machines/compile-job-contract.ts'
import { fakeCliProfile } from '../support/compile-harness.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const API = '/api/v1/knowledge-agent'

describe('compile jobs over HTTP', () => {
  let withWorker: TestServer
  let other: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  const call = (server: TestServer, token: string, method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
  const put = (owner: { id: string; login: string }, segments: string[], text: string) => putText(withWorker.database.db, { owner, segments, text })

  beforeAll(async () => {
    const cliProfiles = [fakeCliProfile()]
    withWorker = await startTestServer({ compile: { worker: true, cliProfiles } })
    other = await startTestServer({ compile: { worker: false, cliProfiles }, databaseUrl: withWorker.database.url })
    alice = await addUserWithToken(withWorker, 'alice')
    bob = await addUserWithToken(withWorker, 'bob')
    await put(alice.user, ['docs', 'a.md'], 'Alpha notes about the queue. The queue retries failed jobs.')
    await put(alice.user, ['docs', 'b.md'], 'Beta notes about workers. Workers send heartbeats.')
    await put(alice.user, ['live', 'c.md'], 'Gamma notes, compiled while someone watches.')
  })
  afterAll(async () => {
    await other?.close()
    await withWorker?.close()
  })

  it('options lists the CLI profiles model policy and the compile defaults, never a command line', async () => {
    const body = (await (await call(other, alice.token, 'GET', `${API}/options`)).json()) as { compile: Record<string, unknown> }
    expect(body.compile).toMatchObject({
      cli_profiles: [{ id: 'fake', name: 'Fake CLI', models: ['fake-model'], reasoning_levels: ['low', 'medium', 'high'], timeout_seconds: 300 }],
      defaults: { channel: 'llm', model_id: 'local', reasoning_level: 'medium', call_budget: 40, timeout_seconds: 600, max_files: 32, skill: 'wiki-default' },
      skills: [{ ref: 'wiki-default', source: 'bundled' }],
    })
    expect(JSON.stringify(body)).not.toMatch(/fake-cli|execPath|node_modules|\{model\}/)
  })

  it.each([
    ['no uris', { channel: 'llm' }],
    ['an empty uri list', { uris: [], channel: 'llm' }],
    ['an unknown channel', { uris: ['kb://me/docs/a.md'], channel: 'shell' }],
    ['a zero budget', { uris: ['kb://me/docs/a.md'], channel: 'llm', call_budget: 0 }],
    ['a budget over the limit', { uris: ['kb://me/docs/a.md'], channel: 'llm', call_budget: 100_000 }],
    ['a tiny timeout', { uris: ['kb://me/docs/a.md'], channel: 'llm', timeout_seconds: 1 }],
    ['an unknown field', { uris: ['kb://me/docs/a.md'], channel: 'llm', command: ['/bin/sh'] }],
    ['a string for uris', { uris: 'kb://me/docs/a.md', channel: 'llm' }],
    ['a CLI profile with channel llm (it would be dropped)', { uris: ['kb://me/docs/a.md'], channel: 'llm', profile_id: 'fake' }],
  ])('refuses %s with 400', async (_, body) => {
    const res = await call(other, alice.token, 'POST', `${API}/compile`, body)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request')
  })

  it('needs the CSRF token with a session cookie', async () => {
    const { cookie, csrf } = await signIn(other, 'alice', alice.password)
    const body = JSON.stringify({ uris: ['kb://me/docs/a.md'], channel: 'llm', model_id: 'nope' })
    const without = await fetch(`${other.url}${API}/compile`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body })
    expect(without.status).toBe(403)
    const withToken = await fetch(`${other.url}${API}/compile`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body })
    expect(withToken.status).toBe(200)
    expect(((await withToken.json()) as { refused: Array<{ code: string }> }).refused.map((r) => r.code)).toEqual(['unknown_model'])
  })

  it('queues (201), returns the identical job (200), lists, shows and guards jobs per user', async () => {
    const body = { uris: ['kb://me/docs/a.md', 'kb://me/docs/b.md'], channel: 'cli', profile_id: 'fake', model_id: 'fake-model', reasoning_level: 'low' }
    const created = await call(other, alice.token, 'POST', `${API}/compile`, body)
    expect(created.status).toBe(201)
    const first = (await created.json()) as { jobs: Array<{ id: string; created: boolean; status: string }>; queued: unknown[]; refused: unknown[] }
    expect(first.jobs).toMatchObject([{ created: true, status: 'queued' }])
    expect(first.queued).toHaveLength(2)
    const id = first.jobs[0]!.id

    const again = await call(other, alice.token, 'POST', `${API}/compile`, body)
    // the worker may have finished it already; then a new identical job is fine, a duplicate of an active one is not
    const second = (await again.json()) as { jobs: Array<{ id: string; created: boolean }> }
    if (again.status === 200) expect(second.jobs).toMatchObject([{ id, created: false }])

    const job = (await (await call(other, alice.token, 'GET', `${API}/jobs/${id}`)).json()) as { job: { id: string; configuration: Record<string, unknown> } }
    expect(job.job.configuration).toMatchObject({ channel: 'cli', profile_id: 'fake', model_id: 'fake-model', reasoning_level: 'low' })
    expect((await call(other, bob.token, 'GET', `${API}/jobs/${id}`)).status).toBe(404)
    expect((await call(other, bob.token, 'POST', `${API}/jobs/${id}/cancel`)).status).toBe(404)
    expect((await call(other, alice.token, 'GET', `${API}/jobs/not-a-uuid`)).status).toBe(404)

    const list = (await (await call(other, alice.token, 'GET', `${API}/jobs?directory=${encodeURIComponent('kb://me/docs')}&limit=1`)).json()) as { jobs: Array<{ directory_uri: string }>; total: number; next_offset: number | null }
    expect(list.jobs.map((j) => j.directory_uri)).toEqual(['kb://users/alice/docs/'])
    expect(list.total).toBeGreaterThanOrEqual(1)
    expect((await (await call(other, bob.token, 'GET', `${API}/jobs`)).json()) as { total: number }).toMatchObject({ total: 0 })
    expect((await call(other, alice.token, 'GET', `${API}/jobs?status=exploded`)).status).toBe(400)
    expect((await call(other, alice.token, 'GET', `${API}/jobs?directory=${encodeURIComponent('kb://users/bob/')}`)).status).toBe(403)
  })

  it('streams a job live from another server process, from queued to succeeded, and lets go when the client leaves', async () => {
    const listening = other.ctx.compile!.events.subscribers()
    const controller = new AbortController()
    const res = await fetch(`${other.url}${API}/jobs/stream?directory=${encodeURIComponent('kb://me/live/')}`, { headers: { authorization: `Bearer ${alice.token}` }, signal: controller.signal })
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const seen: Array<{ event: string; data: Record<string, unknown> }> = []
    const stages: string[] = []
    let jobId: string | undefined
    const reading = (async () => {
      try {
        for await (const event of decodeSseStream(res.body!)) {
          const data = JSON.parse(event.data) as Record<string, unknown>
          seen.push({ event: event.event, data })
          if (seen.length === 1) {
            // the snapshot is there: now queue through the other server
            const queued = (await (await call(withWorker, alice.token, 'POST', `${API}/compile`, { uris: ['kb://me/live/c.md'], channel: 'llm', model_id: 'local' })).json()) as { jobs: Array<{ id: string }> }
            jobId = queued.jobs[0]!.id
          }
          if (event.event === 'job') {
            const job = data.job as { id: string; status: string; stage: string | null }
            if (job.id === jobId) stages.push(`${job.status}${job.stage ? `:${job.stage}` : ''}`)
            if (job.id === jobId && job.status === 'succeeded') return
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error
      }
    })()
    await reading
    expect(seen[0]).toEqual({ event: 'jobs', data: { jobs: [] } })
    // The stream sends the row as it is when a notification is read: a local job can pass a stage
    // before that read, so a stage may be skipped or shown twice, never shown out of order.
    const order = ['queued', ...COMPILE_STAGES.map((stage) => `running:${stage}`), 'succeeded']
    const positions = stages.map((stage) => order.indexOf(stage))
    expect(stages[0]).toBe('queued')
    expect(stages.at(-1)).toBe('succeeded')
    expect(positions).not.toContain(-1)
    expect(positions).toEqual([...positions].sort((a, b) => a - b))
    expect(other.ctx.compile!.events.subscribers()).toBe(listening + 1)
    controller.abort()
    await vi.waitFor(() => expect(other.ctx.compile!.events.subscribers()).toBe(listening))
  })

  it('cancels and retries through the API with clear codes', async () => {
    await put(alice.user, ['slow', 'd.md'], 'Delta.')
    // a job no worker can finish quickly: an unknown-to-the-worker model makes it fail for good
    const queued = (await (await call(other, alice.token, 'POST', `${API}/compile`, { uris: ['kb://me/slow/d.md'], channel: 'llm', model_id: 'local', call_budget: 1 })).json()) as { jobs: Array<{ id: string }> }
    const id = queued.jobs[0]!.id
    let status = ''
    for (let i = 0; i < 200 && status !== 'failed'; i++) {
      status = ((await (await call(other, alice.token, 'GET', `${API}/jobs/${id}`)).json()) as { job: { status: string } }).job.status
      if (status !== 'failed') await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const failed = (await (await call(other, alice.token, 'GET', `${API}/jobs/${id}`)).json()) as { job: { failure: { code: string; stage: string } } }
    expect(failed.job.failure).toMatchObject({ code: 'budget_exhausted', stage: 'overview' })
    const cancel = await call(other, alice.token, 'POST', `${API}/jobs/${id}/cancel`)
    expect(cancel.status).toBe(409)
    expect(((await cancel.json()) as { error: { code: string } }).error.code).toBe('job_finished')
    const retry = await call(other, alice.token, 'POST', `${API}/jobs/${id}/retry`)
    expect(retry.status).toBe(200)
    expect(((await retry.json()) as { job: { status: string; configuration: { call_budget: number } } }).job).toMatchObject({ status: 'queued', configuration: { call_budget: 1 } })
    expect((await call(other, alice.token, 'POST', `${API}/jobs/${id}/retry`)).status).toBe(409)
  })

  it("saves a person's compile skill from the form in their own tree, for their jobs only", async () => {
    const { cookie, csrf } = await signIn(other, 'alice', alice.password)
    const form = (fields: Record<string, string>) =>
      fetch(`${other.url}/workspace/compile/skills`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) })
    const saved = await form({ skill_name: 'ops-notes', skill_description: 'Notes for <on-call>', skill_audience: 'on-call engineers', skill_language: 'English', skill_keep: 'commands', engine: 'llm|local' })
    expect(saved.status).toBe(200)
    const html = await saved.text()
    expect(html).toContain('<option value="user:ops-notes" selected')
    expect(html).toContain('Saved your skill &quot;ops-notes&quot;.')
    const file = await call(other, alice.token, 'POST', `${API}/command`, { command: 'read', uri: 'kb://me/.skills/ops-notes/SKILL.md' })
    expect(((await file.json()) as { result: { text: string } }).result.text).toMatch(/^---\nname: "ops-notes"\ndescription: "Notes for <on-call>"\nuse: compile\n---\nWrite for: on-call engineers\./)
    const theirs = (await (await call(other, bob.token, 'GET', `${API}/options`)).json()) as { compile: { skills: Array<{ ref: string }> } }
    expect(theirs.compile.skills.map((skill) => skill.ref)).toEqual(['wiki-default'])
    const bad = await form({ skill_name: '../x', skill_description: '<script>alert(1)</script>' })
    expect(bad.status).toBe(400)
    expect(await bad.text()).not.toContain('<script>')
    const noCsrf = await fetch(`${other.url}/workspace/compile/skills`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: 'skill_name=x&skill_description=y' })
    expect(noCsrf.status).toBe(403)
  })

  it('answers the compile form with the queued job and the refusals, as HTML', async () => {
    const { cookie, csrf } = await signIn(other, 'alice', alice.password)
    await put(alice.user, ['form', 'e.md'], 'Echo.')
    const body = new URLSearchParams([
      ['directory_uri', 'kb://users/alice/form/'],
      ['uris', 'kb://users/alice/form/e.md'],
      ['uris', 'kb://users/alice/docs/a.md'],
      ['engine', 'llm|local'],
      ['reasoning_level', 'medium'],
      ['call_budget', '12'],
      ['timeout_seconds', '600'],
      ['skill', 'wiki-default'],
    ])
    const res = await fetch(`${other.url}/workspace/compile`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/x-www-form-urlencoded' }, body })
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toMatch(/Queued job <code>[0-9a-f]{8}<\/code> for 1 file/)
    expect(html).toContain('data-code="other_directory"')
    const badEngine = await fetch(`${other.url}/workspace/compile`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ directory_uri: 'kb://me/form/', engine: 'shell|rm -rf /', call_budget: '1', timeout_seconds: '60' }) })
    expect(badEngine.status).toBe(400)
    expect(await badEngine.text()).toContain('choose an engine and model from the list')
  })

  it('serves the task center page and its live rows to a signed-in person only', async () => {
    expect((await fetch(`${other.url}/tasks`, { redirect: 'manual' })).status).toBe(303)
    const { cookie } = await signIn(other, 'alice', alice.password)
    const page = await (await fetch(`${other.url}/tasks?directory=${encodeURIComponent('kb://me/docs/')}`, { headers: { cookie } })).text()
    expect(page).toContain('Task center')
    expect(page).toContain('hx-sse:connect="/tasks/stream?directory=kb%3A%2F%2Fusers%2Falice%2Fdocs%2F"')
    expect(page).toMatch(/<tr id="job-[0-9a-f-]{36}" class="job status-/)
  })
})
