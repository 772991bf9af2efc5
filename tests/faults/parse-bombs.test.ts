// Decompression bombs uploaded over HTTP (issue 11, item 2): each is stored with its raw bytes,
// `parse_status = failed` and a reason naming the limit it hit; the event loop stays free while
// a worker parses; a client that goes away cancels the parse.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ParserActivity } from '../../src/effects/workspace/parse/index.ts'
import { docxBomb, pdfBomb } from '../support/bombs.ts'
import { MULTIPART_TYPE, multipartBody } from '../support/raw-http.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'

const MB = 1024 * 1024

const nextActivity = (server: TestServer, matches: (activity: ParserActivity) => boolean): Promise<ParserActivity> =>
  new Promise((resolve) => {
    const stop = server.ctx.parser.onActivity((activity) => {
      if (!matches(activity)) return
      stop()
      resolve(activity)
    })
  })

describe.each([
  ['the default limits', {}],
  ['a small memory limit and no decompression budget to speak of', { memoryLimitMb: 128, maxInflatedBytes: 8192 * MB }],
] as const)('decompression bombs under %s', (_label, limits) => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  const spool = mkdtempSync(join(tmpdir(), 'knowagent-spool-test-'))
  const bearer = () => ({ authorization: `Bearer ${alice.token}` })

  beforeAll(async () => {
    server = await startTestServer({
      configure: (config) => ({
        ...config,
        uploadTempDir: spool,
        parsing: {
          ...config.parsing,
          processes: 1,
          memoryLimitMb: 'memoryLimitMb' in limits ? limits.memoryLimitMb : config.parsing.memoryLimitMb,
          limits: { ...config.parsing.limits, ...('maxInflatedBytes' in limits ? { maxInflatedBytes: limits.maxInflatedBytes } : {}) },
        },
      }),
    })
    alice = await addUserWithToken(server, 'alice')
  })
  afterEach(() => {
    expect(readdirSync(spool)).toEqual([])
  })
  afterAll(async () => {
    await server?.close()
    rmSync(spool, { recursive: true, force: true })
  })

  const expected = 'memoryLimitMb' in limits ? /^memory limit: parsing needed more than 128 MB/ : /^inflated size over 67,108,864 bytes/

  it.each([
    ['a 300 KB PDF with one FlateDecode stream of 300 MB', 'bomb.pdf', () => pdfBomb({ inflatedBytes: 300 * MB })],
    ['a 1 MB DOCX with a part of 1 GB', 'bomb.docx', () => docxBomb({ inflatedBytes: 1024 * MB })],
    ['a DOCX whose part declares 1,000 bytes and inflates to 1 GB', 'liar.docx', () => docxBomb({ inflatedBytes: 1024 * MB, declaredBytes: 1000 })],
  ])('stores %s with its raw bytes, parse_status failed and the limit named', async (_what, name, build) => {
    const bytes = build()
    expect(bytes.length).toBeLessThan(1.1 * MB)
    const response = await fetch(`${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/')}`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': MULTIPART_TYPE },
      body: new Uint8Array(multipartBody([{ field: 'file', filename: name, content: bytes }])),
    })
    expect(response.status).toBe(201)
    const { files } = (await response.json()) as { files: Array<{ uri: string; outcome: string; parse_error: string }> }
    expect(files).toHaveLength(1)
    expect(files[0]!.parse_error).toMatch(expected)
    const node = (await (await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent(files[0]!.uri)}`, { headers: bearer() })).json()) as {
      parse: { status: string; error: string }
    }
    expect(node.parse.status).toBe('failed')
    expect(node.parse.error).toBe(files[0]!.parse_error)
    const raw = await fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(files[0]!.uri)}`, { headers: bearer() })
    expect(Buffer.from(await raw.arrayBuffer()).equals(bytes)).toBe(true)
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  })
})

describe('a bomb being parsed', () => {
  let server: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  const spool = mkdtempSync(join(tmpdir(), 'knowagent-spool-test-'))

  beforeAll(async () => {
    // Budgets this large let the parse of a 1 GB stream run for many seconds: the test below
    // acts while it runs, and ends it by aborting the upload.
    server = await startTestServer({
      configure: (config) => ({
        ...config,
        uploadTempDir: spool,
        parsing: { ...config.parsing, processes: 1, memoryLimitMb: 8192, limits: { ...config.parsing.limits, maxInflatedBytes: 8192 * MB } },
      }),
    })
    alice = await addUserWithToken(server, 'alice')
  })
  afterAll(async () => {
    await server?.close()
    rmSync(spool, { recursive: true, force: true })
  })

  it('leaves /healthz answering while the upload is pending, and the client aborting the upload cancels the parse', async () => {
    const body = multipartBody([{ field: 'file', filename: 'bomb.pdf', content: pdfBomb({ inflatedBytes: 1024 * MB }) }])
    const running = nextActivity(server, (activity) => activity.type === 'running')
    const settled = nextActivity(server, (activity) => activity.type === 'settled')
    const target = new URL(`${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/')}`)
    let answered = false
    const upload = request({
      host: target.hostname,
      port: target.port,
      path: target.pathname + target.search,
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': MULTIPART_TYPE, 'content-length': String(body.length) },
    })
    upload.on('response', () => {
      answered = true
    })
    upload.on('error', () => undefined) // destroyed below
    upload.end(body)

    await running
    const health = await fetch(`${server.url}/healthz`)
    expect(health.status).toBe(200)
    expect(answered).toBe(false) // the upload is still being parsed

    upload.destroy()
    const outcome = await settled
    expect(outcome).toMatchObject({ type: 'settled', name: 'bomb.pdf', outcome: { ok: false, code: 'aborted' } })
    const node = await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/bomb.pdf`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(node.status).toBe(404)
    await expect.poll(() => readdirSync(spool)).toEqual([])
  })
})
