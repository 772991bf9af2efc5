// A zip imported back into a folder (issue 37, "import such a zip back"): POST
// /api/v1/workspace/import-zip unpacks it, every entry parsed like an upload and stored in one
// transaction. The round trip exports a folder (names in Chinese, spaces, quotes, nested and empty
// folders, binary files), imports that zip into a new folder, exports it again and compares every
// entry byte for byte. Every hostile zip — names that climb or hide, symlinks, duplicates,
// encrypted entries, bombs that lie about their sizes or are too big, too many entries — is a 4xx
// naming the entry or the limit, with nothing stored.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZipFile } from 'yazl'
import type { DocumentParser } from '../../src/effects/workspace/parse/document-parser.ts'
import { writeStoredZip } from '../../src/effects/workspace/parse/zip.ts'
import { makeDirectories, putFile } from '../../src/effects/workspace/store.ts'
import { zipWithBombs } from '../support/bombs.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { readZip, type ReadEntry } from '../support/zip-reader.ts'

const MiB = 1024 * 1024
const BUDGET = 8 * MiB

let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>
/** Holds a parse until released (the client-gone test); passes through otherwise. */
let holdParse: { started: () => void; release: Promise<void> } | undefined

const put = (path: string, bytes: Buffer, mime = 'application/octet-stream') =>
  putFile(server.database.db, { owner: alice.user, segments: ['source', ...path.split('/')], bytes, parsed: { ok: true, mime, text: 'text' } })

beforeAll(async () => {
  server = await startTestServer({
    configure: (config) => ({ ...config, maxZipImportBytes: BUDGET }),
    wrapParser: (parser: DocumentParser): DocumentParser => ({
      ...parser,
      parse: async (input) => {
        if (holdParse !== undefined) {
          holdParse.started()
          await holdParse.release
        }
        return parser.parse(input)
      },
    }),
  })
  alice = await addUserWithToken(server, 'alice')
  await put('readme.md', Buffer.from('# Import\n\nround trip\n'), 'text/markdown')
  await put('笔记/会议 记录.md', Buffer.from('# 会议记录\n\n第一季度的计划。\n'), 'text/markdown')
  await put('笔记/"季度" 总结/it\'s "done".txt', Buffer.from('quoted, with spaces\n'), 'text/plain')
  await put('a/b/c/deep.bin', randomBytes(2 * MiB + 17))
  await put('photo.png', randomBytes(70_000), 'image/png')
  await put('nothing.txt', Buffer.alloc(0), 'text/plain')
  await makeDirectories(server.database.db, alice.user, ['source', 'empty', 'inner'])
})
afterAll(() => server?.close())

const auth = () => ({ authorization: `Bearer ${alice.token}` })

async function importZip(zip: Uint8Array, folder: string, { signal }: { signal?: AbortSignal } = {}) {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'archive.zip')
  const res = await fetch(`${server.url}/api/v1/workspace/import-zip?uri=${encodeURIComponent(folder)}&create_parents=true`, { method: 'POST', headers: auth(), body: form, signal })
  return { status: res.status, body: (await res.json()) as { folder?: string; files?: Array<{ uri: string; outcome: string }>; error?: { code: string; message: string } } }
}

async function exportZip(folder: string): Promise<Map<string, ReadEntry>> {
  const res = await fetch(`${server.url}/api/v1/workspace/export?uri=${encodeURIComponent(folder)}`, { headers: auth() })
  expect(res.status).toBe(200)
  return readZip(Buffer.from(await res.arrayBuffer()))
}

const contents = (entries: Map<string, ReadEntry>) => Object.fromEntries([...entries].map(([name, entry]) => [name, entry.directory ? 'dir' : entry.bytes.toString('hex')]))

/** Every node alice has, by path: what "nothing stored" is checked against. */
const alicePaths = async () =>
  (await server.database.db.selectFrom('nodes').select(['path', 'current_version_id']).where('owner_id', '=', alice.user.id).orderBy('path').execute()).map((row) => `${row.path} ${row.current_version_id ?? ''}`)

describe('POST /api/v1/workspace/import-zip', () => {
  it('round trip: a folder exported, imported into a new folder and exported again gives every entry byte for byte', async () => {
    const first = await fetch(`${server.url}/api/v1/workspace/export?uri=${encodeURIComponent('kb://me/source/')}`, { headers: auth() })
    const zip = Buffer.from(await first.arrayBuffer())
    const exported = await readZip(zip)
    expect(exported.get('笔记/"季度" 总结/it\'s "done".txt')?.bytes.toString()).toBe('quoted, with spaces\n')
    expect(exported.get('empty/inner/')?.directory).toBe(true)

    const imported = await importZip(zip, 'kb://me/copy/of it/')
    expect(imported.status).toBe(201)
    expect(imported.body.folder).toBe('kb://users/alice/copy/of it/')
    expect(imported.body.files?.map((file) => file.outcome).every((outcome) => outcome === 'added')).toBe(true)
    expect(imported.body.files).toHaveLength([...exported.values()].filter((entry) => !entry.directory).length)

    expect(contents(await exportZip('kb://me/copy/of it/'))).toEqual(contents(exported))
    // Parsed like an upload: the Markdown's text is searchable content, not just bytes.
    const node = await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/copy/of it/笔记/会议 记录.md')}`, { headers: auth() })
    expect(((await node.json()) as { mime: string }).mime).toBe('text/markdown')
    // Its history says how it came.
    const versions = await fetch(`${server.url}/api/v1/workspace/versions?uri=${encodeURIComponent('kb://me/copy/of it/笔记/会议 记录.md')}`, { headers: auth() })
    expect(((await versions.json()) as { versions: Array<{ origin: string | null }> }).versions.map((version) => version.origin)).toEqual(['import'])
  })

  it('imports into an existing folder: a file already there gets a new version, an identical one is unchanged', async () => {
    await putFile(server.database.db, { owner: alice.user, segments: ['existing', 'a.txt'], bytes: Buffer.from('old'), parsed: { ok: true, mime: 'text/plain', text: 'old' } })
    await putFile(server.database.db, { owner: alice.user, segments: ['existing', 'same.txt'], bytes: Buffer.from('same'), parsed: { ok: true, mime: 'text/plain', text: 'same' } })
    const zip = writeStoredZip([{ name: 'a.txt', data: 'new' }, { name: 'same.txt', data: 'same' }, { name: 'sub/b.txt', data: 'b' }])
    const imported = await importZip(zip, 'kb://me/existing/')
    expect(imported.status).toBe(201)
    expect(Object.fromEntries(imported.body.files!.map((file) => [file.uri, file.outcome]))).toEqual({
      'kb://users/alice/existing/a.txt': 'updated',
      'kb://users/alice/existing/same.txt': 'unchanged',
      'kb://users/alice/existing/sub/b.txt': 'added',
    })
  })

  const symlinkZip = async (): Promise<Buffer> => {
    const zip = new ZipFile()
    zip.addBuffer(Buffer.from('ok'), 'ok.txt')
    zip.addBuffer(Buffer.from('/etc/passwd'), 'link', { mode: 0o120777 })
    zip.end()
    const parts: Buffer[] = []
    for await (const part of zip.outputStream) parts.push(part as Buffer)
    return Buffer.concat(parts)
  }
  const encryptedZip = (): Buffer => {
    const zip = writeStoredZip([{ name: 'ok.txt', data: 'ok' }, { name: 'secret.txt', data: 'xxxx' }])
    const central = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 1, central + 8)
    return zip
  }
  const notUtf8Zip = (): Buffer => {
    const zip = writeStoredZip([{ name: 'ok_.txt', data: 'ok' }])
    const central = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]))
    zip[central + 46 + 2] = 0xff // flagged UTF-8, but a lone 0xFF is not
    return zip
  }
  const named = (name: string) => writeStoredZip([{ name: 'ok.txt', data: 'ok' }, { name, data: 'x' }])

  it.each([
    // The last column is the entry as the message quotes it (JSON, invisible characters as code points).
    ['a path that climbs out', () => named('../evil.txt'), '"../evil.txt"'],
    ['a path that climbs out part-way', () => named('a/../../evil.txt'), '"a/../../evil.txt"'],
    ['an absolute path', () => named('/etc/cron.d/evil'), '"/etc/cron.d/evil"'],
    ['a drive-letter path', () => named('C:/evil.txt'), '"C:/evil.txt"'],
    ['a backslash', () => named('sub\\evil.txt'), '"sub\\\\evil.txt"'],
    ['a NUL character', () => named('evil\0.txt'), '"evil\\u0000.txt"'],
    ['a bidi override', () => named('invoice\u202Etxt.exe'), '"invoice\\u{202E}txt.exe"'],
    ['an empty path part', () => named('a//b.txt'), '"a//b.txt"'],
    ['a name the store refuses (surrounding whitespace)', () => named('sub/ padded.txt'), '"sub/ padded.txt"'],
    ['a name that is not UTF-8', () => notUtf8Zip(), '"ok\uFFFD.txt"'],
    ['a duplicate name', () => writeStoredZip([{ name: 'ok.txt', data: 'ok' }, { name: 'ok.txt', data: 'again' }]), '"ok.txt"'],
    ['a duplicate in another Unicode form', () => writeStoredZip([{ name: 'caf\u00e9.md', data: 'a' }, { name: 'cafe\u0301.md', data: 'b' }]), '"cafe\u0301.md"'],
    ['a file where a folder is needed', () => writeStoredZip([{ name: 'a', data: 'file' }, { name: 'a/b.txt', data: 'b' }]), '"a/b.txt"'],
    ['a symbolic link', symlinkZip, '"link"'],
    ['an encrypted entry', encryptedZip, '"secret.txt"'],
  ])('refuses %s with a 400 naming the entry, storing nothing', async (_label, build, entry) => {
    const before = await alicePaths()
    const refused = await importZip(await build(), 'kb://me/hostile/')
    expect(refused.status).toBe(400)
    expect(refused.body.error?.code).toBe('invalid_zip_entry')
    expect(refused.body.error?.message).toContain(`zip entry ${entry} is refused`)
    expect(refused.body.error?.message).toContain('nothing was stored')
    expect(await alicePaths()).toEqual(before)
  })

  it('takes a session with its CSRF token, like an upload; without it, 403 and nothing stored', async () => {
    const session = await signIn(server, 'alice', alice.password)
    const post = (headers: Record<string, string>) => {
      const form = new FormData()
      form.append('file', new Blob([new Uint8Array(writeStoredZip([{ name: 'from the page.md', data: '# hi' }]))]), 'page.zip')
      return fetch(`${server.url}/api/v1/workspace/import-zip?uri=${encodeURIComponent('kb://me/session/')}&create_parents=true`, { method: 'POST', headers, body: form })
    }
    const before = await alicePaths()
    const refused = await post({ cookie: session.cookie })
    expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([403, 'csrf'])
    expect(await alicePaths()).toEqual(before)
    const stored = await post({ cookie: session.cookie, 'x-csrf-token': session.csrf })
    expect(stored.status).toBe(201)
    expect(((await stored.json()) as { files: Array<{ uri: string }> }).files.map((file) => file.uri)).toEqual(['kb://users/alice/session/from the page.md'])
  })

  it("the folder page's 'Import a zip here' form (its _csrf field first) unpacks the zip and comes back to the folder with the upload's notice", async () => {
    const session = await signIn(server, 'alice', alice.password)
    await putFile(server.database.db, { owner: alice.user, segments: ['page-import', 'already.txt'], bytes: Buffer.from('here'), parsed: { ok: true, mime: 'text/plain', text: 'here' } })
    const page = await (await fetch(`${server.url}/workspace?uri=${encodeURIComponent('kb://me/page-import/')}`, { headers: { cookie: session.cookie } })).text()
    expect(page).toContain(`action="/workspace/import-zip?uri=${encodeURIComponent('kb://users/alice/page-import/')}"`)
    const form = new FormData()
    form.append('_csrf', session.csrf) // first, as the page's form sends it
    form.append('file', new Blob([new Uint8Array(writeStoredZip([{ name: 'notes/from the form.md', data: '# form' }]))]), 'form.zip')
    const res = await fetch(`${server.url}/workspace/import-zip?uri=${encodeURIComponent('kb://me/page-import/')}`, { method: 'POST', redirect: 'manual', headers: { cookie: session.cookie }, body: form })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toMatch(/^\/workspace\?uri=kb%3A%2F%2Fusers%2Falice%2Fpage-import%2F&/)
    expect((await alicePaths()).some((entry) => entry.startsWith('page-import/notes/from the form.md '))).toBe(true)
  })

  it('refuses a file that is not a zip (400 bad_zip)', async () => {
    const refused = await importZip(Buffer.from('not a zip at all'), 'kb://me/hostile/')
    expect([refused.status, refused.body.error?.code]).toEqual([400, 'bad_zip'])
  })

  it.each([
    ['an entry that declares 1,000 bytes and inflates to 64 MiB', () => zipWithBombs([{ name: 'ok.txt', data: 'ok' }, { name: 'bomb.txt', data: { inflatedBytes: 64 * MiB, declaredBytes: 1000 } }]), 'its declared size, 1,000 bytes'],
    ['entries that together unpack past limits.maxZipImportBytes', () => zipWithBombs([{ name: 'one.txt', data: { inflatedBytes: 5 * MiB } }, { name: 'two.txt', data: { inflatedBytes: 5 * MiB } }]), 'limits.maxZipImportBytes, 8,388,608 bytes'],
    ['an entry larger than limits.maxFileBytes', () => zipWithBombs([{ name: 'huge.bin', data: { inflatedBytes: 60 * MiB } }]), 'limits.maxFileBytes'],
    ['more than 10,000 entries', () => writeStoredZip(Array.from({ length: 10_001 }, (_, k) => ({ name: `${k}.txt`, data: '' }))), '10,000 entries per zip'],
  ])('refuses %s with a 413 naming the limit, storing nothing', async (_label, build, limit) => {
    const before = await alicePaths()
    const refused = await importZip(build(), 'kb://me/bombed/')
    expect(refused.status).toBe(413)
    expect(refused.body.error?.code).toBe('zip_too_large')
    expect(refused.body.error?.message).toContain(limit)
    expect(await alicePaths()).toEqual(before)
  })

  it('stores nothing when the client goes away while the entries are parsed', async () => {
    const before = await alicePaths()
    let started!: () => void
    const parsing = new Promise<void>((resolve) => (started = resolve))
    let release!: () => void
    holdParse = { started, release: new Promise<void>((resolve) => (release = resolve)) }
    const client = new AbortController()
    const pending = importZip(writeStoredZip([{ name: 'one.txt', data: 'one' }, { name: 'two.txt', data: 'two' }]), 'kb://me/gone/', { signal: client.signal }).catch(() => 'aborted')
    await parsing
    client.abort()
    expect(await pending).toBe('aborted')
    await new Promise((resolve) => setTimeout(resolve, 200)) // the server sees the socket close
    holdParse = undefined
    release()
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await alicePaths()).toEqual(before)
  })
})

describe('knowagent import-zip', () => {
  const knowagent = async (args: string[]) => {
    const { main } = await import('../../src/cli.ts')
    const out: string[] = []
    const err: string[] = []
    const code = await main(args, { out: (line) => out.push(line), err: (line) => err.push(line), env: { DATABASE_URL: server.database.url, KNOWAGENT_SECRET: TEST_SECRET } })
    return { code, out: out.join('\n'), err: err.join('\n') }
  }

  it('unpacks an exported zip into a new folder, byte for byte, and refuses a bomb naming its limit with nothing stored', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dir = mkdtempSync(join(tmpdir(), 'knowagent-import-zip-cli-'))
    try {
      const zip = join(dir, 'source.zip')
      const exported = await fetch(`${server.url}/api/v1/workspace/export?uri=${encodeURIComponent('kb://me/source/')}`, { headers: auth() })
      writeFileSync(zip, Buffer.from(await exported.arrayBuffer()))
      const run = await knowagent(['import-zip', zip, 'kb://me/cli copy/', '--user', 'alice'])
      expect(run, run.err).toMatchObject({ code: 0 })
      expect(run.out).toContain('added     kb://users/alice/cli copy/笔记/会议 记录.md')
      expect(run.out).toMatch(/\n6 added, 0 updated, 0 unchanged into kb:\/\/users\/alice\/cli copy\/$/)
      expect(contents(await exportZip('kb://me/cli copy/'))).toEqual(contents(await exportZip('kb://me/source/')))

      const before = await alicePaths()
      const bomb = join(dir, 'bomb.zip')
      writeFileSync(bomb, zipWithBombs([{ name: 'ok.txt', data: 'ok' }, { name: 'bomb.txt', data: { inflatedBytes: 64 * MiB, declaredBytes: 1000 } }]))
      const refused = await knowagent(['import-zip', bomb, 'kb://me/cli bombed/', '--user', 'alice'])
      expect(refused.code).toBe(1)
      expect(refused.err).toMatch(/^knowagent: zip entry .*bomb\.txt.* inflates past the size it declares .*\(its declared size, 1,000 bytes\); nothing was stored$/)
      expect(await alicePaths()).toEqual(before)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
