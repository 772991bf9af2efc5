// Backup and restore as an operator meets them (issue 37's "Done means"): a real `knowagent serve`
// on the embedded PostgreSQL, 50 uploads running and a turn streaming over HTTP while
// `knowagent backup` (a real child process) takes its snapshot; `knowagent restore` into a new data
// dir; `serve` there. Every version committed before the backup began is in the restore, byte for
// byte; the restore holds exactly the snapshot (each table's rows as the manifest counted them,
// nothing that was never committed); people sign in with their passwords and tokens work. kill -9
// of a backup mid-way leaves no file restore accepts; restore refuses a non-empty data dir, a
// truncated file and a flipped byte; as root, a `cp -r` copy of a data dir starts.
import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { createReadStream, chownSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { readArchive } from '../../src/effects/backup/backup-archive.ts'
import { chatCompletionSse } from '../support/scripted-provider.ts'
import { newDataDir, newDataDirPath, runCli, spawnCli, startServe, stopServeProcessesAfterEach } from '../support/serve-process.ts'
import { waitUntil } from '../support/wait-until.ts'

stopServeProcessesAfterEach()

const PASSWORD = 'alice-password-1234'

/** A model that answers its first words, then holds the stream open until released. */
async function startHeldProvider() {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const open = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      open.add(res)
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chatCompletionSse([{ text: 'part one, ' }]))
      void released.then(() => res.end(chatCompletionSse([{ text: 'part two' }, { finish: 'stop' }, 'done'])))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      release()
      for (const res of open) res.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

async function embeddedClient(dataDir: string): Promise<pg.Client> {
  const client = new pg.Client({ host: join(dataDir, 'pgdata'), port: 5432, user: 'knowagent', database: 'knowagent', password: readFileSync(join(dataDir, 'pg-password'), 'utf8').trim() })
  client.on('error', () => {}) // the server stopped at the end of a test
  await client.connect()
  return client
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Every stored version as `path@version=sha256(raw)` (the hash of the bytes as stored now, not the recorded one). */
async function versions(client: pg.Client): Promise<Map<string, { stored: string; recorded: string }>> {
  const { rows } = await client.query<{ key: string; raw: Buffer; content_hash: string }>(
    `select u.login || ':' || n.path || '@' || v.version_no as key, v.raw, v.content_hash
       from file_versions v join nodes n on n.id = v.node_id join users u on u.id = n.owner_id`,
  )
  return new Map(rows.map((row) => [row.key, { stored: sha256(row.raw), recorded: row.content_hash }]))
}

async function rowCounts(client: pg.Client, tables: ReadonlyArray<string>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const table of tables) counts[table] = Number((await client.query<{ count: string }>(`select count(*) from ${table}`)).rows[0]!.count)
  return counts
}

async function signIn(url: string, login: string, password: string): Promise<number> {
  const page = await fetch(`${url}/login`)
  const cookie = (page.headers.getSetCookie() ?? []).map((c) => c.split(';')[0]).join('; ')
  const csrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
  const res = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({ _login_csrf: csrf, next: '/workspace', login, password }),
  })
  return res.status
}

describe('knowagent backup and restore', () => {
  it('backs up while 50 uploads run and a turn streams; the restore serves exactly the snapshot; kill -9 leaves nothing restorable; bad files are refused', async () => {
    const provider = await startHeldProvider()
    const dataDir = newDataDir()
    const scratch = newDataDir() // the config file and the backups
    const config = join(scratch, 'config.json')
    writeFileSync(
      config,
      JSON.stringify({ models: [{ id: 'held', name: 'Held', profile: 'test', baseUrl: provider.baseUrl, model: 'm', contextWindow: 32768, maxOutputTokens: 1024, supportsNativeToolCalling: true, maxRetries: 0 }] }),
    )
    try {
      const serve = await startServe(dataDir, { KNOWAGENT_CONFIG: config })
      const env = { KNOWAGENT_DATA_DIR: dataDir, KNOWAGENT_CONFIG: config }
      expect((await runCli(['user', 'add', 'alice', '--password', PASSWORD], env)).code).toBe(0)
      const token = (await runCli(['token', 'create', 'alice'], env)).out.trim()
      const auth = { authorization: `Bearer ${token}` }
      const live = await embeddedClient(dataDir)

      // A turn streaming: its first words arrived, its model holds the rest.
      const turn = await fetch(`${serve.url}/api/v1/knowledge-agent/stream`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ uri: 'kb://me/', model_id: 'held', message: 'hello' }),
      })
      expect(turn.status).toBe(200)
      const reader = turn.body!.getReader()
      for (let seen = ''; !seen.includes('event: delta'); ) seen += new TextDecoder().decode((await reader.read()).value)

      // 50 uploads, each its own request, none awaited yet.
      const files = Array.from({ length: 50 }, (_, i) => ({ name: `note-${String(i).padStart(2, '0')}.md`, text: `# Note ${i}\n\n${'lorem ipsum '.repeat(200 + i * 37)}${i}\n` }))
      // A client as the API asks: a 503 `busy` (the database pool is exhausted on a loaded machine) is sent again after its Retry-After.
      const uploads = files.map(async ({ name, text }) => {
        for (let attempt = 1; ; attempt++) {
          const form = new FormData()
          form.append('file', new Blob([text]), name)
          const res = await fetch(`${serve.url}/api/v1/workspace/upload?uri=kb://me/notes/&create_parents=true`, { method: 'POST', headers: auth, body: form })
          if (res.status !== 503 || attempt === 10) return res.status
          await res.body?.cancel()
          await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after') ?? 1) * 1000))
        }
      })
      await waitUntil(async () => Number((await live.query(`select count(*) from nodes where path like 'notes/%'`)).rows[0].count) >= 3, 'a few uploads committed')
      const before = await versions(live) // committed before the backup began

      const backupFile = join(scratch, 'all.backup')
      const taken = await spawnCli(['backup', backupFile], env).done
      expect(taken, taken.err).toMatchObject({ code: 0 })
      expect(taken.out).toMatch(/^backup written: .*\.backup \(/)
      expect(taken.err).toContain('backup: public.file_versions:')
      expect(statSync(backupFile).mode & 0o777).toBe(0o600) // it holds password hashes and the secret

      expect(await Promise.all(uploads)).toEqual(files.map(() => 201))
      const after = await versions(live) // everything, once the uploads are done
      expect([...after.keys()].filter((key) => key.startsWith('alice:notes/'))).toHaveLength(50)

      // kill -9 mid-way: the backup waits on a lock the test holds on `users` (copied late), with
      // the tables before it already written to its temporary file; then it dies.
      const killedFile = join(scratch, 'killed.backup')
      const lock = await embeddedClient(dataDir)
      await lock.query('begin; lock table users in access exclusive mode')
      const killed = spawnCli(['backup', killedFile], env)
      await waitUntil(
        async () => (await live.query(`select 1 from pg_stat_activity where application_name = 'knowagent backup' and wait_event_type = 'Lock'`)).rowCount === 1,
        'the backup waits on the lock',
      )
      const partial = readdirSync(dirname(killedFile)).filter((name) => name.startsWith(`.${killedFile.split('/').at(-1)}.`) && name.endsWith('.partial'))
      expect(partial).toHaveLength(1)
      expect(statSync(join(dirname(killedFile), partial[0]!)).size).toBeGreaterThan(1_000) // the tables before it are in it
      killed.child.kill('SIGKILL')
      expect(await killed.done).toMatchObject({ signal: 'SIGKILL' })
      await lock.query('rollback')
      await lock.end()
      expect(existsSync(killedFile)).toBe(false)
      const leftOver = await runCli(['restore', join(dirname(killedFile), partial[0]!)], { KNOWAGENT_DATA_DIR: newDataDirPath() })
      expect(leftOver.code).toBe(1)
      expect(leftOver.err).toMatch(/^knowagent: incomplete: .* has no end record — the backup was interrupted or the file was cut short/m)

      // Refusals, each before anything is written.
      const occupied = await runCli(['restore', backupFile], env)
      expect(occupied.code).toBe(1)
      expect(occupied.err).toContain(`${dataDir} is not empty`)
      expect(occupied.err).toContain(`mv ${dataDir} ${dataDir}.before-restore`)
      const whole = readFileSync(backupFile)
      const cut = `${backupFile}.cut`
      writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)))
      const flipped = `${backupFile}.flipped`
      const changed = Buffer.from(whole)
      const at = Math.floor(whole.length / 3)
      changed[at] = changed[at]! ^ 0x10
      writeFileSync(flipped, changed)
      const emptyTarget = newDataDirPath()
      const truncated = await runCli(['restore', cut], { KNOWAGENT_DATA_DIR: emptyTarget })
      expect(truncated).toMatchObject({ code: 1, err: expect.stringMatching(/^knowagent: incomplete: .*\.cut has no end record/m) })
      const damaged = await runCli(['restore', flipped], { KNOWAGENT_DATA_DIR: emptyTarget })
      expect(damaged).toMatchObject({ code: 1, err: expect.stringMatching(/^knowagent: damaged: the checksum of .*\.flipped does not match its contents/m) })
      expect(existsSync(emptyTarget)).toBe(false)

      // The restore, into a new data dir, then serve there.
      const { manifest } = await readArchive(createReadStream(backupFile))
      const tables = manifest.entries.filter((entry) => entry.name.startsWith('public.'))
      const restoredDir = newDataDirPath()
      const restored = await spawnCli(['restore', backupFile], { KNOWAGENT_DATA_DIR: restoredDir }).done
      expect(restored, restored.err).toMatchObject({ code: 0 })
      expect(restored.out).toMatch(new RegExp(`^restored ${tables.length + 1} tables, \\d+ rows from `))
      const second = await startServe(restoredDir)
      const copy = await embeddedClient(restoredDir)
      try {
        // Exactly the snapshot: each table's rows as the backup counted them — and the one event the
        // restored server stored itself: the terminal `turn.interrupted` of the turn it closed (below).
        const snapshotRows = Object.fromEntries(tables.map((entry) => [entry.name, entry.rows]))
        expect(await rowCounts(copy, tables.map((entry) => entry.name))).toEqual({ ...snapshotRows, 'public.turn_event_batches': snapshotRows['public.turn_event_batches']! + 1 })
        // Every version committed before the backup began is there, byte for byte; none that never was.
        const restoredVersions = await versions(copy)
        for (const [key, version] of before) expect(restoredVersions.get(key), key).toEqual(version)
        for (const [key, version] of restoredVersions) {
          expect(version.stored, key).toBe(version.recorded)
          expect(after.get(key), key).toEqual(version)
        }
        expect(restoredVersions.size).toBe(tables.find((entry) => entry.name === 'public.file_versions')!.rows)
        // The streaming turn was committed as running; the restored server closed it as interrupted.
        expect((await copy.query(`select status, error_code from turns`)).rows).toEqual([{ status: 'failed', error_code: 'turn.interrupted' }])

        // People sign in with their passwords; the token works; a file downloads as uploaded.
        expect(await signIn(second.url, 'alice', PASSWORD)).toBe(303)
        expect(await signIn(second.url, 'demo', 'demo-password-1')).toBe(303)
        const anyNote = [...before.keys()].find((key) => key.startsWith('alice:notes/'))!
        const name = anyNote.slice('alice:notes/'.length).split('@')[0]!
        const raw = await fetch(`${second.url}/api/v1/workspace/raw?uri=${encodeURIComponent(`kb://me/notes/${name}`)}`, { headers: auth })
        expect(raw.status).toBe(200)
        expect(Buffer.from(await raw.arrayBuffer()).toString()).toBe(files.find((file) => file.name === name)!.text)
      } finally {
        await copy.end()
        await live.end()
      }
    } finally {
      await provider.close()
    }
  }, 240_000)

  it.skipIf(process.getuid?.() !== 0)('as root, a data dir copied with plain cp -r starts: pgdata is handed back to postgres', async () => {
    const dataDir = newDataDir()
    expect((await runCli(['user', 'add', 'nora', '--password', 'a-long-password'], { KNOWAGENT_DATA_DIR: dataDir })).code).toBe(0) // started, then stopped
    const copied = newDataDirPath()
    expect(spawnSync('cp', ['-r', dataDir, copied]).status).toBe(0)
    expect(statSync(join(copied, 'pgdata', 'PG_VERSION')).uid).toBe(0) // cp -r as root: root's now

    const listed = await runCli(['user', 'list'], { KNOWAGENT_DATA_DIR: copied })
    expect(listed, listed.err).toMatchObject({ code: 0, out: expect.stringContaining('nora') })
    const postgresUid = statSync(join(dataDir, 'pgdata')).uid
    expect(statSync(join(copied, 'pgdata', 'PG_VERSION')).uid).toBe(postgresUid)

    // A file of a third user is not ours to take: the exact command to run instead.
    chownSync(join(copied, 'pgdata', 'PG_VERSION'), 4242, 4242)
    const refused = await runCli(['user', 'list'], { KNOWAGENT_DATA_DIR: copied })
    expect(refused.code).toBe(1)
    expect(refused.err).toContain(`run: chown -R postgres:postgres ${join(copied, 'pgdata')} && chmod 700 ${join(copied, 'pgdata')}`)
  }, 120_000)
})
