// File management and the workspace-wide search over HTTP, on the real app: scope (another user's
// tree is out of reach), CSRF for cookie sessions (not for bearer tokens), the name rule of uploads,
// moves that would escape the tree or enter themselves refused, a folder delete that takes its whole
// subtree, uploads that create missing folders only when asked, and the page's dialogs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

describe('workspace files over HTTP', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  let session: { cookie: string; csrf: string }

  const put = (who: typeof alice, segments: string[], text: string) => putText(server.database.db, { owner: who.user, segments, text, mime: 'text/markdown' })

  const api = (path: string, { token = alice.token, method = 'POST', body, headers = {} }: { token?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const withCookie = (path: string, { method = 'POST', body, csrf }: { method?: string; body?: unknown; csrf?: string }) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { cookie: session.cookie, ...(csrf ? { 'x-csrf-token': csrf } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const node = async (uri: string, token = alice.token) => api(`/api/v1/workspace/node?uri=${encodeURIComponent(uri)}`, { method: 'GET', token })
  const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error

  beforeAll(async () => {
    server = await startTestServer()
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
    session = await signIn(server, 'alice', alice.password)
    await put(alice, ['docs', 'a.md'], '# Alpha\n\nThe answer is forty-two.')
    await put(alice, ['docs', 'deep', 'b.md'], 'Bravo')
    await put(bob, ['private', 'x.md'], 'bob only')
  })
  afterAll(async () => {
    await server?.close()
  })

  it('creates a folder (201); a taken name is a conflict; names follow the upload rules', async () => {
    const made = await api('/api/v1/workspace/directory', { body: { uri: 'kb://me/docs/', name: 'reports' } })
    expect(made.status).toBe(201)
    expect(await made.json()).toEqual({ uri: 'kb://users/alice/docs/reports/', kind: 'directory' })
    expect((await node('kb://me/docs/reports/')).status).toBe(200)
    const again = await api('/api/v1/workspace/directory', { body: { uri: 'kb://me/docs/', name: 'reports' } })
    expect(again.status).toBe(409)
    expect((await errorOf(again)).code).toBe('conflict')
    for (const name of ['a/b', 'back\\slash', '..', ' padded', 'zero\u200Bwidth', 'x'.repeat(300), '']) {
      const refused = await api('/api/v1/workspace/directory', { body: { uri: 'kb://me/docs/', name } })
      expect(refused.status, name).toBe(400)
      expect((await errorOf(refused)).code, name).toBe('invalid_name')
    }
    const intoFile = await api('/api/v1/workspace/directory', { body: { uri: 'kb://me/docs/a.md', name: 'sub' } })
    expect(intoFile.status).toBe(409)
    const extra = await api('/api/v1/workspace/directory', { body: { uri: 'kb://me/docs/', name: 'z', owner: 'bob' } })
    expect((await errorOf(extra)).code).toBe('invalid_request')
  })

  it("never reaches another user's tree: create, move, delete and search are scoped to the caller", async () => {
    const create = await api('/api/v1/workspace/directory', { body: { uri: 'kb://users/bob/private/', name: 'mine' } })
    expect(create.status).toBe(403)
    expect((await errorOf(create)).code).toBe('outside_scope')
    const moveOut = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/docs/a.md', to: 'kb://users/bob/private/' } })
    expect(moveOut.status).toBe(403)
    const moveIn = await api('/api/v1/workspace/move', { body: { uri: 'kb://users/bob/private/x.md', to: 'kb://me/docs/' } })
    expect(moveIn.status).toBe(403)
    const del = await api(`/api/v1/workspace/node?uri=${encodeURIComponent('kb://users/bob/private/')}`, { method: 'DELETE' })
    expect(del.status).toBe(403)
    expect((await node('kb://me/private/x.md', bob.token)).status).toBe(200)
    const search = await (await api('/api/v1/workspace/search?q=bob', { method: 'GET' })).json()
    expect(search.hits).toEqual([])
    const traversal = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/docs/a.md', to: 'kb://me/docs/../../users/bob/' } })
    expect(traversal.status).toBe(400)
    expect((await errorOf(traversal)).code).toBe('invalid_uri')
  })

  it('CSRF: a cookie session needs the token on every change; a bearer token does not', async () => {
    const body = { uri: 'kb://me/', name: 'csrf-test' }
    for (const [path, method, payload] of [
      ['/api/v1/workspace/directory', 'POST', body],
      ['/api/v1/workspace/move', 'POST', { uri: 'kb://me/docs/a.md', name: 'renamed.md' }],
      [`/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/docs/')}`, 'DELETE', undefined],
    ] as const) {
      const refused = await withCookie(path, { method, body: payload })
      expect(refused.status, path).toBe(403)
      expect((await errorOf(refused)).code).toBe('csrf')
      const wrong = await withCookie(path, { method, body: payload, csrf: 'not-the-token' })
      expect(wrong.status, path).toBe(403)
    }
    expect((await node('kb://me/docs/a.md')).status).toBe(200) // nothing happened
    const ok = await withCookie('/api/v1/workspace/directory', { body, csrf: session.csrf })
    expect(ok.status).toBe(201)
    const form = await fetch(`${server.url}/workspace/files/new-folder`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ uri: 'kb://me/', name: 'no-token' }),
    })
    expect(form.status).toBe(403)
  })

  it('renames and moves a folder with its subtree; refuses a move into itself, below itself or onto a taken name', async () => {
    await put(alice, ['proj', 'src', 'main.md'], 'main')
    await put(alice, ['proj', 'src', 'lib', 'util.md'], 'util')
    const renamed = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/src/', name: 'source' } })
    expect(await renamed.json()).toEqual({ uri: 'kb://users/alice/proj/source/', from: 'kb://users/alice/proj/src/', kind: 'directory', moved: 4 })
    expect((await node('kb://me/proj/source/lib/util.md')).status).toBe(200)
    expect((await node('kb://me/proj/src/main.md')).status).toBe(404)

    const intoSelf = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/', to: 'kb://me/proj/' } })
    expect(intoSelf.status).toBe(409)
    expect((await errorOf(intoSelf)).message).toMatch(/cannot be moved into itself or below itself/)
    const belowSelf = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/', to: 'kb://me/proj/source/lib/' } })
    expect(belowSelf.status).toBe(409)
    await put(alice, ['elsewhere', 'source'], 'a file named like the folder')
    const taken = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/source/', to: 'kb://me/elsewhere/' } })
    expect(taken.status).toBe(409)
    const badName = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/source/', name: 'in/valid' } })
    expect((await errorOf(badName)).code).toBe('invalid_name')
    const root = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/', to: 'kb://me/proj/' } })
    expect(root.status).toBe(409)
    const nothing = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/' } })
    expect((await errorOf(nothing)).code).toBe('invalid_request')

    const moved = await api('/api/v1/workspace/move', { body: { uri: 'kb://me/proj/source/', to: 'kb://me/docs/' } })
    expect(await moved.json()).toMatchObject({ uri: 'kb://users/alice/docs/source/', moved: 4 })
    const listing = (await (await node('kb://me/docs/source/lib/')).json()) as { entries: { uri: string }[] }
    expect(listing.entries.map((entry) => entry.uri)).toEqual(['kb://users/alice/docs/source/lib/util.md'])
  })

  it('deletes a folder with its whole subtree (to the Trash) and says how much went and until when; the root cannot be deleted', async () => {
    await put(alice, ['trash', 'one.md'], '1')
    await put(alice, ['trash', 'sub', 'two.md'], '2')
    await put(alice, ['trash', 'sub', 'deeper', 'three.md'], '3')
    const deleted = await api(`/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/trash/')}`, { method: 'DELETE' })
    expect(await deleted.json()).toEqual({
      uri: 'kb://users/alice/trash/',
      deleted: { files: 3, directories: 2, summaries: 0 },
      trash: { id: expect.any(String), purge_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      message: expect.stringMatching(/^Moved to the Trash until \d{4}-\d\d-\d\d, when it is deleted for good; restore it from there before then\.$/),
    })
    for (const uri of ['kb://me/trash/', 'kb://me/trash/sub/', 'kb://me/trash/sub/deeper/three.md']) expect((await node(uri)).status).toBe(404)
    const remaining = await server.database.db.selectFrom('nodes').select('path').where('owner_id', '=', alice.user.id).where('path', 'like', 'trash%').execute()
    expect(remaining).toEqual([])
    const root = await api(`/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/')}`, { method: 'DELETE' })
    expect(root.status).toBe(409)
    const missing = await api(`/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/trash/')}`, { method: 'DELETE' })
    expect(missing.status).toBe(404)
  })

  it('an upload to a missing folder is a 404 that says how to create it; create_parents creates it with the files', async () => {
    const upload = (query: string) => {
      const form = new FormData()
      form.append('file', new Blob(['fresh text']), 'fresh.md')
      return fetch(`${server.url}/api/v1/workspace/upload?${query}`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}` }, body: form })
    }
    const missing = await upload(`uri=${encodeURIComponent('kb://me/new/nested/')}`)
    expect(missing.status).toBe(404)
    const error = await errorOf(missing)
    expect(error.code).toBe('not_found')
    expect(error.message).toContain('create_parents=true')
    expect((await node('kb://me/new/')).status).toBe(404)
    const created = await upload(`uri=${encodeURIComponent('kb://me/new/nested/')}&create_parents=true`)
    expect(created.status).toBe(201)
    expect(await created.json()).toEqual({ files: [{ uri: 'kb://users/alice/new/nested/fresh.md', outcome: 'added' }] })
    const badFlag = await upload(`uri=${encodeURIComponent('kb://me/x/')}&create_parents=yes`)
    expect(badFlag.status).toBe(400)
    const foreign = await upload(`uri=${encodeURIComponent('kb://users/bob/new/')}&create_parents=true`)
    expect(foreign.status).toBe(403)
    expect((await node('kb://me/new/', bob.token)).status).toBe(404)
  })

  it('downloads the original bytes, byte for byte, with a safe attachment name; folders and other users refused', async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x41, 0x0d, 0x0a, 0xc3, 0x28, 0x80])
    const form = new FormData()
    form.append('file', new Blob([bytes]), 'données (1) #x.bin')
    const stored = await fetch(`${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/downloads/')}&create_parents=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}` },
      body: form,
    })
    expect(stored.status).toBe(201)
    const { files } = (await stored.json()) as { files: Array<{ uri: string }> }
    const raw = await api(`/api/v1/workspace/raw?uri=${encodeURIComponent(files[0]!.uri)}`, { method: 'GET' })
    expect(raw.status).toBe(200)
    expect(new Uint8Array(await raw.arrayBuffer())).toEqual(bytes)
    expect(raw.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''donn%C3%A9es%20%281%29%20%23x.bin") // RFC 5987: ( and ) encoded too
    expect(raw.headers.get('x-content-type-options')).toBe('nosniff')
    const folder = await api(`/api/v1/workspace/raw?uri=${encodeURIComponent('kb://me/downloads/')}`, { method: 'GET' })
    expect(folder.status).toBe(409)
    const foreign = await api(`/api/v1/workspace/raw?uri=${encodeURIComponent('kb://users/bob/private/x.md')}`, { method: 'GET' })
    expect(foreign.status).toBe(403)
    expect(await foreign.text()).not.toContain('bob only')
    const withCookie = await fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(files[0]!.uri)}`, { headers: { cookie: session.cookie } })
    expect(new Uint8Array(await withCookie.arrayBuffer())).toEqual(bytes) // a GET: the preview's Download link needs no CSRF token
  })

  it('searches the caller’s whole tree, ranked, with the passage offset', async () => {
    const response = await api(`/api/v1/workspace/search?q=${encodeURIComponent('forty')}`, { method: 'GET' })
    const page = (await response.json()) as { hits: Array<{ uri: string; offset: number; snippet: string; matched: string }>; next_offset: number | null }
    expect(page.hits).toEqual([{ uri: 'kb://users/alice/docs/a.md', name: 'a.md', kind: 'file', matched: 'text', offset: '# Alpha\n\nThe answer is forty-two.'.indexOf('forty'), snippet: expect.stringContaining('forty-two') }])
    expect((await api('/api/v1/workspace/search', { method: 'GET' })).status).toBe(400)
    expect((await api(`/api/v1/workspace/search?q=${'x'.repeat(201)}`, { method: 'GET' })).status).toBe(400)
    expect((await api('/api/v1/workspace/search?q=a&limit=999', { method: 'GET' })).status).toBe(400)
    expect((await api('/api/v1/workspace/search?q=a&limit=0', { method: 'GET' })).status).toBe(400) // an empty page is asked for by mistake
  })

  it('the page: dialogs come back escaped, a refused change keeps the dialog with its reason, a done one says what changed', async () => {
    const page = (path: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, { ...init, headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'hx-request': 'true', ...(init.headers ?? {}) } })
    await put(alice, ['docs', '<img src=x onerror=alert(1)>.md'], 'hostile name')
    const renameForm = await (await page(`/workspace/files/rename?uri=${encodeURIComponent('kb://me/docs/<img src=x onerror=alert(1)>.md')}`)).text()
    expect(renameForm).not.toContain('<img')
    expect(renameForm).toContain('&lt;img src=x onerror=alert(1)&gt;.md')

    const deleteForm = await (await page(`/workspace/files/delete?uri=${encodeURIComponent('kb://me/docs/')}`)).text()
    // docs/ holds a.md, deep/b.md, source/main.md, source/lib/util.md (moved in above) and the hostile file; reports/ is empty.
    expect(deleteForm).toContain('Delete the folder <strong>docs</strong> and everything in it: <strong>5 files in 4 folders</strong>')
    expect(deleteForm).toContain('Delete 5 files in 4 folders')

    const post = (action: string, fields: Record<string, string>) =>
      page(`/workspace/files/${action}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) })
    const refused = await post('rename', { uri: 'kb://me/docs/a.md', name: 'bad/name.md' })
    expect(refused.status).toBe(400)
    const refusedHtml = await refused.text()
    expect(refusedHtml).toContain('hx-post="/workspace/files/rename"')
    expect(refusedHtml).toContain('a name cannot hold a folder part')
    const renamed = await post('rename', { uri: 'kb://me/docs/a.md', name: 'alpha.md' })
    expect(renamed.status).toBe(200)
    const done = await renamed.text()
    expect(done).toContain('id="files-change"')
    expect(done).toContain('data-from="kb://users/alice/docs/a.md"')
    expect(done).toContain('data-uri="kb://users/alice/docs/alpha.md"')
    const gone = await page(`/workspace/files/move?uri=${encodeURIComponent('kb://me/docs/a.md')}`)
    expect(gone.status).toBe(404)
    expect(await gone.text()).toContain('does not exist')
  })

  it('a missing, foreign or broken node renders inside the app with the path and a link to the nearest existing folder', async () => {
    const page = (uri: string, path = '/workspace') => fetch(`${server.url}${path}?uri=${encodeURIComponent(uri)}`, { headers: { cookie: session.cookie } })
    const missing = await page('kb://me/docs/deep/gone/away.md')
    expect(missing.status).toBe(404)
    const missingHtml = await missing.text()
    expect(missingHtml).toContain('class="topbar"') // the app's layout
    expect(missingHtml).toContain('kb://me/docs/deep/gone/away.md')
    expect(missingHtml).toContain(`href="/workspace?uri=${encodeURIComponent('kb://users/alice/docs/deep/')}"`)
    const foreign = await page('kb://users/bob/private/x.md')
    expect(foreign.status).toBe(403)
    const foreignHtml = await foreign.text()
    expect(foreignHtml).toContain('Not yours to see')
    expect(foreignHtml).toContain(`href="/workspace?uri=${encodeURIComponent('kb://users/alice/')}"`)
    const fragment = await fetch(`${server.url}/workspace/content?uri=${encodeURIComponent('kb://me/docs/nope.md')}`, { headers: { cookie: session.cookie, 'hx-request': 'true' } })
    expect(fragment.status).toBe(404)
    const fragmentHtml = await fragment.text()
    expect(fragmentHtml).toContain('id="content"')
    expect(fragmentHtml).toContain(`hx-get="/workspace/content?uri=${encodeURIComponent('kb://users/alice/docs/')}"`)
    const invalid = await page('/etc/passwd')
    expect(invalid.status).toBe(400)
    expect(await invalid.text()).toContain('Not a workspace address')
  })

  it('a server error on a page stays inside the layout, with a generic message and no details', async () => {
    // The 500 path: the database breaks under one request (a column the preview reads is renamed away).
    await server.database.db.schema.alterTable('file_versions').renameColumn('body', 'body_hidden').execute()
    try {
      const broken = await fetch(`${server.url}/workspace?uri=${encodeURIComponent('kb://me/docs/alpha.md')}`, { headers: { cookie: session.cookie } })
      expect(broken.status).toBe(500)
      const html = await broken.text()
      expect(html).toContain('class="topbar"')
      expect(html).toContain('Something went wrong on the server')
      expect(html).not.toMatch(/column|body_hidden|does not exist/) // details go to the log only
      expect(html).toContain(`href="/workspace?uri=${encodeURIComponent('kb://users/alice/docs/')}"`)
    } finally {
      await server.database.db.schema.alterTable('file_versions').renameColumn('body_hidden', 'body').execute()
    }
  })
})
