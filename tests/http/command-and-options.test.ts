import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { putFile } from '../../src/effects/workspace/store.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

describe('options and command endpoints', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  const post = (token: string, body: unknown) =>
    fetch(`${server.url}/api/v1/knowledge-agent/command`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })

  beforeAll(async () => {
    server = await startTestServer({
      env: { SECRET_PROVIDER_KEY: 'sk-test-do-not-leak-123456' },
      configure: (config) => ({
        ...config,
        file: {
          ...config.file,
          models: [
            {
              id: 'remote-a',
              name: 'Remote A',
              profile: 'acme',
              baseUrl: 'http://127.0.0.1:9/v1',
              apiKeyEnv: 'SECRET_PROVIDER_KEY',
              model: 'acme-large',
              contextWindow: 65536,
              maxOutputTokens: 4096,
              supportsNativeToolCalling: false,
              headers: { 'X-Secret-Header': 'hidden-value' },
            },
          ],
        },
      }),
    })
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
    const text = 'Compaction keeps URIs. '.repeat(10)
    await putText(server.database.db, { owner: alice.user, segments: ['docs', 'a.md'], text })
  })
  afterAll(async () => {
    await server?.close()
  })

  it('options lists safe model metadata only', async () => {
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/options`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body.models).toEqual([
      { id: 'remote-a', name: 'Remote A', profile: 'acme', context_window: 65536, supports_native_tool_calling: false, supports_reasoning_effort: false },
      { id: 'local', name: 'Local extractive (no LLM)', profile: 'builtin', context_window: expect.any(Number), supports_native_tool_calling: true, supports_reasoning_effort: false },
    ])
    const text = JSON.stringify(body)
    for (const secret of ['sk-test-do-not-leak', '127.0.0.1:9', 'X-Secret-Header', 'hidden-value', 'SECRET_PROVIDER_KEY', 'acme-large']) {
      expect(text).not.toContain(secret)
    }
    expect(body.compile).toBeNull() // this server runs without compile jobs (tests/http/compile-routes.test.ts has them)
  })

  it('runs ls, read, search and status without a model', async () => {
    const ls = await (await post(alice.token, { command: 'ls', uri: 'kb://me/docs/' })).json()
    expect(ls.result.entries.map((e: { uri: string }) => e.uri)).toEqual(['kb://users/alice/docs/a.md'])
    const read = await (await post(alice.token, { command: 'read', uri: 'kb://me/docs/a.md', offset: 11, limit: 5 })).json()
    expect(read.result).toMatchObject({ offset: 11, next_offset: 16, text: 'keeps' })
    const search = await (await post(alice.token, { command: 'search', uri: 'kb://me/', query: 'keeps uris' })).json()
    expect(search.result.hits[0].uri).toBe('kb://users/alice/docs/a.md')
    const status = await (await post(alice.token, { command: 'status', uri: 'kb://me/docs/a.md' })).json()
    expect(status.result.body.status).toBe('succeeded')
  })

  it("status of a folder is a page of the files below it, each with its own latest parse and compile job; never another user's", async () => {
    const put = (owner: typeof alice, segments: string[], ok: boolean) =>
      putFile(server.database.db, {
        owner: owner.user,
        segments,
        bytes: new TextEncoder().encode(segments.join('/')),
        parsed: ok ? { ok: true, mime: 'text/markdown', text: 'x' } : { ok: false, mime: 'application/pdf', error: 'broken pdf' },
      })
    for (let i = 0; i < 51; i++) await put(alice, ['status-dir', 'many', `f${String(i).padStart(2, '0')}.md`], true)
    await put(alice, ['status-dir', 'bad.pdf'], false)
    await put(bob, ['status-dir', 'bobs.md'], true)
    const db = server.database.db
    const good = await db.selectFrom('nodes').select(['id']).where('owner_id', '=', alice.user.id).where('path', '=', 'status-dir/many/f00.md').executeTakeFirstOrThrow()
    const jobId = crypto.randomUUID()
    await db.insertInto('jobs').values({ id: jobId, owner_id: alice.user.id, uri: 'kb://users/alice/status-dir/many/', kind: 'compile', status: 'succeeded' }).execute()
    await db.insertInto('compile_job_files').values({ job_id: jobId, position: 0, owner_id: alice.user.id, node_id: good.id, uri: 'kb://users/alice/status-dir/many/f00.md' }).execute()

    const first = (await (await post(alice.token, { command: 'status', uri: 'kb://me/status-dir/' })).json()) as {
      summary: string
      result: { kind: string; total: number; offset: number; next_offset: number | null; files: Array<{ uri: string; body: { status: string; error: string | null } | null; compile: { status: string } | null }> }
    }
    expect(first.result).toMatchObject({ kind: 'directory', total: 52, offset: 0, next_offset: 50 })
    expect(first.result.files).toHaveLength(50)
    expect(first.result.files[0]).toMatchObject({ uri: 'kb://users/alice/status-dir/bad.pdf', body: { status: 'failed', error: 'broken pdf' }, compile: null })
    expect(first.result.files[1]).toMatchObject({ uri: 'kb://users/alice/status-dir/many/f00.md', body: { status: 'succeeded' }, compile: { status: 'succeeded' } })
    expect(first.result.files[2]).toMatchObject({ uri: 'kb://users/alice/status-dir/many/f01.md', compile: null })
    expect(first.summary).toContain('52 files below kb://users/alice/status-dir/')
    const second = (await (await post(alice.token, { command: 'status', uri: 'kb://me/status-dir/', offset: 50 })).json()) as typeof first
    expect(second.result).toMatchObject({ total: 52, offset: 50, next_offset: null })
    expect(second.result.files.map((file) => file.uri)).toEqual(['kb://users/alice/status-dir/many/f49.md', 'kb://users/alice/status-dir/many/f50.md'])
    expect(JSON.stringify([first, second])).not.toContain('bobs.md')
    const file = (await (await post(alice.token, { command: 'status', uri: 'kb://me/status-dir/bad.pdf' })).json()) as { result: { kind: string; body: { status: string } } }
    expect(file.result).toMatchObject({ kind: 'file', body: { status: 'failed' }, compile: null })
  })

  it.each([
    [{ command: 'rm', uri: 'kb://me/' }, 400, 'invalid_request'],
    [{ uri: 'kb://me/' }, 400, 'invalid_request'],
    [{ command: 'ls', uri: 42 }, 400, 'invalid_request'],
    [{ command: 'ls', uri: 'kb://me/', extra: 1 }, 400, 'invalid_request'],
    [{ command: 'search', uri: 'kb://me/' }, 400, 'invalid_request'],
    [{ command: 'read', uri: 'kb://me/docs/a.md', limit: 6001 }, 400, 'invalid_arguments'],
    [{ command: 'ls', uri: 'kb://me/../x' }, 400, 'invalid_uri'],
    [{ command: 'ls', uri: 'kb://users/alice/' }, 403, 'outside_scope'],
    [{ command: 'read', uri: 'kb://me/nothing.md' }, 404, 'not_found'],
    ['{broken', 400, 'invalid_json'],
  ])('bad input %j → %i %s', async (body, status, code) => {
    const res = await post(bob.token, body)
    expect(res.status).toBe(status)
    expect((await res.json()).error.code).toBe(code)
  })

  it('requires auth and CSRF for cookies', async () => {
    expect((await fetch(`${server.url}/api/v1/knowledge-agent/options`)).status).toBe(401)
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    const noCsrf = await fetch(`${server.url}/api/v1/knowledge-agent/command`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'ls', uri: 'kb://me/' }),
    })
    expect(noCsrf.status).toBe(403)
    const ok = await fetch(`${server.url}/api/v1/knowledge-agent/command`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ command: 'ls', uri: 'kb://me/' }),
    })
    expect(ok.status).toBe(200)
  })
})
