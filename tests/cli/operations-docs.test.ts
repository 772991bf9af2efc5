// docs/operations.md's Backup, Restore and Export commands, run as written: every ```sh block of
// those sections goes through bash from the checkout's root (as an operator runs them), with HOME
// and the data dir pointing into a temporary folder. A line that runs `npm start` must bring the
// server up on what was restored (the demo account signs in there with its password), and stops
// with SIGTERM. The Scheduled backups section's config example must load. The docs cannot
// drift from the commands without this failing.
import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeConfigFile } from '../../src/effects/config/app-config.ts'
import { newDataDir, postgresProcessesFor, runCli, stopServeProcessesAfterEach } from '../support/serve-process.ts'
import { signIn } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

stopServeProcessesAfterEach()

/** The fenced blocks of `lang` in the section under the heading `title` (up to the next heading of any level). */
export function blocksOf(markdown: string, title: string, lang: string): string[] {
  const lines = markdown.split('\n')
  const start = lines.findIndex((line) => /^#{2,4} /.test(line) && line.replace(/^#+ /, '') === title)
  if (start === -1) throw new Error(`docs/operations.md has no section "${title}"`)
  const end = lines.findIndex((line, i) => i > start && /^#{2,4} /.test(line))
  const section = lines.slice(start + 1, end === -1 ? undefined : end).join('\n')
  return [...section.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```', 'gm'))].map((match) => match[1]!)
}

const operations = readFileSync('docs/operations.md', 'utf8')

function run(command: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', command], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk) => (out += chunk))
  child.stderr.on('data', (chunk) => (err += chunk))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })))
}

/** A line that starts the server: it must come up, answer, and stop on SIGTERM (its whole process group). */
async function runServer(command: string, env: NodeJS.ProcessEnv, check: (url: string) => Promise<void>): Promise<void> {
  const child = spawn('bash', ['-c', command], { env: { ...env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let err = ''
  child.stderr.on('data', (chunk) => (err += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })))
  try {
    await waitUntil(() => /running at http/.test(err) || child.exitCode !== null, `"${command}" to start`, { timeoutMs: 120_000 })
    const url = /running at (http:\/\/\S+)/.exec(err)?.[1]
    expect(url, err).toBeDefined()
    await check(url!)
  } finally {
    process.kill(-child.pid!, 'SIGTERM')
  }
  // bash itself dies of the signal; the server under it shuts down (its PostgreSQL stops: checked by the caller).
  expect([{ code: 0, signal: null }, { code: null, signal: 'SIGTERM' }], err).toContainEqual(await exited)
  expect(err).toContain('stopping (SIGTERM)')
}

describe('docs/operations.md', () => {
  it('the Backup, Export and Restore commands run as written, and the restored data dir serves', async () => {
    const home = mkdtempSync(join(tmpdir(), 'knowagent-docs-home-'))
    // The restore's data dir is the docs' own, beside the checkout's .knowagent: never one of a person's.
    const restored = join(process.cwd(), '.knowagent-restored')
    expect(existsSync(restored), `${restored} exists: move it away to run this test`).toBe(false)
    try {
      // A data dir with the demo account (its database started and stopped again: the commands work
      // with or without a server; beside a running one is tests/cli/backup-restore.test.ts).
      const dataDir = newDataDir()
      expect((await runCli(['user', 'add', 'demo', '--password', 'demo-password-1'], { KNOWAGENT_DATA_DIR: dataDir })).code).toBe(0)
      const env = { ...process.env, HOME: home, KNOWAGENT_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', npm_config_update_notifier: 'false' }

      for (const section of ['Backup', 'Export']) {
        const blocks = blocksOf(operations, section, 'sh')
        expect(blocks.length, section).toBeGreaterThan(0)
        for (const block of blocks) {
          const result = await run(block, env)
          expect(result, `${section}:\n${block}\n${result.err}`).toMatchObject({ code: 0 })
        }
      }
      expect(existsSync(join(home, 'knowagent-backups', 'knowagent.backup'))).toBe(true)
      expect(existsSync(join(home, 'knowagent-backups', 'demo-workspace.zip'))).toBe(true)

      const restore = blocksOf(operations, 'Restore', 'sh')
      expect(restore).toHaveLength(1)
      let served = false
      for (const line of restore[0]!.split('\n').filter((line) => line.trim() !== '')) {
        if (/\bnpm start\b/.test(line)) {
          await runServer(line, env, async (url) => {
            expect(await signIn({ url }, 'demo', 'demo-password-1')).toMatchObject({ cookie: expect.stringMatching(/^ka_session=/) })
            served = true
          })
        } else {
          const result = await run(line, env)
          expect(result, `${line}\n${result.err}`).toMatchObject({ code: 0 })
        }
      }
      expect(served).toBe(true)
      await waitUntil(() => postgresProcessesFor(restored).length === 0, 'the restored server stopped its PostgreSQL')
    } finally {
      for (const pid of postgresProcessesFor(restored)) process.kill(pid, 'SIGKILL')
      rmSync(restored, { recursive: true, force: true })
      rmSync(home, { recursive: true, force: true })
    }
  }, 300_000)

  it("the Scheduled backups section's config example loads", () => {
    const [example] = blocksOf(operations, 'Scheduled backups', 'json')
    expect(decodeConfigFile({ json: JSON.parse(example!), source: 'docs/operations.md' }).backup).toMatchObject({ schedule: expect.any(String), keep: expect.any(Number) })
  })
})
