// A compile job's reasoning level on the `llm` channel (issue 33, item 5): a model configured to
// take a reasoning effort gets the job's level as `reasoning_effort`; any other model gets none,
// the form offers it no level, and the level is not part of the job (two requests differing only
// in it are one job). Before, the level reached no model and still split otherwise equal jobs.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type ProviderScript, scriptedModel, textAnswerSse } from '../support/scripted-provider.ts'
import { type ScriptedServer, startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const API = '/api/v1/knowledge-agent'

interface QueueAnswer {
  readonly jobs: ReadonlyArray<{ id: string; created: boolean; configuration: { model_id: string; reasoning_level: string } }>
  readonly refused: ReadonlyArray<{ code: string; job_id?: string }>
}

describe('the reasoning level of an llm compile job', () => {
  let app: ScriptedServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let release: () => void = () => {}
  // Every provider answer waits for the gate, so the first jobs are still active when the second requests come.
  const gate = new Promise<void>((resolve) => (release = resolve))
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${app.server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${alice.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const queue = async (body: Record<string, unknown>) => {
    const response = await call('POST', `${API}/compile`, { channel: 'llm', ...body })
    return { status: response.status, ...((await response.json()) as QueueAnswer) }
  }
  const succeeded = (id: string) =>
    vi.waitFor(
      async () => {
        const { job } = (await (await call('GET', `${API}/jobs/${id}`)).json()) as { job: { status: string } }
        if (job.status === 'failed' || job.status === 'cancelled') throw new Error(`job ${id} ended ${job.status}`)
        expect(job.status).toBe('succeeded')
      },
      { timeout: 60_000, interval: 100 },
    )

  beforeAll(async () => {
    app = await startScriptedServer({
      compile: { worker: true },
      models: (provider) => [
        scriptedModel(provider, { id: 'thinker', name: 'Thinker', model: 'thinker-m', reasoningEffort: 'medium' }),
        scriptedModel(provider, { id: 'plain', name: 'Plain', model: 'plain-m' }),
      ],
    })
    app.provider.setHandler((): ProviderScript => ({ kind: 'stream', chunks: [{ bytes: textAnswerSse('A short summary of the notes.'), after: gate }] }))
    alice = await addUserWithToken(app.server, 'alice')
    await putText(app.server.database.db, { owner: alice.user, segments: ['t', 'notes.md'], text: 'Thinking notes. The queue retries failed jobs.' })
    await putText(app.server.database.db, { owner: alice.user, segments: ['p', 'notes.md'], text: 'Plain notes. Workers send heartbeats.' })
  })
  afterAll(async () => {
    release()
    await app?.close()
  })

  it('the form offers levels for a model that takes them, none for another', async () => {
    const { cookie } = await signIn(app.server, 'alice', alice.password)
    const form = await (await fetch(`${app.server.url}/workspace/compile/form?uri=${encodeURIComponent('kb://me/p/')}`, { headers: { cookie } })).text()
    expect(form).toMatch(/<option value="llm\|thinker"[^>]*data-levels="low,medium,high"/)
    expect(form).toMatch(/<option value="llm\|plain"[^>]*data-levels=""/)
    expect(form).toMatch(/<option value="llm\|local"[^>]*data-levels=""/)
  })

  it('a model without reasoning effort: requests differing only in the level are one job, sent without reasoning_effort', async () => {
    const first = await queue({ uris: ['kb://me/p/notes.md'], model_id: 'plain', reasoning_level: 'low' })
    expect(first).toMatchObject({ status: 201, refused: [], jobs: [{ created: true, configuration: { model_id: 'plain', reasoning_level: '' } }] })
    const second = await queue({ uris: ['kb://me/p/notes.md'], model_id: 'plain', reasoning_level: 'high' })
    expect(second).toMatchObject({ status: 200, refused: [], jobs: [{ id: first.jobs[0]!.id, created: false }] })
    // a level no model takes is still refused, not dropped
    const bad = await queue({ uris: ['kb://me/p/notes.md'], model_id: 'plain', reasoning_level: 'extreme' })
    expect(bad.refused.map((refusal) => refusal.code)).toEqual(['reasoning_not_allowed'])
  })

  it('a model configured with a reasoning effort: the level is part of the job and sent as reasoning_effort', async () => {
    const low = await queue({ uris: ['kb://me/t/notes.md'], model_id: 'thinker', reasoning_level: 'low' })
    expect(low).toMatchObject({ status: 201, jobs: [{ created: true, configuration: { model_id: 'thinker', reasoning_level: 'low' } }] })
    const high = await queue({ uris: ['kb://me/t/notes.md'], model_id: 'thinker', reasoning_level: 'high' })
    expect(high.refused).toMatchObject([{ code: 'conflicting_active_job', job_id: low.jobs[0]!.id }])

    const plainJob = (await queue({ uris: ['kb://me/p/notes.md'], model_id: 'plain' })).jobs[0]!
    release()
    await succeeded(low.jobs[0]!.id)
    await succeeded(plainJob.id)
    const bodies = app.provider.requests.map((request) => request.body as { model: string; reasoning_effort?: string })
    const thinker = bodies.filter((body) => body.model === 'thinker-m')
    const plain = bodies.filter((body) => body.model === 'plain-m')
    expect(thinker.length).toBeGreaterThan(0)
    expect(plain.length).toBeGreaterThan(0)
    expect(thinker.map((body) => body.reasoning_effort)).toEqual(thinker.map(() => 'low')) // the job's level, not the configured "medium"
    expect(plain.filter((body) => 'reasoning_effort' in body)).toEqual([])
  })
})
