// A compile job's CLI profile runs with its owner's resolved Bailian workspace id in the
// environment (BAILIAN_WORKSPACE_ID, SPEC §8/§9), as serve wires it: the composition root's
// retrieval feature resolves the id per owner (config here), the worker exports it to the process.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { fakeCliProfile } from '../support/compile-harness.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const API = '/api/v1/knowledge-agent'

describe('a compile CLI profile and the Bailian workspace id', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${alice.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  beforeAll(async () => {
    server = await startTestServer({
      compile: { worker: true, cliProfiles: [fakeCliProfile({ mode: 'workspace' })] },
      retrieval: true,
      configure: (config) => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: 'http://127.0.0.1:9', workspaceId: 'ws-compile-7' }) }),
    })
    alice = await addUserWithToken(server, 'alice')
    const text = 'Queue notes. The queue retries failed jobs.'
    await putText(server.database.db, { owner: alice.user, segments: ['ops', 'queue.md'], text })
  })
  afterAll(async () => {
    await server?.close()
  })

  it('reaches the CLI process, and its output is what the job publishes', async () => {
    const queued = await call('POST', `${API}/compile`, { uris: ['kb://me/ops/queue.md'], channel: 'cli', profile_id: 'fake', model_id: 'fake-model', reasoning_level: 'low' })
    expect(queued.status).toBe(201)
    const id = ((await queued.json()) as { jobs: Array<{ id: string }> }).jobs[0]!.id
    const job = await vi.waitFor(
      async () => {
        const body = (await (await call('GET', `${API}/jobs/${id}`)).json()) as { job: { status: string; result: { artifacts: string[] } | null } }
        if (body.job.status === 'failed' || body.job.status === 'cancelled') throw new Error(`job ended ${body.job.status}`)
        expect(body.job.status).toBe('succeeded')
        return body.job
      },
      { timeout: 60_000, interval: 100 },
    )
    const summary = job.result!.artifacts.find((uri) => uri.includes('/summaries/'))
    expect(summary).toMatch(/^kb:\/\/users\/alice\/.*summaries\/.*queue/)
    const read = await call('POST', `${API}/command`, { command: 'read', uri: summary })
    expect(((await read.json()) as { result: { text: string } }).result.text).toContain('[workspace ws-compile-7]')
  })
})
