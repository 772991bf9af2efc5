// A folder or the whole workspace as a zip of its files' original bytes (issue 37, Export): over
// HTTP (GET /api/v1/workspace/export) and as `knowagent export` (a real child process on the same
// database). Each zip is read back with a real reader (yauzl) and every entry compared byte for
// byte with what was stored; names in Chinese, with spaces and quotes, nested and empty folders,
// a generated page. Scoped to the caller; a client that goes away stops the export.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readRawSlice } from '../../src/effects/workspace/file-contents.ts'
import { getNode, makeDirectories, putFile } from '../../src/effects/workspace/store.ts'
import { streamFolderZip } from '../../src/http/zip-download.ts'
import { addUserWithToken, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'
import { readZip, type ReadEntry } from '../support/zip-reader.ts'

const BIN = fileURLToPath(new URL('../../bin/knowagent.mjs', import.meta.url))
const CLI_TEST_TIMEOUT = 90_000

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
let bob: Awaited<ReturnType<typeof addUserWithToken>>
let outDir: string

/** What alice keeps under export/, by name inside the zip. */
const stored = new Map<string, Buffer>()
const FOLDERS = ['a/', 'a/b/', 'a/b/c/', 'empty/', 'empty/inner/', '笔记/', '笔记/"季度" 总结/']

const put = async (path: string, bytes: Buffer, mime = 'application/octet-stream') => {
  await putFile(server.database.db, { owner: alice.user, segments: ['export', ...path.split('/')], bytes, parsed: { ok: true, mime, text: 'text' } })
  stored.set(path, bytes)
}

beforeAll(async () => {
  server = await startTestServer()
  alice = await addUserWithToken(server, 'alice')
  bob = await addUserWithToken(server, 'bob')
  outDir = mkdtempSync(join(tmpdir(), 'knowagent-export-'))
  await put('readme.md', Buffer.from('# Old version\n'), 'text/markdown')
  await put('readme.md', Buffer.from('# Export\n\nthe current version, not the first\n'), 'text/markdown')
  await put('笔记/会议 记录.md', Buffer.from('# 会议记录\n\n第一季度的计划。\n'), 'text/markdown')
  await put('笔记/"季度" 总结/it\'s "done".txt', Buffer.from('quoted, with spaces\n'), 'text/plain')
  await put('a/b/c/deep.bin', randomBytes(3 * 1024 * 1024 + 17)) // several 1 MiB slices
  await put('photo.png', randomBytes(70_000), 'image/png')
  await put('nothing.txt', Buffer.alloc(0), 'text/plain')
  await put('summary of notes.md', Buffer.from('# Summary\n\nwritten by a compile job\n'), 'text/markdown')
  await server.database.db.updateTable('nodes').set({ generated: 'summary' }).where('path', '=', 'export/summary of notes.md').execute()
  await makeDirectories(server.database.db, alice.user, ['export', 'empty', 'inner'])
  await putFile(server.database.db, { owner: alice.user, segments: ['elsewhere', 'not-in-it.md'], bytes: Buffer.from('outside'), parsed: { ok: true, mime: 'text/markdown', text: 'outside' } })
})
afterAll(async () => {
  await server?.close()
  if (outDir) rmSync(outDir, { recursive: true, force: true })
})

const exportUrl = (uri: string) => `${server.url}/api/v1/workspace/export?uri=${encodeURIComponent(uri)}`
const asAlice = () => ({ headers: { authorization: `Bearer ${alice.token}` } })

/** The entries as comparable values: a folder as "dir", a file as its bytes in hex. */
const contents = (entries: Map<string, ReadEntry>) => Object.fromEntries([...entries].map(([name, entry]) => [name, entry.directory ? 'dir' : entry.bytes.toString('hex')]))
const expected = () => Object.fromEntries([...FOLDERS.map((folder) => [folder, 'dir'] as const), ...[...stored].map(([name, bytes]) => [name, bytes.toString('hex')] as const)])

describe('GET /api/v1/workspace/export', () => {
  it('streams the folder as a zip: every file byte-identical at its path, every folder kept, names UTF-8 and flagged so', async () => {
    const res = await fetch(exportUrl('kb://me/export/'), asAlice())
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/zip')
    expect(res.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''export.zip")
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-length')).toBeNull() // streamed: its size is known only at its end
    const entries = await readZip(Buffer.from(await res.arrayBuffer()))
    expect(contents(entries)).toEqual(expected())
    expect([...entries.values()].every((entry) => entry.utf8Flag)).toBe(true)
  })

  it('exports the whole workspace from kb://me/, named after the login; a folder name in Chinese is RFC 5987-encoded', async () => {
    const whole = await fetch(exportUrl('kb://me/'), asAlice())
    expect(whole.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''alice.zip")
    const entries = await readZip(Buffer.from(await whole.arrayBuffer()))
    expect(entries.get('elsewhere/not-in-it.md')?.bytes.toString()).toBe('outside')
    expect(entries.get('export/笔记/会议 记录.md')?.bytes.equals(stored.get('笔记/会议 记录.md')!)).toBe(true)
    expect(entries.get('export/empty/inner/')?.directory).toBe(true)

    const notes = await fetch(exportUrl('kb://me/export/笔记/'), asAlice())
    expect(notes.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${encodeURIComponent('笔记.zip')}`)
    expect([...(await readZip(Buffer.from(await notes.arrayBuffer()))).keys()].sort()).toEqual(['"季度" 总结/', '"季度" 总结/it\'s "done".txt', '会议 记录.md'])
  })

  it("a folder's page offers Download as zip; a file's does not", async () => {
    const folderPage = await (await fetch(`${server.url}/workspace/content?uri=${encodeURIComponent('kb://me/export/')}`, asAlice())).text()
    expect(folderPage).toContain(`href="/api/v1/workspace/export?uri=${encodeURIComponent('kb://users/alice/export/')}"`)
    expect(folderPage).toContain('Download as zip')
    const filePage = await (await fetch(`${server.url}/workspace/content?uri=${encodeURIComponent('kb://me/export/readme.md')}`, asAlice())).text()
    expect(filePage).not.toContain('Download as zip')
  })

  it("refuses another user's folder (403 outside_scope), a file (409), a missing folder (404) and no credentials (401)", async () => {
    const theirs = await fetch(exportUrl('kb://users/alice/export/'), { headers: { authorization: `Bearer ${bob.token}` } })
    expect(theirs.status).toBe(403)
    expect(((await theirs.json()) as { error: { code: string } }).error.code).toBe('outside_scope')
    const file = await fetch(exportUrl('kb://me/export/readme.md'), asAlice())
    expect([file.status, ((await file.json()) as { error: { code: string } }).error.code]).toEqual([409, 'conflict'])
    const missing = await fetch(exportUrl('kb://me/export/'), { headers: { authorization: `Bearer ${bob.token}` } })
    expect(missing.status).toBe(404)
    expect((await fetch(exportUrl('kb://me/export/'))).status).toBe(401)
  })

  it('stops when the client goes away: no slice is read after it, and the export settles', async () => {
    const folder = await getNode(server.database.db, alice.user, ['export', 'a'])
    let reads = 0
    let clientGone!: () => void
    const gone = new Promise<void>((resolve) => (clientGone = resolve))
    let settled!: Promise<void>
    const http: Server = createServer((_req, res) => {
      res.on('close', () => clientGone())
      settled = streamFolderZip(server.database.db, res, {
        owner: alice.user,
        folder,
        logger: server.ctx.logger,
        sliceBytes: 4096,
        readSlice: async (db, slice) => {
          reads += 1
          if (reads === 2) await gone // the client leaves while the second slice is read
          return readRawSlice(db, slice)
        },
      })
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    try {
      const client = new AbortController()
      const res = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`, { signal: client.signal })
      await res.body!.getReader().read() // the zip has begun
      await waitUntil(() => reads === 2, 'the second slice is being read')
      client.abort()
      await gone
      await settled // the export gave up (a hang would time out here)
      expect(reads).toBe(2) // of 3 MiB in 4 KiB slices: nothing read after the client left
      expect(await readRawSlice(server.database.db, { versionId: folder.id, offset: 0, length: 1 })).toBeUndefined() // the pool still answers
    } finally {
      http.close()
    }
  })
})

describe('knowagent export', () => {
  function knowagent(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL: server.database.url, KNOWAGENT_SECRET: TEST_SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
  }

  it('writes the same zip as the download and says how many files and bytes', { timeout: CLI_TEST_TIMEOUT }, async () => {
    const file = join(outDir, 'export.zip')
    const run = await knowagent(['export', 'kb://me/export/', file, '--user', 'alice'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const bytes = [...stored.values()].reduce((sum, b) => sum + b.byteLength, 0)
    expect(run.stdout).toMatch(new RegExp(`^exported ${stored.size} file\\(s\\), ${bytes} byte\\(s\\), in ${FOLDERS.length} folder\\(s\\) from kb://users/alice/export/ to ${file} \\(\\d+ bytes zipped\\)\\n$`))
    const written = await readZip(readFileSync(file))
    const downloaded = await readZip(Buffer.from(await (await fetch(exportUrl('kb://me/export/'), asAlice())).arrayBuffer()))
    expect(contents(written)).toEqual(contents(downloaded))
    expect(contents(written)).toEqual(expected())
    expect(readdirSync(outDir)).toEqual(['export.zip']) // no temporary file left beside it
  })

  it('leaves no file, not even a partial one, when it fails: an unknown folder, a file, another user', { timeout: CLI_TEST_TIMEOUT }, async () => {
    const file = join(outDir, 'failed', 'out.zip')
    rmSync(join(outDir, 'failed'), { recursive: true, force: true })
    const { mkdirSync } = await import('node:fs')
    mkdirSync(join(outDir, 'failed'))
    const missing = await knowagent(['export', 'kb://me/no-such-folder/', file, '--user', 'alice'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('kb://users/alice/no-such-folder does not exist')
    const notFolder = await knowagent(['export', 'kb://me/export/readme.md', file, '--user', 'alice'])
    expect(notFolder.code).toBe(1)
    expect(notFolder.stderr).toContain('only a folder is exported')
    const theirs = await knowagent(['export', 'kb://users/alice/', file, '--user', 'bob'])
    expect(theirs.code).toBe(1)
    expect(theirs.stderr).toContain("another user's workspace")
    expect(existsSync(file)).toBe(false)
    expect(readdirSync(join(outDir, 'failed'))).toEqual([])
  })
})
