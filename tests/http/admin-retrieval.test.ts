// Administration → Retrieval defaults (issue 36): an administrator changes the server-wide retrieval
// values on /admin/retrieval — the default workspace id, endpointHost, agentVersion, chatTimeoutMs —
// and the next retrieval call of every server (two "processes" on one database) uses them, as
// `knowagent retrieval show` says. Only an administrator's session (with its CSRF token) or token
// gets in; a bad value is refused with nothing changed; a user's own workspace id wins over the
// server default, which wins over the config file's.
import * as Effect from 'effect/Effect'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import type { User } from '../../src/effects/auth/users.ts'
import type { AppConfig } from '../../src/effects/config/app-config.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { readServerSettingsDocument } from '../../src/effects/retrieval/retrieval-server-settings.ts'
import { type FakeBailian, type FakeService, startFakeBailian } from '../support/fake-bailian.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

const KEY = 'sk-admin-retrieval-4c4c'
const SERVICES: FakeService[] = [{ agent_id: 'search-docs', agent_name: 'Docs search', scene: 'search' }]
const PATH = '/admin/retrieval'

describe('Administration → Retrieval defaults', () => {
  let before: FakeBailian
  let after: FakeBailian
  let first: TestServer
  let second: TestServer
  let root: Awaited<ReturnType<typeof addUserWithToken>>
  let mia: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  let rootSession: { cookie: string; csrf: string }
  let miaSession: { cookie: string; csrf: string }

  const cli = async (...argv: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const env = { DATABASE_URL: first.database.url, KNOWAGENT_SECRET: TEST_SECRET, KNOWAGENT_DATA_DIR: '/nonexistent' }
    const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line), env })
    return { code, out: out.join('\n'), err: err.join('\n') }
  }
  const stored = () => readServerSettingsDocument(first.database.db)
  const post = (fields: Record<string, string>, headers: Record<string, string>) =>
    fetch(`${first.url}${PATH}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields) })
  /** A change as the page's form sends it, from the administrator's browser session. */
  const submit = (fields: { key: string; action: 'set' | 'unset'; value?: string }) => post({ ...fields, _csrf: rootSession.csrf }, { cookie: rootSession.cookie })
  const page = async () => (await fetch(`${first.url}${PATH}`, { headers: { cookie: rootSession.cookie } })).text()
  const inForce = (server: TestServer, userId: string) => server.ctx.retrieval!.settings.resolve(userId)
  const search = (server: TestServer, caller: User) => Effect.runPromise(server.ctx.retrieval!.calls.search({ caller, query: 'queue', agentId: 'search-docs' }))
  const auditLines = (server: TestServer) => server.logLines.filter((line) => line.includes('admin action'))

  beforeAll(async () => {
    const workspaces = { 'ws-config': { apiKey: KEY, services: SERVICES }, 'ws-admin': { apiKey: KEY, services: SERVICES }, 'ws-bob': { apiKey: KEY, services: SERVICES } }
    before = await startFakeBailian({ workspaces })
    after = await startFakeBailian({ workspaces })
    const configure = (config: AppConfig): AppConfig => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: before.endpointHost, workspaceId: 'ws-config' }) })
    first = await startTestServer({ retrieval: true, configure })
    second = await startTestServer({ retrieval: true, configure, databaseUrl: first.database.url })
    root = await addUserWithToken(first, 'root') // the first account is an administrator
    mia = await addUserWithToken(first, 'mia')
    bob = await addUserWithToken(first, 'bob')
    expect([root.user.role, mia.user.role]).toEqual(['admin', 'member'])
    for (const user of [root, mia, bob]) await first.ctx.retrieval!.settings.setApiKey(user.user.id, KEY)
    await first.ctx.retrieval!.settings.saveSettings(bob.user.id, { workspaceId: 'ws-bob' })
    rootSession = await signIn(first, 'root', root.password)
    miaSession = await signIn(first, 'mia', mia.password)
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
    await after?.close()
    await before?.close()
  })

  describe('who gets in', () => {
    const callers = [
      { who: 'anonymous', get: 303, post: 401, headers: () => ({}), csrf: () => ({}) },
      { who: "a member's session", get: 403, post: 403, headers: () => ({ cookie: miaSession.cookie }), csrf: () => ({ _csrf: miaSession.csrf }) },
      { who: "a member's token", get: 403, post: 403, headers: () => ({ authorization: `Bearer ${mia.token}` }), csrf: () => ({}) },
      { who: "an admin's session", get: 200, post: 303, headers: () => ({ cookie: rootSession.cookie }), csrf: () => ({ _csrf: rootSession.csrf }) },
      { who: "an admin's token (session_required)", get: 403, post: 403, headers: () => ({ authorization: `Bearer ${root.token}` }), csrf: () => ({}) },
    ]
    it.each(callers)('$who: GET $get, POST $post', async ({ who, get, post: postStatus, headers, csrf }) => {
      const shown = await fetch(`${first.url}${PATH}`, { redirect: 'manual', headers: headers() })
      expect(shown.status).toBe(get)
      if (get === 303) expect(shown.headers.get('location')).toBe(`/login?next=${encodeURIComponent(PATH)}`)
      if (get === 200) expect(await shown.text()).toContain('Retrieval defaults')

      const value = `v-${who.replace(/\W+/g, '-')}`
      const changed = await post({ key: 'agentVersion', action: 'set', value, ...csrf() }, headers())
      expect(changed.status).toBe(postStatus)
      expect(((await stored()) as Record<string, unknown>).agentVersion === value).toBe(postStatus === 303)
      await submit({ key: 'agentVersion', action: 'unset' })
    })

    it("an admin's session without the CSRF token changes nothing (403)", async () => {
      const refused = await post({ key: 'agentVersion', action: 'set', value: 'no-csrf' }, { cookie: rootSession.cookie })
      expect(refused.status).toBe(403)
      expect(await stored()).not.toHaveProperty('agentVersion')
    })
  })

  it('a change on the page is used by the next retrieval call of every server and shown by `knowagent retrieval show`', async () => {
    await search(second, root.user)
    const beforeCount = before.requestsFor('search').length
    const logged = auditLines(first).length

    const saved = await submit({ key: 'endpointHost', action: 'set', value: `  ${after.endpointHost} ` })
    expect(saved.status).toBe(303)
    expect(saved.headers.get('location')).toBe(`${PATH}?notice=saved`)
    const shown = await page()
    expect(shown).toContain(`data-testid="endpointHost-in-force"><code>${after.endpointHost}</code>`)
    expect(shown).toContain('data-testid="endpointHost-source">stored here')
    expect((await submit({ key: 'chatTimeoutMs', action: 'set', value: '45000' })).status).toBe(303)

    for (const server of [first, second]) {
      await waitUntil(async () => {
        const settings = await inForce(server, root.user.id)
        return settings.endpointHost === after.endpointHost && settings.chatTimeoutMs === 45_000
      }, 'the NOTIFY of the change to reach the server')
    }
    await search(second, root.user)
    await search(first, root.user)
    expect(before.requestsFor('search')).toHaveLength(beforeCount) // nothing more went to the config file's endpoint
    expect(after.requestsFor('search')).toHaveLength(2)

    const show = await cli('retrieval', 'show')
    expect(show.code).toBe(0)
    expect(show.out).toContain(`endpointHost = ${JSON.stringify(after.endpointHost)}  [stored in the database]`)
    expect(show.out).toContain('chatTimeoutMs = 45000  [stored in the database]')
    expect(show.out).toContain('agentVersion = (unset)  [built-in default]')

    const audit = auditLines(first).slice(logged).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(audit).toEqual([
      expect.objectContaining({ by: 'root', action: 'retrieval.set', target: 'endpointHost', value: after.endpointHost }),
      expect.objectContaining({ by: 'root', action: 'retrieval.set', target: 'chatTimeoutMs', value: 45_000 }),
    ])

    // back to the config file's value
    expect((await submit({ key: 'endpointHost', action: 'unset' })).status).toBe(303)
    expect(await page()).toContain('data-testid="endpointHost-source">the config file (retrieval.bailian)')
    await waitUntil(async () => (await inForce(second, root.user.id)).endpointHost === before.endpointHost, 'the config file value back in force')
    await search(second, root.user)
    expect(before.requestsFor('search')).toHaveLength(beforeCount + 1)
    // (the CLI reads its own config file: here none, so the built-in default)
    expect((await cli('retrieval', 'show')).out).toMatch(/^endpointHost = .*  \[built-in default\]$/m)
  })

  it('refuses a bad value with a clear message; nothing changes and the last good value stays in force', async () => {
    expect((await submit({ key: 'chatTimeoutMs', action: 'set', value: '5000' })).status).toBe(303)
    const good = await stored()
    const logged = auditLines(first).length
    const cases: Array<[string, string, RegExp]> = [
      ['chatTimeoutMs', 'soon', /chatTimeoutMs must be a whole number of milliseconds from 1000 to 3600000/],
      ['chatTimeoutMs', '0', /chatTimeoutMs must be a whole number/],
      ['endpointHost', 'ftp://files.example/{workspaceId}', /endpointHost must be an http\(s\) address/],
      ['endpointHost', '', /endpointHost must be 1–512 characters/],
      ['agentVersion', 'two words', /agentVersion must be 1–64 characters without spaces/],
      ['workspaceId', 'ws/../other', /workspaceId must be 1–128 letters, digits/],
    ]
    for (const [key, value, message] of cases) {
      const refused = await submit({ key, action: 'set', value })
      expect(refused.status, `${key} = ${value}`).toBe(400)
      const html = await refused.text()
      expect(html).toMatch(message)
      expect(html).toContain('role="alert"')
      expect(html).toContain('aria-invalid="true"')
      expect(html).toContain('data-testid="chatTimeoutMs-in-force"><code>5000</code>')
    }
    expect(await stored()).toEqual(good)
    expect(auditLines(first)).toHaveLength(logged)
    // the second server learns the last good value from the change feed, a moment later
    await waitUntil(async () => (await inForce(second, root.user.id)).chatTimeoutMs === 5000, 'the last good value in force in the second server')

    const unknown = await submit({ key: 'apiKey', action: 'set', value: 'sk-nope' })
    expect(unknown.status).toBe(400)
    expect(await stored()).toEqual(good)
    expect((await submit({ key: 'chatTimeoutMs', action: 'unset' })).status).toBe(303)
  })

  it("the default workspace id: a user's own wins over it, and it wins over the config file's — in every server, at once", async () => {
    const workspacesSearched = (fake: FakeBailian) => fake.requestsFor('search').map((request) => request.workspaceId)
    expect((await inForce(second, mia.user.id)).settings.workspaceId).toEqual({ value: 'ws-config', source: 'config' })

    expect((await submit({ key: 'workspaceId', action: 'set', value: 'ws-admin' })).status).toBe(303)
    for (const server of [first, second]) {
      await waitUntil(async () => (await inForce(server, mia.user.id)).settings.workspaceId.value === 'ws-admin', 'the server default to reach the server')
      expect((await inForce(server, mia.user.id)).settings.workspaceId).toEqual({ value: 'ws-admin', source: 'server' })
      expect((await inForce(server, bob.user.id)).settings.workspaceId).toEqual({ value: 'ws-bob', source: 'user' })
    }
    const searched = workspacesSearched(before).length
    await search(second, mia.user)
    await search(second, bob.user)
    expect(workspacesSearched(before).slice(searched)).toEqual(['ws-admin', 'ws-bob'])

    // the user's own settings page says where it comes from; the CLI shows it
    const settingsPage = await (await fetch(`${first.url}/settings/retrieval`, { headers: { cookie: miaSession.cookie } })).text()
    expect(settingsPage).toContain('data-testid="workspace_id-source">the server default (Administration → Retrieval defaults)')
    expect((await cli('retrieval', 'show')).out).toContain('workspaceId = "ws-admin"  [stored in the database]')
    // the CLI sets it too, with the same validation
    const refused = await cli('retrieval', 'set', 'workspaceId', 'ws admin')
    expect(refused.code).toBe(1)
    expect(refused.err).toContain('workspaceId must be 1–128 letters, digits')

    expect((await submit({ key: 'workspaceId', action: 'unset' })).status).toBe(303)
    await waitUntil(async () => (await inForce(second, mia.user.id)).settings.workspaceId.source === 'config', 'the config file value back in force')
    await search(second, mia.user)
    expect(workspacesSearched(before).at(-1)).toBe('ws-config')
  })
})
