// A file's version history (issue 37): its versions listed (paged), an old one shown and
// downloaded byte for byte, one restored as the newest version (the agent's `read` then sees its
// text), another user's file refused, an unknown version a 404, and a restore from a page only
// with the session's CSRF token.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { putFile } from '../../src/effects/workspace/store.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let bob: Awaited<ReturnType<typeof addUserWithToken>>
const first = new Uint8Array(randomBytes(300_000))
const second = new Uint8Array(randomBytes(1_000))
const NOTES = 'kb://users/alice/history/notes.txt'
const BLOB = 'kb://users/alice/history/blob.bin'

beforeAll(async () => {
  server = await startTestServer()
  alice = await addUserWithToken(server, 'alice')
  bob = await addUserWithToken(server, 'bob')
  for (const bytes of [first, second]) {
    await putFile(server.database.db, { owner: alice.user, segments: ['history', 'blob.bin'], bytes, parsed: { ok: false, mime: 'application/octet-stream', error: 'binary' } })
  }
  for (const text of ['the first words', 'the second words', 'the third words']) {
    await putText(server.database.db, { owner: alice.user, segments: ['history', 'notes.txt'], text })
  }
})
afterAll(async () => {
  await server?.close()
})

const get = (path: string, token = alice.token) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
const post = (path: string, body: unknown, token = alice.token) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
const versionsOf = async (uri: string, query = '') => (await get(`/api/v1/workspace/versions?uri=${encodeURIComponent(uri)}${query}`)).json()
const raw = (uri: string, version?: number, token?: string) => get(`/api/v1/workspace/raw?uri=${encodeURIComponent(uri)}${version === undefined ? '' : `&version=${version}`}`, token)
const readCommand = async (uri: string) =>
  (await post('/api/v1/knowledge-agent/command', { command: 'read', uri })).json() as Promise<{ result: { text: string } }>

describe('GET /api/v1/workspace/versions', () => {
  it('lists a file\'s versions newest first, with when, size and how (— for versions written before origins were kept)', async () => {
    const body = await versionsOf(BLOB)
    expect(body).toMatchObject({ uri: BLOB, current: 2, total: 2, next_offset: null })
    expect(body.versions).toEqual([
      { version: 2, created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), size: 1_000, mime: 'application/octet-stream', origin: null, current: true },
      { version: 1, created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), size: 300_000, mime: 'application/octet-stream', origin: null, current: false },
    ])
  })

  it('pages them', async () => {
    const page1 = await versionsOf(NOTES, '&limit=2')
    expect([page1.versions.map((v: { version: number }) => v.version), page1.next_offset, page1.total]).toEqual([[3, 2], 2, 3])
    const page2 = await versionsOf(NOTES, '&limit=2&offset=2')
    expect([page2.versions.map((v: { version: number }) => v.version), page2.next_offset]).toEqual([[1], null])
  })

  it('refuses a folder (409) and an unknown file (404)', async () => {
    expect((await get(`/api/v1/workspace/versions?uri=${encodeURIComponent('kb://me/history/')}`)).status).toBe(409)
    expect((await get(`/api/v1/workspace/versions?uri=${encodeURIComponent('kb://me/history/none.txt')}`)).status).toBe(404)
  })
})

describe('GET /api/v1/workspace/raw?version=', () => {
  it('sends an old version byte for byte, with the same headers as the current one', async () => {
    const [old, current] = [await raw(BLOB, 1), await raw(BLOB)]
    expect(old.status).toBe(200)
    expect(Buffer.from(await old.arrayBuffer()).equals(Buffer.from(first))).toBe(true)
    expect(Buffer.from(await current.arrayBuffer()).equals(Buffer.from(second))).toBe(true)
    expect(old.headers.get('content-length')).toBe(String(first.byteLength))
    for (const header of ['content-type', 'content-disposition', 'content-security-policy', 'x-content-type-options', 'cross-origin-resource-policy']) {
      expect([header, old.headers.get(header)]).toEqual([header, current.headers.get(header)])
    }
  })

  it('answers an unknown version with 404 and a version that is no number with 400', async () => {
    const unknown = await raw(BLOB, 9)
    expect([unknown.status, (await unknown.json()).error.code]).toEqual([404, 'not_found'])
    expect((await get(`/api/v1/workspace/raw?uri=${encodeURIComponent(BLOB)}&version=0`)).status).toBe(400)
  })
})

describe('another user\'s file', () => {
  it('is refused (403) for its versions, an old version\'s bytes and a restore', async () => {
    const list = await get(`/api/v1/workspace/versions?uri=${encodeURIComponent(BLOB)}`, bob.token)
    const bytes = await raw(BLOB, 1, bob.token)
    const restore = await post('/api/v1/workspace/restore-version', { uri: BLOB, version: 1 }, bob.token)
    for (const res of [list, bytes, restore]) expect([res.status, (await res.json()).error.code]).toEqual([403, 'outside_scope'])
    expect((await versionsOf(BLOB)).total).toBe(2) // nothing was restored
  })
})

describe('POST /api/v1/workspace/restore-version', () => {
  it('restores an old version as the newest one: its bytes, its text (the agent reads it), origin "restore"', async () => {
    expect((await readCommand(NOTES)).result.text).toBe('the third words')
    const res = await post('/api/v1/workspace/restore-version', { uri: NOTES, version: 1 })
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ uri: NOTES, restored: true, from: 1, version: 4, message: 'Version 1 restored: it is now version 4, the current one.' })
    expect(await (await raw(NOTES)).text()).toBe('the first words')
    expect((await readCommand(NOTES)).result.text).toBe('the first words')
    const listed = await versionsOf(NOTES)
    expect(listed.versions[0]).toMatchObject({ version: 4, origin: 'restore', current: true, size: 'the first words'.length })
    expect(listed.total).toBe(4)
  })

  it('restores raw bytes that had no text, byte for byte', async () => {
    const res = await post('/api/v1/workspace/restore-version', { uri: BLOB, version: 1 })
    expect([res.status, (await res.json()).version]).toEqual([201, 3])
    expect(Buffer.from(await (await raw(BLOB)).arrayBuffer()).equals(Buffer.from(first))).toBe(true)
  })

  it('makes no version for the current one, or one with the current bytes, and says so', async () => {
    const current = await post('/api/v1/workspace/restore-version', { uri: NOTES, version: 4 })
    expect([current.status, await current.json()]).toEqual([200, { uri: NOTES, restored: false, from: 4, version: 4, message: 'Version 4 is already the current version; nothing changed.' }])
    const same = await post('/api/v1/workspace/restore-version', { uri: NOTES, version: 1 })
    expect([same.status, (await same.json()).message]).toEqual([200, 'Version 1 has the same content as the current version 4; nothing changed.'])
    expect((await versionsOf(NOTES)).total).toBe(4)
  })

  it('answers an unknown version with 404', async () => {
    const res = await post('/api/v1/workspace/restore-version', { uri: NOTES, version: 99 })
    expect([res.status, await res.json()]).toEqual([404, { error: { code: 'not_found', message: `${NOTES} has no version 99`, request_id: expect.any(String) } }])
  })
})

describe('the page', () => {
  let session: { cookie: string; csrf: string }
  beforeAll(async () => {
    session = await signIn(server, 'alice', alice.password)
  })
  const page = (query: string) => fetch(`${server.url}/workspace?${query}`, { headers: { cookie: session.cookie } })
  const restoreForm = (fields: Record<string, string>) =>
    fetch(`${server.url}/workspace/versions/restore`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    })

  it('lists the versions and shows an old one, marked as not the current one', async () => {
    const current = await (await page(`uri=${encodeURIComponent(NOTES)}`)).text()
    expect(current).toContain('History: 4 versions')
    expect(current).not.toContain('not the current one')
    const old = await page(`uri=${encodeURIComponent(NOTES)}&version=2`)
    expect(old.status).toBe(200)
    const html = await old.text()
    expect(html).toContain('Version 2 of 4, not the current one')
    expect(html).toContain('the second words')
    expect(html).toContain(`/api/v1/workspace/raw?uri=${encodeURIComponent(NOTES)}&amp;version=2`)
    expect((await page(`uri=${encodeURIComponent(NOTES)}&version=40`)).status).toBe(404)
  })

  it('restores from the form only with the session\'s CSRF token, then shows the file with a notice', async () => {
    const refused = await restoreForm({ uri: NOTES, version: '2' })
    expect([refused.status, await refused.text()]).toEqual([403, expect.stringContaining('CSRF token')])
    const json = await fetch(`${server.url}/api/v1/workspace/restore-version`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: NOTES, version: 2 }),
    })
    expect(json.status).toBe(403)
    expect((await versionsOf(NOTES)).total).toBe(4)

    const done = await restoreForm({ _csrf: session.csrf, uri: NOTES, version: '2' })
    expect(done.status).toBe(303)
    const location = done.headers.get('location')!
    expect(location).toBe(`/workspace?uri=${encodeURIComponent(NOTES)}&notice=version_restored&restored_from=2&restored_as=5`)
    const shown = await (await page(location.split('?')[1]!)).text()
    expect(shown).toContain('Version 2 restored: it is now version 5, the current one.')
    expect(shown).toContain('the second words')
    expect((await readCommand(NOTES)).result.text).toBe('the second words')
  })
})
