import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeDirectories } from '../../src/effects/workspace/store.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

function multipart(files: Array<{ name: string; content: string | Uint8Array<ArrayBuffer> }>, fields: Record<string, string> = {}) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  for (const f of files) form.append('file', new Blob([f.content]), f.name)
  return form
}

describe('auth and workspace over HTTP', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>

  beforeAll(async () => {
    server = await startTestServer()
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
  })
  afterAll(async () => {
    await server?.close()
  })

  it("never lets a cache keep a person's pages or data: every signed-in answer is Cache-Control: no-store", async () => {
    const { cookie } = await signIn(server, 'alice', alice.password)
    for (const path of ['/workspace', '/workspace?uri=kb%3A%2F%2Fme%2F', '/workspace/content?uri=kb%3A%2F%2Fme%2F', '/workspace/search?q=x', '/settings']) {
      const res = await fetch(`${server.url}${path}`, { headers: { cookie } })
      expect(res.status, path).toBe(200)
      expect(res.headers.get('cache-control'), path).toBe('no-store')
    }
    const api = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(api.headers.get('cache-control')).toBe('no-store')
  })

  it('answers health and readiness without auth', async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ ok: true })
    const ready = await fetch(`${server.url}/readyz`)
    expect(ready.status).toBe(200)
  })

  it('401 JSON for API paths and a login redirect for pages without credentials', async () => {
    const api = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`)
    expect(api.status).toBe(401)
    expect(await api.json()).toMatchObject({ error: { code: 'unauthorized' } })
    const wrongToken = await fetch(`${server.url}/api/v1/workspace/node`, { headers: { authorization: 'Bearer ka_wrong' } })
    expect(wrongToken.status).toBe(401)
    const page = await fetch(`${server.url}/workspace`, { redirect: 'manual' })
    expect(page.status).toBe(303)
    expect(page.headers.get('location')).toBe('/login?next=%2Fworkspace')
  })

  it('signs in with a password: HttpOnly SameSite=Lax session cookie; wrong password is refused', async () => {
    const page = await fetch(`${server.url}/login`)
    const loginCookie = page.headers.getSetCookie()[0]!.split(';')[0]!
    const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
    const wrong = await fetch(`${server.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
      body: new URLSearchParams({ login: 'alice', password: 'nope-nope', _login_csrf: loginCsrf }),
    })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain('Wrong login or password')

    const noCsrf = await fetch(`${server.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: 'alice', password: alice.password }),
    })
    expect(noCsrf.status).toBe(403)

    const ok = await fetch(`${server.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
      body: new URLSearchParams({ login: 'alice', password: alice.password, _login_csrf: loginCsrf, next: '//evil.example/' }),
    })
    expect(ok.status).toBe(303)
    expect(ok.headers.get('location')).toBe('/workspace') // never off-site
    const session = ok.headers.getSetCookie().find((c) => c.startsWith('ka_session='))!
    expect(session).toMatch(/HttpOnly/i)
    expect(session).toMatch(/SameSite=Lax/i)
  })

  it("signing in where someone else signed out lands in one's own workspace, not on their folder", async () => {
    const signInTo = async (login: string, password: string, next: string) => {
      const page = await fetch(`${server.url}/login?next=${encodeURIComponent(next)}`)
      const loginCookie = page.headers.getSetCookie()[0]!.split(';')[0]!
      const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
      const done = await fetch(`${server.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
        body: new URLSearchParams({ login, password, _login_csrf: loginCsrf, next }),
      })
      expect(done.status).toBe(303)
      return done.headers.get('location')
    }
    await expect(signInTo('bob', bob.password, '/workspace?uri=kb%3A%2F%2Fusers%2Falice%2Fnotes%2F')).resolves.toBe('/workspace')
    await expect(signInTo('alice', alice.password, '/workspace?uri=kb%3A%2F%2Fusers%2Falice%2Fnotes%2F')).resolves.toBe('/workspace?uri=kb%3A%2F%2Fusers%2Falice%2Fnotes%2F')
    await expect(signInTo('bob', bob.password, '/settings')).resolves.toBe('/settings')
  })

  it('enforces CSRF on cookie-authenticated uploads but not on bearer tokens', async () => {
    const { cookie, csrf } = await signIn(server, 'alice', alice.password)
    const without = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: { cookie },
      body: multipart([{ name: 'x.md', content: '# x' }]),
    })
    expect(without.status).toBe(403)
    expect(await without.json()).toMatchObject({ error: { code: 'csrf' } })
    const node = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/x.md`, { headers: { cookie } })
    expect(node.status).toBe(404) // nothing was written

    const withCsrf = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': csrf },
      body: multipart([{ name: 'x.md', content: '# x' }]),
    })
    expect(withCsrf.status).toBe(201)
    expect(await withCsrf.json()).toEqual({ files: [{ uri: 'kb://users/alice/x.md', outcome: 'added' }] })

    const viaToken = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}` },
      body: multipart([{ name: 'y.md', content: '# y' }]),
    })
    expect(viaToken.status).toBe(201)
  })

  it('two users uploading the same files see only their own trees; one token cannot read the other\'s files', async () => {
    for (const who of [alice, bob]) {
      const res = await fetch(`${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/')}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${who.token}` },
        body: multipart([{ name: 'shared-name.md', content: `# owned by ${who.user.login}` }]),
      })
      expect(res.status).toBe(201)
    }
    const aliceRaw = await fetch(`${server.url}/api/v1/workspace/raw?uri=kb://me/shared-name.md`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(await aliceRaw.text()).toBe('# owned by alice')
    const bobRaw = await fetch(`${server.url}/api/v1/workspace/raw?uri=kb://me/shared-name.md`, { headers: { authorization: `Bearer ${bob.token}` } })
    expect(await bobRaw.text()).toBe('# owned by bob')
    const cross = await fetch(`${server.url}/api/v1/workspace/raw?uri=kb://users/alice/shared-name.md`, { headers: { authorization: `Bearer ${bob.token}` } })
    expect(cross.status).toBe(403)
    expect(JSON.stringify(await cross.json())).not.toContain('owned by alice')
    const traversal = await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/../alice/')}`, { headers: { authorization: `Bearer ${bob.token}` } })
    expect(traversal.status).toBe(400)
    expect((await traversal.json()).error.message).toContain('".." segments are not allowed')
    const bobRoot = await (await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${bob.token}` } })).json()
    expect(bobRoot.entries.map((e: { uri: string }) => e.uri)).toEqual(['kb://users/bob/shared-name.md'])
  })

  it('refuses bad uploads whole: invalid names, oversize, not multipart', async () => {
    const auth = { authorization: `Bearer ${bob.token}` }
    const badName = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: auth,
      body: multipart([{ name: 'fine.md', content: 'ok' }, { name: '..', content: 'bad' }]),
    })
    expect(badName.status).toBe(400)
    const fine = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/fine.md`, { headers: auth })
    expect(fine.status).toBe(404)
    // A file whose name collides with a directory fails the whole upload: the other file is not kept.
    await makeDirectories(server.database.db, bob.user, ['sub'])
    const dirCollision = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: auth,
      body: multipart([{ name: 'first-of-two.md', content: 'ok' }, { name: 'sub', content: 'clashes with a directory' }]),
    })
    expect(dirCollision.status).toBe(409)
    expect((await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/first-of-two.md`, { headers: auth })).status).toBe(404)
    const notMultipart = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
    expect(notMultipart.status).toBe(415)
  })

  it('renders the workspace page with the tree and escapes hostile names', async () => {
    const hostile = '<img src=x onerror=alert(1)>.md'
    const up = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}` },
      body: multipart([{ name: hostile, content: '<script>alert(1)</script>\n\n# Title' }]),
    })
    expect(up.status).toBe(201)
    const { cookie } = await signIn(server, 'alice', alice.password)
    const page = await fetch(`${server.url}/workspace`, { headers: { cookie } })
    const html = await page.text()
    expect(html).toContain('kb://users/alice/')
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;.md')
    expect(html).not.toContain('<img src=x')
    const preview = await fetch(`${server.url}/workspace?uri=${encodeURIComponent('kb://me/' + hostile)}`, { headers: { cookie } })
    const previewHtml = await preview.text()
    expect(previewHtml).toContain('<h1>Title</h1>')
    expect(previewHtml).not.toContain('<script>alert')
  })
})
