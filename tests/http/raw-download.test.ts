// GET /api/v1/workspace/raw streams a file's raw bytes a slice at a time (src/http/raw-download.ts):
// one version from the first byte to the last, cut short — never mixed — when that version goes
// away mid-way. Regression: the whole value was read in one query (with the parsed body in
// another), and twelve downloads of one 50 MB file at once took the server past 1.3 GB and the
// connection pool dry (exploratory test).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deleteNode, putFile, type WorkspaceNode } from '../../src/effects/workspace/store.ts'
import { findRawVersion, readRawSlice } from '../../src/effects/workspace/file-contents.ts'
import { rawResponseType, streamRawVersion } from '../../src/http/raw-download.ts'
import { DOCX_MIME, mimeFromName } from '../../src/effects/workspace/mime.ts'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>

beforeAll(async () => {
  server = await startTestServer()
  alice = await addUserWithToken(server, 'alice')
})
afterAll(async () => {
  await server?.close()
})

const store = async (name: string, bytes: Uint8Array): Promise<WorkspaceNode> =>
  (await putFile(server.database.db, { owner: alice.user, segments: ['downloads', name], bytes, parsed: { ok: true, mime: 'text/plain', text: 'body' } })).node

/** Bytes that compress well (PostgreSQL would have compressed them): 3.5 MiB of repeated lines. */
const compressible = (): Uint8Array => new TextEncoder().encode('the same line of a long log file, again and again\n'.repeat(72_000))

describe('GET /api/v1/workspace/raw', () => {
  it('sends a file of several slices byte for byte, with its length, stored uncompressed', async () => {
    const bytes = compressible()
    const node = await store('log.txt', bytes)
    const res = await fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(node.uri)}`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-length')).toBe(String(bytes.byteLength))
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true)
    // A slice of a compressed value is decompressed from its start: the column must not compress.
    const { rows } = await sql<{ compression: string | null }>`select pg_column_compression(raw) as compression from file_versions where node_id = ${node.id}`.execute(server.database.db)
    expect(rows).toEqual([{ compression: null }])
  })

  it('sends an empty file as an empty body', async () => {
    const node = await store('empty.bin', new Uint8Array())
    const res = await fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(node.uri)}`, { headers: { authorization: `Bearer ${alice.token}` } })
    expect([res.status, res.headers.get('content-length'), (await res.arrayBuffer()).byteLength]).toEqual([200, '0', 0])
  })
})

describe('raw bytes can never run as the app\'s script or page (issue 34: an uploaded .js was served as text/javascript from the app\'s origin)', () => {
  const storeAs = async (name: string, text: string) =>
    (await putFile(server.database.db, { owner: alice.user, segments: ['raw-types', name], bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: mimeFromName(name), text } })).node
  const download = (node: WorkspaceNode) => fetch(`${server.url}/api/v1/workspace/raw?uri=${encodeURIComponent(node.uri)}`, { headers: { authorization: `Bearer ${alice.token}` } })

  it.each([
    ['evil.js', 'text/plain; charset=utf-8', 'window.__ran = true'],
    ['evil.mjs', 'text/plain; charset=utf-8', 'window.__ran = true'],
    ['page.html', 'text/plain; charset=utf-8', '<script>window.__ran = true</script>'],
    ['data.xml', 'text/plain; charset=utf-8', '<x/>'],
    ['theme.css', 'text/plain; charset=utf-8', 'body { color: red }'],
    ['notes.md', 'text/markdown; charset=utf-8', '# Notes'],
    ['table.csv', 'text/csv; charset=utf-8', 'a,b'],
    ['data.json', 'application/json; charset=utf-8', '{}'],
    ['logo.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"/>'],
    ['pic.png', 'image/png', 'not really a png'],
    ['doc.pdf', 'application/pdf', '%PDF-1.4'],
  ])('%s is sent as %s, its bytes unchanged, as a sandboxed attachment with nosniff', async (name, type, text) => {
    const res = await download(await storeAs(name, text))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe(type)
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${name}`)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
    expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin')
    expect(await res.text()).toBe(text)
  })

  it('sends an unknown binary type as application/octet-stream', () => {
    expect(rawResponseType('application/x-msdownload')).toBe('application/octet-stream')
    expect(rawResponseType('application/javascript')).toBe('text/plain; charset=utf-8')
    expect(rawResponseType('application/xhtml+xml')).toBe('text/plain; charset=utf-8')
    expect(rawResponseType(DOCX_MIME)).toBe(DOCX_MIME)
  })
})

describe('streamRawVersion', () => {
  /** A plain HTTP server whose one response streams `node`'s current version in 4 KiB slices; `between` runs before the second slice is read. */
  async function streamOnce(node: WorkspaceNode, between: () => Promise<void>): Promise<{ server: Server; url: string }> {
    const version = await findRawVersion(server.database.db, alice.user, node)
    let reads = 0
    const http = createServer((_req, res) => {
      void streamRawVersion(server.database.db, res, version, {
        sliceBytes: 4096,
        readSlice: async (db, slice) => {
          reads += 1
          if (reads === 2) await between()
          return readRawSlice(db, slice)
        },
      })
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    return { server: http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/` }
  }

  /** The body as far as it came, and whether reading it failed. */
  async function readAll(url: string): Promise<{ length: string | null; bytes: Buffer; failed: boolean }> {
    const res = await fetch(url)
    const parts: Buffer[] = []
    let failed = false
    const reader = res.body!.getReader()
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) parts.push(Buffer.from(read.value))
    } catch {
      failed = true
    }
    return { length: res.headers.get('content-length'), bytes: Buffer.concat(parts), failed }
  }

  it('keeps to the version it started with when a new one is stored mid-way (never a mix)', async () => {
    const first = randomBytes(40_000)
    const node = await store('changing.bin', first)
    const { server: http, url } = await streamOnce(node, async () => void (await store('changing.bin', randomBytes(40_000))))
    try {
      const got = await readAll(url)
      expect(got.failed).toBe(false)
      expect(got.bytes.equals(first)).toBe(true)
    } finally {
      http.close()
    }
  })

  it('cuts the body short when the file is deleted mid-way: fewer bytes than its Content-Length, a failed read, nothing of another file', async () => {
    const bytes = randomBytes(40_000)
    const node = await store('doomed.bin', bytes)
    const { server: http, url } = await streamOnce(node, () => deleteNode(server.database.db, alice.user, node))
    try {
      const got = await readAll(url)
      expect(got.length).toBe('40000')
      expect(got.failed).toBe(true)
      expect(got.bytes.byteLength).toBe(4096) // the first slice only
      expect(got.bytes.equals(bytes.subarray(0, 4096))).toBe(true)
    } finally {
      http.close()
    }
  })
})
