// What one person may store: every version of every file counts towards limits.userStorageMb, and
// the new versions of the last minute towards limits.uploadMbPerMinute. An upload past either is
// refused whole (413 storage_quota_exceeded, 429 upload_rate_limited with Retry-After), naming the
// limit, with nothing stored; an unchanged file adds nothing; another person is not affected. Files
// in the Trash count for both until it is emptied. The settings page shows what a person's files
// take, and how much of it is in the Trash.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storageUsedBytes } from '../../src/effects/workspace/storage-limits.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

const KIB = 1024

/** Text of `kib` KiB (ASCII). */
const text = (kib: number, fill = 'a') => `${fill.repeat(kib * KIB - 1)}\n`

async function upload(server: TestServer, token: string, files: Record<string, string>) {
  const form = new FormData()
  for (const [name, body] of Object.entries(files)) form.append('file', new Blob([body], { type: 'text/plain' }), name)
  const res = await fetch(`${server.url}/api/v1/workspace/upload?uri=kb://me/&create_parents=true`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { error?: { code: string; message: string } } }
}

describe('limits.userStorageMb', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let bob: Awaited<ReturnType<typeof addUserWithToken>>
  beforeAll(async () => {
    server = await startTestServer({ configure: (config) => ({ ...config, userStorageMb: 1, uploadMbPerMinute: 100 }) })
    alice = await addUserWithToken(server, 'alice')
    bob = await addUserWithToken(server, 'bob')
  })
  afterAll(() => server?.close())

  it('counts every version: an upload past the quota is refused whole and stores nothing; an unchanged file still goes through; bob is not affected', async () => {
    expect((await upload(server, alice.token, { 'a.txt': text(400) })).status).toBe(201)
    expect((await upload(server, alice.token, { 'a.txt': text(400, 'b') })).status).toBe(201) // a second version: 800 KiB in all
    const history = await fetch(`${server.url}/api/v1/workspace/versions?uri=${encodeURIComponent('kb://me/a.txt')}`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(((await history.json()) as { versions: Array<{ origin: string | null }> }).versions.map((version) => version.origin)).toEqual(['upload', 'upload'])
    const before = await storageUsedBytes(server.database.db, alice.user.id)
    expect(before).toBe(800 * KIB)

    const refused = await upload(server, alice.token, { 'c.txt': text(100), 'd.txt': text(200) })
    expect(refused.status).toBe(413)
    expect(refused.body.error).toEqual({ code: 'storage_quota_exceeded', message: expect.stringContaining('1 MiB (limits.userStorageMb); nothing was stored'), request_id: expect.any(String) })
    expect(await storageUsedBytes(server.database.db, alice.user.id)).toBe(before)
    const listed = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(((await listed.json()) as { entries: Array<{ name: string }> }).entries.map((entry) => entry.name)).toEqual(['a.txt'])

    expect((await upload(server, alice.token, { 'a.txt': text(400, 'b') })).status).toBe(201) // the current version's bytes: nothing new
    expect((await upload(server, alice.token, { 'small.txt': text(100) })).status).toBe(201) // 900 KiB: still within
    expect((await upload(server, bob.token, { 'b.txt': text(900) })).status).toBe(201)

    const { cookie } = await signIn(server, 'alice', alice.password)
    expect(await (await fetch(`${server.url}/settings`, { headers: { cookie } })).text()).toContain('Storage: 0.9 MiB of 1 MiB used')
  })

  it('counts the Trash too: a delete frees nothing until the Trash is emptied', async () => {
    const api = (method: string, path: string) => fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${alice.token}` } })
    expect((await api('DELETE', `/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/a.txt')}`)).status).toBe(200) // 800 KiB to the Trash
    const refused = await upload(server, alice.token, { 'c.txt': text(200) })
    expect([refused.status, refused.body.error?.message]).toEqual([413, expect.stringContaining('delete files and empty your Trash to make room')])
    const { cookie } = await signIn(server, 'alice', alice.password)
    expect(await (await fetch(`${server.url}/settings`, { headers: { cookie } })).text()).toContain('0.8 MiB of it is in <a href="/workspace/trash">the Trash</a>: emptying it frees that.')
    expect(await (await api('DELETE', '/api/v1/workspace/trash')).json()).toEqual({ deleted: { items: 1, bytes: 800 * KIB } })
    expect((await upload(server, alice.token, { 'c.txt': text(200) })).status).toBe(201)
    expect(await storageUsedBytes(server.database.db, alice.user.id)).toBe(300 * KIB)
  })
})

describe('limits.uploadMbPerMinute', () => {
  let server: TestServer
  let carol: Awaited<ReturnType<typeof addUserWithToken>>
  beforeAll(async () => {
    server = await startTestServer({ configure: (config) => ({ ...config, userStorageMb: 100, uploadMbPerMinute: 1 }) })
    carol = await addUserWithToken(server, 'carol')
  })
  afterAll(() => server?.close())

  it('refuses an upload that would write more than the minute allows, with Retry-After, storing nothing', async () => {
    expect((await upload(server, carol.token, { 'one.txt': text(700) })).status).toBe(201)
    const refused = await upload(server, carol.token, { 'two.txt': text(400) })
    expect(refused.status).toBe(429)
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1)
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60)
    expect(refused.body.error).toEqual({ code: 'upload_rate_limited', message: expect.stringContaining('at most 1 MiB of new file versions a minute'), request_id: expect.any(String) })
    expect(await storageUsedBytes(server.database.db, carol.user.id)).toBe(700 * KIB)
  })

  it('counts versions moved to the Trash within the minute: deleting does not make room in it', async () => {
    const dave = await addUserWithToken(server, 'dave')
    expect((await upload(server, dave.token, { 'one.txt': text(700) })).status).toBe(201)
    const deleted = await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/one.txt')}`, { method: 'DELETE', headers: { authorization: `Bearer ${dave.token}` } })
    expect(deleted.status).toBe(200)
    expect((await upload(server, dave.token, { 'two.txt': text(400) })).status).toBe(429)
  })
})
