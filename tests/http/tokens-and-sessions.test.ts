// API tokens (settings page, CLI list/revoke, revocation on the next request in every process) and
// browser sessions (sign-out, a password change, expiry with the injected clock, Secure cookies).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Server } from 'node:http'
import { main } from '../../src/cli.ts'
import { createApp } from '../../src/http/create-app.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'

let now = 1_800_000_000_000
let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let bob: Awaited<ReturnType<typeof addUserWithToken>>

beforeAll(async () => {
  server = await startTestServer({ now: () => now, configure: (config) => ({ ...config, sessionTtlHours: 2 }) })
  alice = await addUserWithToken(server, 'alice')
  bob = await addUserWithToken(server, 'bob')
})
afterAll(async () => {
  await server?.close()
})

/** The operator CLI, in process, against the test server's database. */
async function cli(...args: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { DATABASE_URL: server.database.url!, KNOWAGENT_SECRET: TEST_SECRET } })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

const asToken = (token: string) => fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })
const asCookie = (cookie: string) => fetch(`${server.url}/workspace`, { headers: { cookie }, redirect: 'manual' })
/** The id in the revoke form of the settings-page row whose name cell is `name` (as HTML). */
const tokenIdIn = (html: string, name: string) => new RegExp(`<tr><td>${name.replace(/[()]/g, '\\$&')}</td>(?:(?!</tr>)[^])*?/settings/tokens/([0-9a-f-]{36})/revoke`).exec(html)![1]!
const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields) })

describe('API tokens', () => {
  it('token create --label shows in token list, which never prints a token', async () => {
    const created = await cli('token', 'create', 'bob', '--label', 'laptop script')
    expect(created.code).toBe(0)
    const token = created.out
    const listed = await cli('token', 'list', 'bob')
    expect(listed.code).toBe(0)
    const lines = listed.out.split('\n')
    expect(lines[0]).toMatch(/^id\s+created \(UTC\)\s+last used\s+revoked\s+label$/)
    expect(lines).toHaveLength(3) // the helper's unlabelled token and this one
    expect(lines[2]).toMatch(/^[0-9a-f-]{36}\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+-\s+-\s+"laptop script"$/)
    expect(listed.out).not.toContain(token)
    expect(listed.out).not.toContain('ka_')
  })

  it('token revoke (one, then --all) is refused on the very next request', async () => {
    const second = (await cli('token', 'create', 'bob', '--label', 'second')).out
    expect((await asToken(second)).status).toBe(200)
    const id = (await cli('token', 'list', 'bob')).out.split('\n').find((l) => l.endsWith('"second"'))!.split(/\s+/)[0]!
    expect(await cli('token', 'revoke', 'bob', id)).toMatchObject({ code: 0, out: `token ${id} revoked.` })
    expect((await asToken(second)).status).toBe(401)
    expect((await cli('token', 'list', 'bob')).out.split('\n').find((l) => l.startsWith(id))).toMatch(/\d\d:\d\d\s+"second"$/)
    expect((await asToken(bob.token)).status).toBe(200)
    expect(await cli('token', 'revoke', 'bob', '--all')).toMatchObject({ code: 0, out: '2 API token(s) of bob revoked.' })
    expect((await asToken(bob.token)).status).toBe(401)
    expect((await cli('token', 'revoke', 'alice', id)).err).toContain(`no token ${id} for this user`) // bob's token, not alice's
    expect((await cli('token', 'revoke', 'bob')).code).toBe(2)
  })

  it('a token revoked through one process is refused by another process on the same database', async () => {
    const other = await new Promise<Server>((resolve) => {
      const s = createApp({ ...server.ctx }).listen(0, '127.0.0.1', () => resolve(s))
    })
    const port = (other.address() as { port: number }).port
    const token = (await cli('token', 'create', 'alice', '--label', 'two processes')).out
    const viaOther = () => fetch(`http://127.0.0.1:${port}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })
    expect((await viaOther()).status).toBe(200)
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    const page = await (await fetch(`${server.url}/settings`, { headers: { cookie } })).text()
    const id = tokenIdIn(page, 'two processes')
    const revoke = await fetch(`${server.url}/settings/tokens/${id}/revoke`, { method: 'POST', redirect: 'manual', headers: { cookie }, ...form({ _csrf: csrf }) })
    expect(revoke.status).toBe(303)
    expect((await viaOther()).status).toBe(401)
    other.closeAllConnections()
    await new Promise((resolve) => other.close(resolve))
  })
})

describe('the settings page', () => {
  it('lists the caller\'s own tokens (name, created, last used), creates one shown once, and revokes with CSRF', async () => {
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    await asToken(alice.token) // marks it used
    const page = await fetch(`${server.url}/settings`, { headers: { cookie } })
    expect(page.status).toBe(200)
    expect(page.headers.get('cache-control')).toBe('no-store')
    const html = await page.text()
    expect(html).toContain('Account and API tokens')
    expect(html).toContain('Signed in as <strong>alice</strong>')
    expect(html).toMatch(/<td>\(no name\)<\/td><td>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/td><td>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/td>/)
    expect(html).not.toContain(alice.token)
    expect(html).not.toContain('bob')

    const created = await fetch(`${server.url}/settings/tokens`, { method: 'POST', headers: { cookie }, ...form({ _csrf: csrf, label: '<b>ci</b>' }) })
    expect(created.status).toBe(201)
    expect(created.headers.get('cache-control')).toBe('no-store')
    const createdHtml = await created.text()
    const token = /<code class="token-value"[^>]*>(ka_[A-Za-z0-9_-]+)<\/code>/.exec(createdHtml)![1]!
    expect(createdHtml).toContain('&lt;b&gt;ci&lt;/b&gt;')
    expect((await asToken(token)).status).toBe(200)
    const again = await (await fetch(`${server.url}/settings`, { headers: { cookie } })).text()
    expect(again).not.toContain(token) // shown once
    const id = tokenIdIn(again, '&lt;b&gt;ci&lt;/b&gt;')

    const noCsrf = await fetch(`${server.url}/settings/tokens/${id}/revoke`, { method: 'POST', headers: { cookie }, ...form({}) })
    expect(noCsrf.status).toBe(403)
    expect((await asToken(token)).status).toBe(200)
    const revoked = await fetch(`${server.url}/settings/tokens/${id}/revoke`, { method: 'POST', redirect: 'manual', headers: { cookie }, ...form({ _csrf: csrf }) })
    expect(revoked.headers.get('location')).toBe('/settings?notice=token_revoked')
    expect((await asToken(token)).status).toBe(401)
    const after = await (await fetch(`${server.url}/settings?notice=token_revoked`, { headers: { cookie } })).text()
    expect(after).toContain('Token revoked: it stops working with the next request it is sent with.')
    expect(after).not.toContain(id)
  })

  it('the create form sent twice (a reload re-POSTs it) makes one token, and says so; a fresh form makes another', async () => {
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    const onceOf = (html: string) => /name="_once" value="([0-9a-f-]{36})"/.exec(html)![1]!
    const count = async () => (await server.database.db.selectFrom('api_tokens').select('id').where('user_id', '=', alice.user.id).where('revoked_at', 'is', null).execute()).length
    const pageHtml = await (await fetch(`${server.url}/settings`, { headers: { cookie } })).text()
    const once = onceOf(pageHtml)
    const before = await count()
    const first = await fetch(`${server.url}/settings/tokens`, { method: 'POST', headers: { cookie }, ...form({ _csrf: csrf, _once: once, label: 'reloaded' }) })
    expect(first.status).toBe(201)
    const firstHtml = await first.text()
    expect(firstHtml).toMatch(/<code class="token-value"[^>]*>ka_/)
    const again = await fetch(`${server.url}/settings/tokens`, { method: 'POST', headers: { cookie }, ...form({ _csrf: csrf, _once: once, label: 'reloaded' }) })
    expect(again.status).toBe(200)
    const againHtml = await again.text()
    expect(againHtml).toContain('This form already created its token')
    expect(againHtml).not.toMatch(/<code class="token-value"/)
    expect(await count()).toBe(before + 1)
    expect(onceOf(firstHtml)).not.toBe(once) // the page it answers has a fresh form
    expect((await fetch(`${server.url}/settings/tokens`, { method: 'POST', headers: { cookie }, ...form({ _csrf: csrf, _once: onceOf(firstHtml) }) })).status).toBe(201)
    expect(await count()).toBe(before + 2)
  })

  it('cannot revoke another user\'s token, and a bearer token cannot reach the settings at all', async () => {
    const carol = await addUserWithToken(server, 'carol')
    const carolId = (await cli('token', 'list', 'carol')).out.split('\n')[1]!.split(/\s+/)[0]!
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    const cross = await fetch(`${server.url}/settings/tokens/${carolId}/revoke`, { method: 'POST', redirect: 'manual', headers: { cookie }, ...form({ _csrf: csrf }) })
    expect(cross.status).toBe(404)
    expect((await asToken(carol.token)).status).toBe(200)
    const viaToken = await fetch(`${server.url}/settings/tokens`, { method: 'POST', headers: { authorization: `Bearer ${carol.token}` }, ...form({ label: 'minted' }) })
    expect(viaToken.status).toBe(403)
    expect((await fetch(`${server.url}/settings`, { headers: { authorization: `Bearer ${carol.token}` } })).status).toBe(403)
  })

  it('lists Retrieval services among its sections when that feature runs, and leaves that page to its own routes', async () => {
    const withRetrieval = await startTestServer({ retrieval: true })
    try {
      const erin = await addUserWithToken(withRetrieval, 'erin')
      const { cookie } = await signIn(withRetrieval, 'erin', erin.password)
      const html = await (await fetch(`${withRetrieval.url}/settings`, { headers: { cookie } })).text()
      expect(html).toMatch(/<nav class="settings-nav" aria-label="Settings sections"><ul><li><a href="\/settings" aria-current="page">Account and API tokens<\/a><\/li><li><a href="\/settings\/retrieval">Retrieval services<\/a><\/li><\/ul><\/nav>/)
      expect((await fetch(`${withRetrieval.url}/settings/retrieval`, { headers: { cookie } })).status).toBe(200)
    } finally {
      await withRetrieval.close()
    }
    expect(await (await fetch(`${server.url}/settings`, { headers: { cookie: (await signIn(server, 'alice', alice.password)).cookie } })).text()).not.toContain('/settings/retrieval')
  })

  it('the workspace header links to the settings', async () => {
    const { cookie } = await signIn(server, 'alice', alice.password)
    expect(await (await asCookie(cookie)).text()).toContain('<a href="/settings">Settings</a>')
  })
})

describe('browser sessions', () => {
  it('sign-out ends the session: the cookie no longer signs in', async () => {
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    expect((await asCookie(cookie)).status).toBe(200)
    const out = await fetch(`${server.url}/logout`, { method: 'POST', redirect: 'manual', headers: { cookie }, ...form({ _csrf: csrf }) })
    expect(out.status).toBe(303)
    expect(out.headers.get('location')).toBe('/login')
    expect(out.headers.getSetCookie().find((c) => c.startsWith('ka_session='))).toMatch(/^ka_session=; Max-Age=0/)
    const after = await asCookie(cookie)
    expect(after.status).toBe(303)
    expect(after.headers.get('location')).toBe('/login?next=%2Fworkspace')
  })

  it('user passwd ends every session of the user and revokes the tokens; --keep-tokens keeps them', async () => {
    const dave = await addUserWithToken(server, 'dave')
    const first = await signIn(server, 'dave', dave.password)
    const second = await signIn(server, 'dave', dave.password)
    const aliceSession = await signIn(server, 'alice', alice.password)
    const changed = await cli('user', 'passwd', 'dave', '--password', 'a-new-password', '--keep-tokens')
    expect(changed).toMatchObject({ code: 0, out: 'password set for dave\n2 browser session(s) ended.\n1 API token(s) stay valid (--keep-tokens; revoke them with `knowagent token revoke dave --all`).' })
    expect((await asCookie(first.cookie)).status).toBe(303)
    expect((await asCookie(second.cookie)).status).toBe(303)
    expect((await asCookie(aliceSession.cookie)).status).toBe(200)
    expect((await asToken(dave.token)).status).toBe(200)
    await signIn(server, 'dave', 'a-new-password')
    const revoking = await cli('user', 'passwd', 'dave', '--password', 'another-password')
    expect(revoking.out).toBe("password set for dave\n1 browser session(s) ended.\n1 API token(s) revoked; none of dave's tokens work any more.")
    expect((await asToken(dave.token)).status).toBe(401)
  })

  it('a session expires after server.sessionTtlHours', async () => {
    const { cookie } = await signIn(server, 'alice', alice.password)
    now += 2 * 3_600_000 - 1000
    expect((await asCookie(cookie)).status).toBe(200)
    now += 1000
    expect((await asCookie(cookie)).headers.get('location')).toBe('/login?next=%2Fworkspace')
  })
})

describe('Secure session cookies', () => {
  const sessionCookieOf = async (baseUrl: string, headers: Record<string, string> = {}) => {
    const page = await fetch(`${baseUrl}/login`, { headers })
    const loginCookie = page.headers.getSetCookie().find((c) => c.startsWith('ka_login='))!
    const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
    const res = await fetch(`${baseUrl}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...headers, cookie: loginCookie.split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: 'alice', password: alice.password, _login_csrf: loginCsrf }),
    })
    expect(res.status).toBe(303)
    return { login: loginCookie, session: res.headers.getSetCookie().find((c) => c.startsWith('ka_session='))! }
  }
  const forwardedHttps = { 'x-forwarded-proto': 'https' }

  it('are not Secure on plain HTTP, and X-Forwarded-Proto is ignored without trustProxy', async () => {
    expect((await sessionCookieOf(server.url)).session).not.toMatch(/;\s*Secure/i)
    expect((await sessionCookieOf(server.url, forwardedHttps)).session).not.toMatch(/;\s*Secure/i)
  })

  it.each([
    ['behind a trusted proxy on https', { trustProxy: true }, forwardedHttps],
    ['with secureCookies', { secureCookies: true }, {}],
  ] as const)('are Secure %s', async (_name, settings, headers) => {
    const app = createApp({ ...server.ctx, config: { ...server.ctx.config, ...settings } })
    const listening = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s))
    })
    try {
      const url = `http://127.0.0.1:${(listening.address() as { port: number }).port}`
      const cookies = await sessionCookieOf(url, headers)
      expect(cookies.session).toMatch(/;\s*Secure/i)
      expect(cookies.login).toMatch(/;\s*Secure/i)
      expect(cookies.session).toMatch(/HttpOnly/i)
    } finally {
      listening.closeAllConnections()
      await new Promise((resolve) => listening.close(resolve))
    }
  })
})
