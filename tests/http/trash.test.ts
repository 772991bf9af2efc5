// The Trash over HTTP (issue 37): DELETE says it went to the Trash and until when; the Trash API
// lists, restores, deletes for good and empties, owner-only (another user's id is a 404) and
// Schema-validated; a trashed file is out of the export zip, the /v1 scope and the search API; the
// page's delete dialog says how long it stays, and the Trash page's forms need the session's CSRF
// token. `trash.retentionDays` is 7 here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'
import { readZip } from '../support/zip-reader.ts'

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let bob: Awaited<ReturnType<typeof addUserWithToken>>
const DAY_MS = 24 * 3600 * 1000

beforeAll(async () => {
  server = await startTestServer({ configure: (config) => ({ ...config, trashRetentionDays: 7 }) })
  alice = await addUserWithToken(server, 'alice')
  bob = await addUserWithToken(server, 'bob')
})
afterAll(async () => {
  await server?.close()
})

const put = (path: string, text: string) => putText(server.database.db, { owner: alice.user, segments: path.split('/'), text })
const call = (method: string, path: string, { token = alice.token, body }: { token?: string; body?: unknown } = {}) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
const remove = (uri: string) => call('DELETE', `/api/v1/workspace/node?uri=${encodeURIComponent(uri)}`)
const trash = async (token = alice.token) => (await call('GET', '/api/v1/workspace/trash', { token })).json()
const nodeStatus = async (uri: string) => (await call('GET', `/api/v1/workspace/node?uri=${encodeURIComponent(uri)}`)).status

describe('the Trash API', () => {
  it('DELETE moves to the Trash until purge_at; the list says what, from where, when; restore puts it back', async () => {
    await put('reports/q1.md', 'first quarter: the osprey count')
    await put('reports/q1.md', 'first quarter: the osprey count, corrected')
    await put('reports/2024/q4.md', 'fourth quarter')
    const deleted = await remove('kb://me/reports/')
    expect(deleted.status).toBe(200)
    const body = await deleted.json()
    expect(body).toMatchObject({ uri: 'kb://users/alice/reports/', deleted: { files: 2, directories: 1, summaries: 0 } })
    expect(body.message).toBe(`Moved to the Trash until ${body.trash.purge_at.slice(0, 10)}, when it is deleted for good; restore it from there before then.`)
    expect(await nodeStatus('kb://me/reports/q1.md')).toBe(404)

    const listed = await trash()
    expect(listed).toMatchObject({ total: 1, retention_days: 7, next_offset: null })
    const [item] = listed.items
    expect(item).toEqual({
      id: body.trash.id,
      name: 'reports',
      kind: 'directory',
      uri: 'kb://users/alice/reports/',
      folder: 'kb://users/alice/',
      files: 2,
      directories: 1,
      summaries: 0,
      bytes: expect.any(Number),
      deleted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      purge_at: body.trash.purge_at,
    })
    expect(Date.parse(item.purge_at) - Date.parse(item.deleted_at)).toBe(7 * DAY_MS)
    expect(listed.bytes).toBe(item.bytes)

    const restored = await call('POST', `/api/v1/workspace/trash/${item.id}/restore`)
    expect([restored.status, await restored.json()]).toEqual([
      200,
      { uri: 'kb://users/alice/reports/', from: 'kb://users/alice/reports/', name: 'reports', kind: 'directory', renamed: false, summaries: 0, message: 'Restored to kb://users/alice/reports/.' },
    ])
    const versions = await (await call('GET', `/api/v1/workspace/versions?uri=${encodeURIComponent('kb://me/reports/q1.md')}`)).json()
    expect(versions.total).toBe(2)
    expect((await trash()).total).toBe(0)
  })

  it('a restore onto a taken name says where it went', async () => {
    await put('clash.md', 'old')
    const { trash: { id } } = await (await remove('kb://me/clash.md')).json()
    await put('clash.md', 'new')
    const restored = await (await call('POST', `/api/v1/workspace/trash/${id}/restore`)).json()
    expect(restored).toMatchObject({ uri: 'kb://users/alice/clash (restored).md', renamed: true, message: 'Restored as kb://users/alice/clash (restored).md: kb://users/alice/clash.md is taken by something else now.' })
  })

  it('a trashed file is out of the search, the export zip and the /v1 scope', async () => {
    await put('gone/secret.md', 'the word tamarind lives here')
    await put('kept.md', 'kept')
    const searchHits = async () => (await (await call('GET', '/api/v1/workspace/search?q=tamarind')).json()).hits.length
    expect(await searchHits()).toBe(1)
    const { trash: { id } } = await (await remove('kb://me/gone/')).json()
    expect(await searchHits()).toBe(0)
    const zip = await readZip(Buffer.from(await (await call('GET', `/api/v1/workspace/export?uri=${encodeURIComponent('kb://me/')}`)).arrayBuffer()))
    expect([...zip.keys()]).toContain('kept.md')
    expect([...zip.keys()].filter((name) => name.startsWith('gone'))).toEqual([])
    const v1 = await call('POST', '/v1/chat/completions', { body: { model: 'knowagent/local', kb_uri: 'kb://me/gone/', messages: [{ role: 'user', content: 'what is in here?' }] } })
    expect([v1.status, (await v1.json()).error.code]).toEqual([404, 'not_found'])
    await call('DELETE', `/api/v1/workspace/trash/${id}`)
  })

  it('delete forever and empty: gone for good, their bytes freed', async () => {
    await call('DELETE', '/api/v1/workspace/trash') // from an empty Trash
    await put('one.md', 'one')
    await put('two.md', 'two!')
    await put('three.md', 'three')
    const ids: string[] = []
    for (const name of ['one.md', 'two.md', 'three.md']) ids.push((await (await remove(`kb://me/${name}`)).json()).trash.id)
    const forever = await call('DELETE', `/api/v1/workspace/trash/${ids[0]}`)
    expect([forever.status, await forever.json()]).toEqual([200, { id: ids[0], uri: 'kb://users/alice/one.md', deleted: { files: 1, directories: 0, summaries: 0, bytes: 3 } }])
    expect((await call('POST', `/api/v1/workspace/trash/${ids[0]}/restore`)).status).toBe(404)
    const emptied = await call('DELETE', '/api/v1/workspace/trash')
    expect([emptied.status, await emptied.json()]).toEqual([200, { deleted: { items: 2, bytes: 9 } }])
    expect(await trash()).toMatchObject({ total: 0, bytes: 0, items: [] })
  })

  it('another user\'s trash id is a 404 everywhere, and their list is their own; a bad id or query is a 400', async () => {
    await put('mine.md', 'alice only')
    const { trash: { id } } = await (await remove('kb://me/mine.md')).json()
    expect((await trash(bob.token)).items).toEqual([])
    for (const [method, path] of [['POST', `/api/v1/workspace/trash/${id}/restore`], ['DELETE', `/api/v1/workspace/trash/${id}`]] as const) {
      const res = await call(method, path, { token: bob.token })
      expect([res.status, (await res.json()).error.code]).toEqual([404, 'not_found'])
    }
    expect(await (await call('DELETE', '/api/v1/workspace/trash', { token: bob.token })).json()).toEqual({ deleted: { items: 0, bytes: 0 } })
    expect((await trash()).total).toBe(1) // still hers
    for (const [method, path] of [['POST', '/api/v1/workspace/trash/not-a-uuid/restore'], ['DELETE', '/api/v1/workspace/trash/1%27%20or%201=1'], ['GET', '/api/v1/workspace/trash?limit=0'], ['GET', '/api/v1/workspace/trash?offset=-1']] as const) {
      const res = await call(method, path)
      expect([method, path, res.status, (await res.json()).error.code]).toEqual([method, path, 400, 'invalid_request'])
    }
    expect((await call('POST', `/api/v1/workspace/trash/${id}/restore`)).status).toBe(200)
  })
})

describe('the pages', () => {
  let session: { cookie: string; csrf: string }
  beforeAll(async () => {
    session = await signIn(server, 'alice', alice.password)
  })
  const page = (path: string) => fetch(`${server.url}${path}`, { headers: { cookie: session.cookie } })
  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    })

  it('the delete dialog says how long it stays in the Trash; its form needs the CSRF token; the tree links to the Trash', async () => {
    await put('dialog/doc.md', 'the dialog document')
    const dialog = await (await page(`/workspace/files/delete?uri=${encodeURIComponent('kb://me/dialog/doc.md')}`)).text()
    expect(dialog).toContain('It goes to the Trash for 7 days, with every version.')
    expect(dialog).toContain('href="/workspace/trash"')
    const refused = await form('/workspace/files/delete', { uri: 'kb://me/dialog/doc.md' }, { 'hx-request': 'true' })
    expect(refused.status).toBe(403)
    expect(await nodeStatus('kb://me/dialog/doc.md')).toBe(200)
    const done = await form('/workspace/files/delete', { uri: 'kb://me/dialog/doc.md' }, { 'hx-request': 'true', 'x-csrf-token': session.csrf })
    expect(done.status).toBe(200)
    expect(await done.text()).toMatch(/Moved the file doc\.md to the Trash, until \d{4}-\d\d-\d\d\./)
    expect(await (await page('/workspace')).text()).toContain('<a class="trash-link" href="/workspace/trash">')
  })

  it('the Trash page lists it; Restore (with the CSRF token) goes back to the file with a notice', async () => {
    const html = await (await page('/workspace/trash')).text()
    expect(html).toContain('<strong>doc.md</strong>')
    expect(html).toContain('kb://users/alice/dialog/')
    const id = (await trash()).items.find((item: { name: string }) => item.name === 'doc.md').id as string
    expect(html).toContain(`value="${id}"`)
    expect((await form('/workspace/trash/restore', { id })).status).toBe(403)
    const restored = await form('/workspace/trash/restore', { _csrf: session.csrf, id })
    expect(restored.status).toBe(303)
    const location = restored.headers.get('location')!
    expect(location).toBe(`/workspace?uri=${encodeURIComponent('kb://users/alice/dialog/doc.md')}&notice=trash_restored`)
    const shown = await (await page(location)).text()
    expect(shown).toContain('Restored from the Trash, with its versions.')
    expect(shown).toContain('the dialog document')
    const again = await form('/workspace/trash/restore', { _csrf: session.csrf, id })
    expect(again.status).toBe(404)
    expect(await again.text()).toContain('nothing in your Trash has the id') // the page again, with why
  })

  it('Delete forever and Empty trash ask first, need the CSRF token, and come back with a notice', async () => {
    for (const name of ['f1.md', 'f2.md', 'f3.md']) await put(name, name)
    const first = (await (await remove('kb://me/f1.md')).json()).trash.id as string
    await remove('kb://me/f2.md')
    await remove('kb://me/f3.md')
    const html = await (await page('/workspace/trash')).text()
    expect(html).toContain('<summary class="danger-text">Delete forever…</summary>')
    expect(html).toMatch(/Delete all \d+ items in the Trash \([^)]+\) for good\? This cannot be undone\./)
    expect((await form('/workspace/trash/delete', { id: first })).status).toBe(403)
    const deleted = await form('/workspace/trash/delete', { _csrf: session.csrf, id: first })
    expect([deleted.status, deleted.headers.get('location')]).toEqual([303, '/workspace/trash?notice=trash_deleted'])
    expect(await (await page('/workspace/trash?notice=trash_deleted')).text()).toContain('Deleted for good.')
    expect((await form('/workspace/trash/empty', {})).status).toBe(403)
    const left = (await trash()).total as number
    expect(left).toBeGreaterThanOrEqual(2)
    const emptied = await form('/workspace/trash/empty', { _csrf: session.csrf })
    expect([emptied.status, emptied.headers.get('location')]).toEqual([303, `/workspace/trash?notice=trash_emptied&items=${left}`])
    const after = await (await page(emptied.headers.get('location')!)).text()
    expect(after).toContain(`The Trash is empty: ${left} items deleted for good.`)
    expect(after).toContain('The Trash is empty.')
    expect((await trash()).total).toBe(0)
  })
})
