// An upload's folder is found before its body is read; parsing the files takes a while. A folder
// moved, renamed or deleted meanwhile must not be made again at its old path with the files in it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DocumentParser } from '../../src/effects/workspace/parse/document-parser.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

describe('an upload whose folder changes while its files are parsed', () => {
  let server: TestServer
  let token: string
  let password: string
  // While `held` is set, parsing waits for it: the test changes the tree meanwhile.
  let held: { started: () => void; release: Promise<void> } | undefined
  const hold = () => {
    let release!: () => void
    let started!: () => void
    const startedP = new Promise<void>((resolve) => (started = resolve))
    held = { started, release: new Promise<void>((resolve) => (release = resolve)) }
    return { started: startedP, release: () => ((held = undefined), release()) }
  }
  const gated = (parser: DocumentParser): DocumentParser => ({
    ...parser,
    parse: async (request) => {
      const gate = held
      if (gate) {
        gate.started()
        await gate.release
      }
      return parser.parse(request)
    },
  })

  const api = (path: string, init: RequestInit = {}) => fetch(`${server.url}/api/v1/workspace/${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } })
  const json = (path: string, method: string, body: unknown) => api(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const form = (name: string, text: string) => {
    const body = new FormData()
    body.append('file', new Blob([text], { type: 'text/markdown' }), name)
    return body
  }
  const exists = async (uri: string) => (await api(`node?uri=${encodeURIComponent(uri)}`)).status
  const makeFolder = async (parent: string, name: string) => expect((await json('directory', 'POST', { uri: parent, name })).status).toBe(201)

  beforeAll(async () => {
    server = await startTestServer({ wrapParser: gated })
    ;({ token, password } = await addUserWithToken(server, 'ulla'))
  })
  afterAll(async () => {
    await server?.close()
  })

  it('a folder deleted meanwhile: 404, nothing stored, the folder not made again', async () => {
    await makeFolder('kb://me/', 'gone')
    const gate = hold()
    const upload = api('upload?uri=kb://me/gone/', { method: 'POST', body: form('late.md', '# late') })
    await gate.started
    expect((await api('node?uri=kb://me/gone/', { method: 'DELETE' })).status).toBe(200)
    gate.release()
    const res = await upload
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ error: { code: 'not_found', message: expect.stringContaining('was deleted while the upload was read') } })
    expect(await exists('kb://me/gone/')).toBe(404)
    expect(await exists('kb://me/gone/late.md')).toBe(404)
  })

  it('a folder deleted meanwhile, with create_parents: made again, as asked', async () => {
    await makeFolder('kb://me/', 'again')
    const gate = hold()
    const upload = api('upload?uri=kb://me/again/&create_parents=true', { method: 'POST', body: form('a.md', '# a') })
    await gate.started
    expect((await api('node?uri=kb://me/again/', { method: 'DELETE' })).status).toBe(200)
    gate.release()
    const res = await upload
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ files: [{ uri: 'kb://users/ulla/again/a.md', outcome: 'added' }] })
  })

  it('a folder renamed or moved meanwhile: the files follow it, nothing at the old path', async () => {
    await makeFolder('kb://me/', 'old')
    await makeFolder('kb://me/', 'elsewhere')
    const gate = hold()
    const upload = api('upload?uri=kb://me/old/', { method: 'POST', body: form('n.md', '# n') })
    await gate.started
    expect((await json('move', 'POST', { uri: 'kb://me/old/', to: 'kb://me/elsewhere/', name: 'new' })).status).toBe(200)
    gate.release()
    const res = await upload
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ files: [{ uri: 'kb://users/ulla/elsewhere/new/n.md', outcome: 'added' }] })
    expect(await exists('kb://me/old/')).toBe(404)
    expect(await exists('kb://me/elsewhere/new/n.md')).toBe(200)
  })

  it('one folder named two ways (kb://me/… in the query, kb://users/<login>/… in the form) is one folder', async () => {
    await makeFolder('kb://me/', 'twice')
    const body = form('t.md', '# t')
    body.append('uri', 'kb://users/ulla/twice')
    const res = await api('upload?uri=kb://me/twice/', { method: 'POST', body })
    expect(res.status).toBe(201)
    const other = form('u.md', '# u')
    other.append('uri', 'kb://me/elsewhere/')
    const refused = await api('upload?uri=kb://me/twice/', { method: 'POST', body: other })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toContain('the folder is given twice')
  })

  it('the upload form goes back to the folder the files went to: the form field’s, or where it moved', async () => {
    const { cookie, csrf } = await signIn(server, 'ulla', password)
    await makeFolder('kb://me/', 'formdir')
    const body = new FormData()
    body.append('_csrf', csrf)
    body.append('uri', 'kb://me/formdir/')
    body.append('file', new Blob(['# f'], { type: 'text/markdown' }), 'f.md')
    const res = await fetch(`${server.url}/workspace/upload`, { method: 'POST', redirect: 'manual', headers: { cookie }, body })
    expect(res.status).toBe(303)
    const location = new URL(res.headers.get('location')!, server.url)
    expect(location.searchParams.get('uri')).toBe('kb://users/ulla/formdir/')
    expect((await fetch(location, { headers: { cookie } })).status).toBe(200)

    const gate = hold()
    const moved = fetch(`${server.url}/workspace/upload?uri=${encodeURIComponent('kb://me/formdir/')}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'x-csrf-token': csrf },
      body: form('g.md', '# g'),
    })
    await gate.started
    expect((await json('move', 'POST', { uri: 'kb://me/formdir/', name: 'renamed' })).status).toBe(200)
    gate.release()
    const after = await moved
    expect(after.status).toBe(303)
    expect(new URL(after.headers.get('location')!, server.url).searchParams.get('uri')).toBe('kb://users/ulla/renamed/')
  })
})
