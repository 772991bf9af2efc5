// `--help` on every command, `help`, `--version` and unknown flags. Issue 33 item 14: `knowagent
// <command> --help` exited 2 with "Unknown option '--help'", and `--version` was an unknown command.
// The top-level help, the version, the long-running commands' help, a refused flag and an unknown
// command go through bin/knowagent.mjs as a real child process (its exit code, its streams); the
// other commands' `--help` and refusals run the same entry point in this process (`main` with
// captured output: the parser and the presenter are the same; a child each cost ~0.7 s of node
// start-up, 20 s of the suite).
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'

const BIN = fileURLToPath(new URL('../../bin/knowagent.mjs', import.meta.url))
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

// Help must not open (or start) a database: the data dir has to stay empty.
const dataDir = mkdtempSync(join(tmpdir(), 'knowagent-help-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

function knowagent(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, KNOWAGENT_DATA_DIR: dataDir, DATABASE_URL: '', PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000, // a `serve --help` that started the server instead is killed, and fails below
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

/** `main` in this process, with the child's environment and its output captured as the child's streams would carry it. */
async function knowagentHere(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await main(args, {
    out: (line) => (stdout += `${line}\n`),
    err: (line) => (stderr += `${line}\n`),
    env: { ...process.env, KNOWAGENT_DATA_DIR: dataDir, DATABASE_URL: '', PORT: '0' },
  })
  return { code, stdout, stderr }
}

/** Commands whose bare form runs for ever (a server, a worker): their help is asked of a real child, which a timeout kills. */
const LONG_RUNNING = new Set(['serve', 'worker'])

/** Every command and subcommand, with the flags its usage must name. */
const COMMANDS: ReadonlyArray<readonly [command: string, flags: ReadonlyArray<string>]> = [
  ['serve', []],
  ['worker', []],
  ['migrate', []],
  ['user', []],
  ['user add', ['--password', '--admin']],
  ['user list', []],
  ['user promote', []],
  ['user demote', []],
  ['user disable', []],
  ['user enable', []],
  ['user delete', ['--yes']],
  ['user passwd', ['--password', '--keep-tokens']],
  ['user unlock', []],
  ['token', []],
  ['token create', ['--label']],
  ['token list', []],
  ['token revoke', ['--all']],
  ['retrieval', []],
  ['retrieval show', []],
  ['retrieval set', []],
  ['retrieval unset', []],
  ['import', ['--user']],
  ['export', ['--user']],
  ['trash', []],
  ['trash list', ['--user']],
  ['trash restore', ['--user']],
  ['trash empty', ['--user', '--yes']],
]

describe('knowagent --help', () => {
  it.each([['--help'], ['-h'], ['help']])('%s prints the usage of every command on stdout and exits 0', async (flag) => {
    const run = await knowagent([flag])
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toMatch(/^usage: knowagent /)
    for (const [command] of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'))
    expect(run.stdout).toContain('--version')
  })

  it.each(COMMANDS)('knowagent %s --help prints its own usage naming its flags and exits 0', async (command, flags) => {
    const args = [...command.split(' '), '--help']
    const run = LONG_RUNNING.has(command) ? await knowagent(args) : await knowagentHere(args)
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toMatch(new RegExp(`^usage: knowagent ${command}\\b`))
    for (const flag of [...flags, '--help']) expect(run.stdout).toContain(flag)
    expect(readdirSync(dataDir)).toEqual([])
  })

  it('a group lists its subcommands; `help <command>` is `<command> --help`', async () => {
    const token = await knowagentHere(['token', '--help'])
    for (const action of ['create', 'list', 'revoke']) expect(token.stdout).toMatch(new RegExp(`^  ${action}\\b`, 'm'))
    const viaHelp = await knowagentHere(['help', 'user', 'passwd'])
    expect(viaHelp).toEqual(await knowagentHere(['user', 'passwd', '--help']))
    expect(viaHelp.code).toBe(0)
  })
})

describe('knowagent --version', () => {
  it("prints package.json's version and exits 0", async () => {
    expect(await knowagent(['--version'])).toEqual({ code: 0, stdout: `knowagent ${VERSION}\n`, stderr: '' })
  })
})

describe('bad arguments', () => {
  it.each([
    [['user', 'add', 'alice', '--bogus'], '--bogus', 'user add'],
    [['serve', '--bogus'], '--bogus', 'serve'],
    [['token', 'revoke', 'alice', '--al'], '--al', 'token revoke'],
  ])('%j exits 2 naming the flag, with that command\'s usage, on stderr only', async (args, flag, command) => {
    const run = command === 'serve' ? await knowagent(args) : await knowagentHere(args)
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain(`Unknown option '${flag}'`)
    if (flag === '--al') expect(run.stderr).toContain('did you mean --all?')
    expect(run.stderr).toMatch(new RegExp(`^usage: knowagent ${command}\\b`, 'm'))
  })

  it('extra arguments are refused without being repeated (one may be a secret typed in the wrong place)', async () => {
    const run = await knowagentHere(['user', 'add', 'alice', 'a-password-in-the-wrong-place'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('knowagent: too many arguments: expected "user add <login>"')
    expect(run.stderr).not.toContain('a-password-in-the-wrong-place')
  })

  it('an unknown command exits 2 naming it, with the closest command', async () => {
    const run = await knowagent(['serv'])
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('unknown command "serv" (did you mean serve?)')
  })
})
