// Hostile multipart uploads (issue 11, items 1 and 6): none may crash the server, reach a byte
// of the body before auth and CSRF, store a file under another name, or leave a spool file behind.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib'
import express from 'express'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { readMultipartUpload } from '../../src/http/multipart-upload.ts'
import { MULTIPART_TYPE, multipartBody, partBytes, postNeverEnding, postRaw, type Part } from '../support/raw-http.ts'
import { chatCompletionSse, type ScriptedProvider, scriptedModel } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { readSseEvents, terminalEvents } from '../support/sse-frames.ts'
import { addUserWithToken, signIn, type TestServer } from '../support/test-server.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const runFile = promisify(execFile)
const MAX_FILE_BYTES = 1024
const MAX_FILES = 3

describe('hostile multipart uploads', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>
  let session: { cookie: string; csrf: string }
  const spool = mkdtempSync(join(tmpdir(), 'knowagent-spool-test-'))
  const api = () => `${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/')}`
  const bearer = () => ({ authorization: `Bearer ${alice.token}` })
  const nodeStatus = async (uri: string) => (await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent(uri)}`, { headers: bearer() })).status
  const raw = async (uri: string) => (await fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(uri)}`, { headers: bearer() })).text()
  const upload = (parts: ReadonlyArray<Part>, headers: Record<string, string> = bearer(), url = api()) =>
    postRaw(url, { headers: { 'content-type': MULTIPART_TYPE, ...headers }, body: multipartBody(parts) })
  const errorCode = (body: string): string => (JSON.parse(body) as { error: { code: string } }).error.code

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      models: (provider) => [scriptedModel(provider, { id: 'gated', name: 'Gated', profile: 'test', supportsNativeToolCalling: false })],
      configure: (config) => ({
        ...config,
        maxFileBytes: MAX_FILE_BYTES,
        maxFilesPerUpload: MAX_FILES,
        uploadTempDir: spool,
        parsing: { ...config.parsing, processes: 1, limits: { ...config.parsing.limits, maxBytes: MAX_FILE_BYTES } },
      }),
    }))
    alice = await addUserWithToken(server, 'alice')
    session = await signIn(server, 'alice', alice.password)
  })
  // An unhandled 'error' event would kill a real server; here it would only be reported, so
  // every test checks none happened.
  const crashes: unknown[] = []
  const recordCrash = (error: unknown): void => void crashes.push(error)
  process.on('uncaughtExceptionMonitor', recordCrash)
  afterEach(() => {
    expect(crashes).toEqual([])
    expect(readdirSync(spool)).toEqual([]) // no spool folder survives a request, whatever its end
  })
  afterAll(async () => {
    process.off('uncaughtExceptionMonitor', recordCrash)
    await close?.()
    rmSync(spool, { recursive: true, force: true })
  })

  it('answers a body that ends inside a file part with 400 bad_multipart, and the server and a stream in progress carry on', async () => {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    provider.enqueue({
      kind: 'stream',
      chunks: [
        { bytes: chatCompletionSse([{ text: 'Before the upload, ' }]) },
        { bytes: chatCompletionSse([{ text: 'after it.' }, { finish: 'stop' }, 'done']), after: released },
      ],
    })
    const stream = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/', model_id: 'gated', message: 'hello' }),
    })
    expect(stream.status).toBe(200)

    const truncated = Buffer.from('--zz\r\nContent-Disposition: form-data; name="file"; filename="t.txt"\r\n\r\nabc')
    const headers = { 'content-type': 'multipart/form-data; boundary=zz' }
    // Sent while the turn is mid-stream (its first delta has arrived, the rest is held back).
    const duringTheStream = async (): Promise<void> => {
      const viaApi = await postRaw(api(), { headers: { ...headers, ...bearer() }, body: truncated })
      expect(viaApi.status).toBe(400)
      expect(JSON.parse(viaApi.body)).toEqual({ error: { code: 'bad_multipart', message: 'malformed multipart request: Unexpected end of form', request_id: expect.any(String) } })
      const viaForm = await postRaw(`${server.url}/workspace/upload?uri=${encodeURIComponent('kb://me/')}`, {
        headers: { ...headers, cookie: session.cookie, 'x-csrf-token': session.csrf },
        body: truncated,
      })
      expect(viaForm.status).toBe(400)
      expect(await nodeStatus('kb://me/t.txt')).toBe(404)
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    }
    let uploads: Promise<void> | undefined
    const { events } = await readSseEvents(stream, {
      onEvent: (event) => {
        if (event.event !== 'delta' || uploads !== undefined) return
        uploads = duringTheStream().finally(release)
      },
    })
    await uploads
    expect(terminalEvents(events).map((event) => event.event)).toEqual(['done'])
    expect(events.filter((event) => event.event === 'delta').map((event) => event.data.text).join('')).toBe('Before the upload, after it.')
  })

  describe('auth and CSRF are checked before any body byte is read (the body never ends, the answer comes anyway)', () => {
    const fileHead = partBytes({ field: 'file', filename: 'never.txt', content: '' }).subarray(0, -2) // the file part has begun
    it.each([
      ['no credentials', () => ({}), fileHead, 401, 'unauthorized'],
      ['a session with a wrong X-CSRF-Token', () => ({ cookie: session.cookie, 'x-csrf-token': 'wrong' }), fileHead, 403, 'csrf'],
      ['a session without a token whose form starts with a file', () => ({ cookie: session.cookie }), fileHead, 403, 'csrf'],
      [
        'a session whose first part is a wrong _csrf',
        () => ({ cookie: session.cookie }),
        Buffer.concat([partBytes({ field: '_csrf', value: 'wrong' }), fileHead]),
        403,
        'csrf',
      ],
      [
        'a session whose first part is another field',
        () => ({ cookie: session.cookie }),
        Buffer.concat([partBytes({ field: 'uri', value: 'kb://me/' }), fileHead]),
        403,
        'csrf',
      ],
    ])('%s', async (_label, credentials, head, status, code) => {
      const response = await postNeverEnding(api(), { headers: { 'content-type': MULTIPART_TYPE, ...credentials() }, head })
      expect(response.status).toBe(status)
      expect(errorCode(response.body)).toBe(code)
      expect(await nodeStatus('kb://me/never.txt')).toBe(404)
    })

    it('resolves a target directory given in the query first: a missing one is refused while the body is still coming', async () => {
      const missing = `${server.url}/api/v1/workspace/upload?uri=${encodeURIComponent('kb://me/no-such-folder/')}`
      const response = await postNeverEnding(missing, { headers: { 'content-type': MULTIPART_TYPE, ...bearer() }, head: fileHead })
      expect(response.status).toBe(404)
    })

    it('refuses the HTML form too, and accepts it when _csrf comes first', async () => {
      const form = `${server.url}/workspace/upload?uri=${encodeURIComponent('kb://me/')}`
      const refused = await postNeverEnding(form, { headers: { 'content-type': MULTIPART_TYPE, cookie: session.cookie }, head: fileHead })
      expect(refused.status).toBe(403)
      const accepted = await upload(
        [
          { field: '_csrf', value: session.csrf },
          { field: 'file', filename: 'form.md', content: '# from the form' },
        ],
        { cookie: session.cookie },
        form,
      )
      expect(accepted.status).toBe(303)
      expect(await raw('kb://me/form.md')).toBe('# from the form')
    })
  })

  it.each([
    ['a file under another field name', [{ field: 'upload', filename: 'a.md', content: 'x' }], 'unexpected_field'],
    ['an undocumented text field', [{ field: 'comment', value: 'hi' }, { field: 'file', filename: 'a.md', content: 'x' }], 'unexpected_field'],
    ['"uri" twice', [{ field: 'uri', value: 'kb://me/' }, { field: 'uri', value: 'kb://me/' }, { field: 'file', filename: 'a.md', content: 'x' }], 'duplicate_field'],
    ['a folder in the form other than the query\'s', [{ field: 'uri', value: 'kb://me/elsewhere/' }, { field: 'file', filename: 'a.md', content: 'x' }], 'invalid_request'],
  ] satisfies Array<[string, Part[], string]>)('accepts only the documented field names: refuses %s', async (_label, parts, code) => {
    const response = await upload(parts)
    expect(response.status).toBe(400)
    expect(errorCode(response.body)).toBe(code)
    expect(await nodeStatus('kb://me/a.md')).toBe(404)
  })

  it('accepts the folder given twice when both say the same', async () => {
    const response = await upload([{ field: 'uri', value: 'kb://me/' }, { field: 'file', filename: 'same.md', content: 'x' }])
    expect(response.status).toBe(201)
    expect(await raw('kb://me/same.md')).toBe('x')
  })

  it('accepts at most limits.maxFilesPerUpload files, and stores none of a request with more', async () => {
    const files = (count: number, prefix: string): Part[] =>
      Array.from({ length: count }, (_, i) => ({ field: 'file', filename: `${prefix}-${i}.md`, content: `# ${i}` }))
    const tooMany = await upload(files(MAX_FILES + 1, 'many'))
    expect(tooMany.status).toBe(413)
    expect(errorCode(tooMany.body)).toBe('too_many_files')
    expect(await nodeStatus('kb://me/many-0.md')).toBe(404)
    expect((await upload(files(MAX_FILES, 'few'))).status).toBe(201)
  })

  it('accepts a file of exactly limits.maxFileBytes and refuses one byte more with 413', async () => {
    const exact = await upload([{ field: 'file', filename: 'exact.txt', content: 'e'.repeat(MAX_FILE_BYTES) }])
    expect(exact.status).toBe(201)
    expect((await raw('kb://me/exact.txt')).length).toBe(MAX_FILE_BYTES)
    const over = await upload([{ field: 'file', filename: 'over.txt', content: 'o'.repeat(MAX_FILE_BYTES + 1) }])
    expect(over.status).toBe(413)
    expect(errorCode(over.body)).toBe('payload_too_large')
    expect(await nodeStatus('kb://me/over.txt')).toBe(404)
  })

  describe('upload names are validated as given, never rewritten', () => {
    beforeAll(async () => {
      expect((await upload([{ field: 'file', filename: 'secret.md', content: 'the original' }])).status).toBe(201)
    })

    // Raw header values: a backslash is escaped inside a quoted string; filename* carries UTF-8.
    it.each([
      ['a folder part', 'filename="sub/secret.md"', 'a name cannot hold a folder part'],
      ['a backslash', 'filename="x\\\\secret.md"', 'a name cannot hold a folder part'],
      ['a Windows path', "filename*=UTF-8''C%3A%5Cusers%5Csecret.md", 'a name cannot hold a folder part'],
      ['a right-to-left override', "filename*=UTF-8''invoice%E2%80%AEdm.exe", 'invisible or control character U+202E'],
      ['a bidi isolate', "filename*=UTF-8''a%E2%81%A6b.md", 'invisible or control character U+2066'],
      ['a zero-width space', "filename*=UTF-8''secret%E2%80%8B.md", 'invisible or control character U+200B'],
      ['a byte-order mark', "filename*=UTF-8''%EF%BB%BFsecret.md", 'invisible or control character U+FEFF'],
      ['bytes that are not UTF-8', "filename*=UTF-8''%FF%FEsecret.md", 'is not valid UTF-8'],
      ['a line break (sent as %0A, as browsers do)', 'filename="secret%0A.md"', 'invisible or control character U+000A'],
    ])('refuses %s with 400 naming the problem', async (_label, disposition, reason) => {
      const body = Buffer.from(
        `--zz\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: text/markdown\r\n\r\nreplaced!\r\n--zz--\r\n`,
      )
      const response = await postRaw(api(), { headers: { 'content-type': 'multipart/form-data; boundary=zz', ...bearer() }, body })
      expect(response.status).toBe(400)
      const error = (JSON.parse(response.body) as { error: { code: string; message: string } }).error
      expect(error.code).toBe('invalid_name')
      expect(error.message).toContain(reason)
      expect(await raw('kb://me/secret.md')).toBe('the original')
    })
  })

  it('stores a name with a double quote as chosen: fetch\'s FormData sends it as %22, as browsers do', async () => {
    const form = new FormData()
    form.append('file', new File(['quoted'], 'say "hi".md', { type: 'text/markdown' }))
    const response = await fetch(api(), { method: 'POST', headers: bearer(), body: form })
    expect(response.status).toBe(201)
    expect(await response.json()).toEqual({ files: [{ uri: 'kb://users/alice/say "hi".md', outcome: 'added' }] })
    expect(await raw('kb://me/say "hi".md')).toBe('quoted')
  })

  it('stores names in NFC: café.md composed and decomposed are one file', async () => {
    const composed = 'caf\u00e9.md'
    const decomposed = 'cafe\u0301.md'
    const star = (name: string) => `filename*=UTF-8''${encodeURIComponent(name)}`
    const send = (name: string, content: string) =>
      postRaw(api(), {
        headers: { 'content-type': 'multipart/form-data; boundary=zz', ...bearer() },
        body: Buffer.from(`--zz\r\nContent-Disposition: form-data; name="file"; ${star(name)}\r\n\r\n${content}\r\n--zz--\r\n`),
      })
    const first = await send(composed, 'composed')
    expect(JSON.parse(first.body)).toEqual({ files: [{ uri: `kb://users/alice/${composed}`, outcome: 'added' }] })
    const second = await send(decomposed, 'decomposed')
    expect(JSON.parse(second.body)).toEqual({ files: [{ uri: `kb://users/alice/${composed}`, outcome: 'updated' }] })
    const listing = (await (await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: bearer() })).json()) as { entries: Array<{ name: string }> }
    expect(listing.entries.filter((entry) => entry.name.normalize('NFC') === composed).map((entry) => entry.name)).toEqual([composed])
    expect(await raw(`kb://me/${decomposed}`)).toBe('decomposed') // a URI in either form finds it

    const both = await postRaw(api(), {
      headers: { 'content-type': 'multipart/form-data; boundary=zz', ...bearer() },
      body: Buffer.from(
        `--zz\r\nContent-Disposition: form-data; name="file"; ${star('n\u00e9.md')}\r\n\r\na\r\n` +
          `--zz\r\nContent-Disposition: form-data; name="file"; ${star('ne\u0301.md')}\r\n\r\nb\r\n--zz--\r\n`,
      ),
    })
    expect(both.status).toBe(400)
    expect(errorCode(both.body)).toBe('duplicate_name')
  })

  describe('compressed request bodies', () => {
    // 64 MB of JSON that compresses to some 64 KB: the body limit must count inflated bytes.
    const bomb = Buffer.from(`{"uri":"kb://me/","model_id":"gated","message":"${'a'.repeat(64 * 1024 * 1024)}"}`)
    it.each([
      ['gzip', () => gzipSync(bomb, { level: 1 })],
      ['deflate', () => deflateSync(bomb, { level: 1 })],
      ['br', () => brotliCompressSync(bomb, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } })],
    ])('a %s body that inflates past the JSON limit is refused with 413', async (encoding, compress) => {
      const body = compress()
      expect(body.length).toBeLessThan(1024 * 1024)
      const response = await postRaw(`${server.url}/api/v1/knowledge-agent/stream`, {
        headers: { ...bearer(), 'content-type': 'application/json', 'content-encoding': encoding },
        body,
      })
      expect(response.status).toBe(413)
      expect(errorCode(response.body)).toBe('payload_too_large')
    })

    it('a gzip form body that inflates past the form limit is refused with 413', async () => {
      const response = await postRaw(`${server.url}/login`, {
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' },
        body: gzipSync(Buffer.from(`login=alice&password=${'a'.repeat(16 * 1024 * 1024)}`)),
      })
      expect(response.status).toBe(413)
    })

    it('a compressed upload is refused with 415 before it is read', async () => {
      const response = await postNeverEnding(api(), {
        headers: { 'content-type': MULTIPART_TYPE, 'content-encoding': 'gzip', ...bearer() },
        head: gzipSync(Buffer.from('x')),
      })
      expect(response.status).toBe(415)
      expect(errorCode(response.body)).toBe('unsupported_content_encoding')
    })
  })
})

describe('a part refused as its head arrives, its data still to come', () => {
  // On a real network a part's head and its data often arrive in separate chunks. The part is
  // refused as its head is parsed and the parser destroyed with that part's file stream open,
  // which then errors: unheard, that error ended the server. Each case runs in a child process
  // (tests/fixtures/processes/split-upload.ts), where such an error ends the process as it would
  // the server; the chunks are written one by one, so the split is exact.
  it.each([
    ['refused-name', 400, 'invalid_name'],
    ['duplicate-name', 400, 'duplicate_name'],
    ['other-field', 400, 'unexpected_field'],
    ['csrf-not-first', 403, 'csrf'],
  ])('%s: refused with %i %s, and the process lives on', async (name, status, code) => {
    const { stdout } = await runFile(process.execPath, [join(ROOT, 'bin/run-ts.mjs'), join(ROOT, 'tests/fixtures/processes/split-upload.ts'), name], { cwd: ROOT })
    expect(JSON.parse(stdout)).toEqual({ refused: true, status, code, spoolLeft: 0 })
  })
})

describe('a client that left before its upload was read', () => {
  it('ends the read with 499 client_closed at once and leaves no spool folder (its close fired while the handler was busy)', async () => {
    const spoolRoot = mkdtempSync(join(tmpdir(), 'knowagent-spool-gone-'))
    const arrived = Promise.withResolvers<void>()
    const outcome = Promise.withResolvers<unknown>()
    const app = express()
    app.post('/upload', async (req, res) => {
      const closed = once(res, 'close')
      arrived.resolve()
      await closed // as a handler still checking the target would be when the client leaves
      outcome.resolve(await readMultipartUpload(req, { maxFileBytes: MAX_FILE_BYTES, maxFiles: MAX_FILES, spoolRoot }).then(() => 'read', (error: unknown) => error))
      res.end()
    })
    const listener = app.listen(0, '127.0.0.1')
    await once(listener, 'listening')
    try {
      const client = request({ host: '127.0.0.1', port: (listener.address() as AddressInfo).port, path: '/upload', method: 'POST', headers: { 'content-type': MULTIPART_TYPE } })
      client.on('error', () => undefined)
      client.write(partBytes({ field: 'file', filename: 'left.md', content: 'never finished' })) // the body never ends
      await arrived.promise
      client.destroy()
      expect(await outcome.promise).toMatchObject({ status: 499, code: 'client_closed' })
      expect(readdirSync(spoolRoot)).toEqual([])
    } finally {
      listener.close()
      rmSync(spoolRoot, { recursive: true, force: true })
    }
  })
})
