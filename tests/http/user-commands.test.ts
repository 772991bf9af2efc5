// `knowagent user add|list|promote|demote|disable|enable|delete` (issue 36) as real child
// processes on a running server's database: what each prints, that disabling ends the user's
// sessions and tokens at the server's next request, that delete says what goes and asks for the
// login at a terminal (a pseudo-terminal from util-linux `script`), refuses without one unless
// --yes, and that the last enabled admin stays (exit 1 with the reason).
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findUserByLogin } from '../../src/effects/auth/users.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

/** Each run is a fresh Node process (~1.5 s on the 2-core machine): room for a test's several runs. */
const CLI_TEST_TIMEOUT = 90_000
const BIN = fileURLToPath(new URL('../../bin/knowagent.mjs', import.meta.url))

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server?.close()
})

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

function collect(child: ReturnType<typeof spawn>): Promise<Run> {
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => (stdout += chunk))
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

const env = () => ({ ...process.env, DATABASE_URL: server.database.url, KNOWAGENT_SECRET: TEST_SECRET })

/** `knowagent …` with stdin a pipe (not a terminal) that carries `input`. */
function knowagent(args: string[], input = ''): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { env: env(), stdio: ['pipe', 'pipe', 'pipe'], timeout: 30_000 })
  child.stdin.end(input)
  return collect(child)
}

/** `knowagent …` on a pseudo-terminal, typing `typed` and Enter. */
function knowagentAtTerminal(args: string[], typed: string): Promise<Run> {
  const command = [process.execPath, BIN, ...args].map((word) => `'${word}'`).join(' ')
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: env(), stdio: ['pipe', 'pipe', 'pipe'], timeout: 30_000 })
  child.stdin.write(`${typed}\n`)
  return collect(child)
}

const sessionWorks = async (cookie: string) => (await fetch(`${server.url}/workspace`, { redirect: 'manual', headers: { cookie } })).status === 200
const tokenWorks = async (token: string) => (await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })).status === 200

describe('knowagent user …', () => {
  it('add [--admin], list (never a secret), promote and demote', async () => {
    expect(await knowagent(['user', 'add', 'root', '--password', 'a-long-password'])).toMatchObject({ code: 0, stdout: 'created user root (admin)\n' }) // the first user
    const member = await knowagent(['user', 'add', 'pia'])
    expect(member.code).toBe(0)
    expect(member.stdout).toMatch(/^created user pia with password: \S{12,}\n$/)
    const password = member.stdout.trim().split(' ').at(-1)!
    expect(await knowagent(['user', 'add', 'quin', '--admin', '--password', 'a-long-password'])).toMatchObject({ code: 0, stdout: 'created user quin (admin)\n' })
    await signIn(server, 'pia', password)

    const list = await knowagent(['user', 'list'])
    expect(list.code).toBe(0)
    const lines = list.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^login\s+role\s+created \(UTC\)\s+last sign-in\s+disabled\s+tokens$/)
    expect(lines.find((line) => line.startsWith('pia '))).toMatch(/^pia\s+member\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+no\s+0$/)
    expect(lines.find((line) => line.startsWith('quin '))).toMatch(/^quin\s+admin\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+-\s+no\s+0$/)
    expect(list.stdout).not.toContain(password)

    expect(await knowagent(['user', 'promote', 'pia'])).toMatchObject({ code: 0, stdout: 'pia is now an admin.\n' })
    expect(await knowagent(['user', 'demote', 'pia'])).toMatchObject({ code: 0, stdout: 'pia is now a member.\n' })
    expect((await findUserByLogin(server.database.db, 'pia'))?.role).toBe('member')
    expect(await knowagent(['user', 'promote', 'nobody'])).toMatchObject({ code: 1, stderr: 'knowagent: no user "nobody"\n' })
  }, CLI_TEST_TIMEOUT)

  it('disable says how many sessions and tokens it ended, and they stop at the next request; enable lets the user sign in again', async () => {
    const rae = await addUserWithToken(server, 'rae')
    const { cookie } = await signIn(server, 'rae', rae.password)
    expect(await sessionWorks(cookie)).toBe(true)
    const disabled = await knowagent(['user', 'disable', 'rae'])
    expect(disabled).toMatchObject({
      code: 0,
      stdout: 'rae is disabled: 1 browser session(s) ended, 1 API token(s) revoked; signing in is refused until `knowagent user enable rae`.\n',
    })
    expect(await sessionWorks(cookie)).toBe(false)
    expect(await tokenWorks(rae.token)).toBe(false)
    expect((await knowagent(['user', 'list'])).stdout).toMatch(/^rae\s+member\s+\S+ \S+\s+\S+ \S+\s+yes\s+0$/m)
    await expect(signIn(server, 'rae', rae.password)).rejects.toThrow('403')
    expect(await knowagent(['user', 'enable', 'rae'])).toMatchObject({ code: 0, stdout: 'rae is enabled: they can sign in again (no session or token comes back).\n' })
    await signIn(server, 'rae', rae.password)
  }, CLI_TEST_TIMEOUT)

  it('delete says what goes and that no export exists, refuses without a terminal unless --yes, and asks for the login at one', async () => {
    const sam = await addUserWithToken(server, 'sam')
    await putText(server.database.db, { owner: sam.user, segments: ['a.md'], text: 'twelve bytes' })
    const noTerminal = await knowagent(['user', 'delete', 'sam'], 'sam\n')
    expect(noTerminal.code).toBe(1)
    expect(noTerminal.stdout).toBe(
      [
        'Deleting sam removes, for good:',
        '  1 file with 1 version (12 B)',
        '  1 live API token',
        '  0 compile jobs',
        '  its sessions, settings and stored credentials',
        'Export it first if it is worth keeping: knowagent export kb://users/sam/ sam.zip --user sam',
        '',
      ].join('\n'),
    )
    expect(noTerminal.stderr).toBe('knowagent: nothing was deleted: there is no terminal to confirm on; pass --yes to delete from a script\n')
    expect(await findUserByLogin(server.database.db, 'sam')).toBeDefined()

    const mistyped = await knowagentAtTerminal(['user', 'delete', 'sam'], 'sa')
    expect(mistyped.code).toBe(1)
    expect(mistyped.stdout).toContain('Type the login (sam) to delete it: ')
    expect(mistyped.stdout).toContain('knowagent: nothing was deleted: "sam" was not typed')
    expect(await findUserByLogin(server.database.db, 'sam')).toBeDefined()

    const typed = await knowagentAtTerminal(['user', 'delete', 'sam'], 'sam')
    expect(typed.code).toBe(0)
    expect(typed.stdout).toContain('deleted sam.')
    expect(await findUserByLogin(server.database.db, 'sam')).toBeUndefined()
    expect(await tokenWorks(sam.token)).toBe(false)

    await addUserWithToken(server, 'tia')
    const scripted = await knowagent(['user', 'delete', 'tia', '--yes'])
    expect(scripted.code).toBe(0)
    expect(scripted.stdout).toMatch(/^Deleting tia removes, for good:\n[^]*\ndeleted tia\.\n$/)
    expect(await findUserByLogin(server.database.db, 'tia')).toBeUndefined()
  }, CLI_TEST_TIMEOUT)

  it('keeps one enabled admin: demote, disable and delete of the last one exit 1 with the reason, changing nothing', async () => {
    expect((await knowagent(['user', 'demote', 'quin'])).code).toBe(0) // root stays
    const reason = 'knowagent: "root" is the last enabled admin: promote another account first\n'
    expect(await knowagent(['user', 'demote', 'root'])).toMatchObject({ code: 1, stdout: '', stderr: reason })
    expect(await knowagent(['user', 'disable', 'root'])).toMatchObject({ code: 1, stdout: '', stderr: reason })
    expect(await knowagent(['user', 'delete', 'root', '--yes'])).toMatchObject({ code: 1, stdout: '', stderr: reason }) // refused before it asks
    expect(await findUserByLogin(server.database.db, 'root')).toMatchObject({ role: 'admin' })
  }, CLI_TEST_TIMEOUT)
})
