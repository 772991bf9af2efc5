// The operator CLI against a real embedded database in a temporary data dir, and `serve` as a
// real child process (start, sign-in page, SIGTERM).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main } from '../../src/cli.ts'

function runCli(args: string[], env: Record<string, string>) {
  const out: string[] = []
  const err: string[] = []
  return main(args, { out: (l) => out.push(l), err: (l) => err.push(l), env }).then((code) => ({ code, out: out.join('\n'), err: err.join('\n') }))
}

describe('knowagent CLI', () => {
  let dataDir: string
  let env: Record<string, string>
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'knowagent-cli-'))
    env = { KNOWAGENT_DATA_DIR: dataDir }
  })
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it.each([
    [[], 'no command given'],
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['user'], 'expected "user add|list|passwd|promote|demote|disable|enable|delete|unlock"'],
    [['user', 'add'], 'expected "user add <login>"'],
    [['token', 'create'], 'expected "token create <login>"'],
    [['import', 'x'], 'expected "import <folder> <kb-uri>"'],
    [['import', 'x', 'kb://me/'], 'import needs --user'],
    [['user', 'add', 'x', '--bogus'], "Unknown option '--bogus'"],
  ])('bad arguments %j print usage and exit 2', async (args, message) => {
    const result = await runCli(args, env)
    expect(result.code).toBe(2)
    expect(result.err).toContain(message)
    expect(result.err).toContain('usage: knowagent')
  })

  it('import of a missing folder or of a file says what is wrong and what to do, not a raw ENOENT', async () => {
    const missing = await runCli(['import', '/nonexistent/knowagent-import', 'kb://me/', '--user', 'alice'], env)
    expect(missing.code).toBe(1)
    expect(missing.err).toBe('knowagent: no such folder: /nonexistent/knowagent-import (give the path of a folder on this machine)')
    const file = join(dataDir, 'a-file.md')
    writeFileSync(file, 'x')
    const notFolder = await runCli(['import', file, 'kb://me/', '--user', 'alice'], env)
    expect(notFolder.code).toBe(1)
    expect(notFolder.err).toContain(`${file} is a file, not a folder`)
    expect(`${missing.err}${notFolder.err}`).not.toMatch(/ENOENT|ENOTDIR|errno/)
  })

  it('migrates, adds users, refuses duplicates and bad logins, creates tokens printing only the token', async () => {
    expect((await runCli(['migrate'], env)).code).toBe(0)
    const added = await runCli(['user', 'add', 'alice', '--password', 'a-long-password'], env)
    expect(added).toMatchObject({ code: 0, out: 'created user alice (admin)' }) // the first user is an admin
    const generated = await runCli(['user', 'add', 'bob'], env)
    expect(generated.code).toBe(0)
    expect(generated.out).toMatch(/^created user bob with password: \S{12,}$/)
    const duplicate = await runCli(['user', 'add', 'alice', '--password', 'a-long-password'], env)
    expect(duplicate).toMatchObject({ code: 1, err: 'knowagent: user "alice" already exists' })
    const badLogin = await runCli(['user', 'add', 'Not Valid', '--password', 'a-long-password'], env)
    expect(badLogin.code).toBe(1)
    expect(badLogin.err).toContain('invalid login')
    const shortPassword = await runCli(['user', 'add', 'carol', '--password', 'short'], env)
    expect(shortPassword.err).toContain('at least 8 characters')
    const token = await runCli(['token', 'create', 'alice'], env)
    expect(token.code).toBe(0)
    expect(token.out).toMatch(/^ka_[A-Za-z0-9_-]{43}$/)
    expect((await runCli(['token', 'create', 'nobody'], env)).err).toContain('no user "nobody"')
  })

  it('imports a folder recursively and idempotently, reporting added, updated, unchanged, skipped and failed', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'knowagent-import-'))
    mkdirSync(join(folder, 'sub'))
    mkdirSync(join(folder, '.git'))
    writeFileSync(join(folder, 'a.md'), '# A\n\nalpha')
    writeFileSync(join(folder, 'sub', 'b.txt'), 'bravo')
    writeFileSync(join(folder, '.git', 'config'), 'x')
    writeFileSync(join(folder, 'bin.dat'), Buffer.from([0, 159, 146, 150, 0, 1]))
    const first = await runCli(['import', folder, 'kb://me/notes/', '--user', 'alice'], env)
    expect(first.code).toBe(0)
    expect(first.out).toContain('added     kb://users/alice/notes/a.md')
    expect(first.out).toContain('added     kb://users/alice/notes/sub/b.txt')
    expect(first.out).toContain('skipped   .git (hidden file or directory)')
    expect(first.out).toMatch(/unparsed  kb:\/\/users\/alice\/notes\/bin\.dat \(raw bytes kept: .+\)/)
    expect(first.out).toContain('3 added, 0 updated, 0 unchanged, 1 skipped, 0 failed')

    writeFileSync(join(folder, 'a.md'), '# A\n\nalpha, revised')
    const second = await runCli(['import', folder, 'kb://users/alice/notes', '--user', 'alice'], env)
    expect(second.out).toContain('updated   kb://users/alice/notes/a.md')
    expect(second.out).toContain('0 added, 1 updated, 2 unchanged, 1 skipped, 0 failed')

    const outside = await runCli(['import', folder, 'kb://users/bob/', '--user', 'alice'], env)
    expect(outside.code).toBe(1)
    expect(outside.err).toContain("another user's workspace")
    rmSync(folder, { recursive: true, force: true })
  })

  it('two users importing the same folder each get their own tree; one user\'s token cannot read the other\'s files', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'knowagent-shared-'))
    writeFileSync(join(folder, 'same.md'), '# same content')
    await runCli(['user', 'add', 'ivy', '--password', 'a-long-password'], env)
    for (const login of ['alice', 'ivy']) {
      const result = await runCli(['import', folder, 'kb://me/shared/', '--user', login], env)
      expect(result.out).toContain(`added     kb://users/${login}/shared/same.md`)
    }
    const { openDatabase } = await import('../../src/effects/db/database.ts')
    const { findUserByLogin, findUserByApiToken } = await import('../../src/effects/auth/users.ts')
    const { resolveNode } = await import('../../src/effects/workspace/resolve.ts')
    const token = (await runCli(['token', 'create', 'ivy'], env)).out
    const { resolveSecret } = await import('../../src/effects/config/secret.ts')
    const database = await openDatabase({ databaseUrl: undefined, dataDir })
    try {
      const ivy = (await findUserByApiToken(database.db, { secret: resolveSecret({ secretFromEnv: undefined, dataDir }), token }))!
      expect(ivy.login).toBe('ivy')
      const alice = (await findUserByLogin(database.db, 'alice'))!
      await expect(resolveNode(database.db, { caller: ivy, uri: 'kb://users/alice/shared/same.md' })).rejects.toMatchObject({ _tag: 'OutsideScope' })
      const own = await resolveNode(database.db, { caller: ivy, uri: 'kb://me/shared/same.md' })
      const theirs = await resolveNode(database.db, { caller: alice, uri: 'kb://me/shared/same.md' })
      expect(own.node.id).not.toBe(theirs.node.id)
      expect(own.node.ownerId).toBe(ivy.id)
    } finally {
      await database.close()
    }
    rmSync(folder, { recursive: true, force: true })
  })

  it('the Trash commands of docs/operations.md, run as written: list, restore by URI, empty (which asks first)', async () => {
    const section = readFileSync(join(process.cwd(), 'docs', 'operations.md'), 'utf8').split('\n## Trash\n')[1]!.split('\n## ')[0]!
    const commands = /```sh\n([\s\S]*?)```/.exec(section)![1]!.trim().split('\n')
    expect(commands).toEqual(['npx knowagent trash list --user alice', 'npx knowagent trash restore kb://me/notes/report.md --user alice', 'npx knowagent trash empty --user alice --yes'])
    const run = (command: string) => runCli(command.split(' ').slice(2), env) // after "npx knowagent"; no argument has a space
    const folder = mkdtempSync(join(tmpdir(), 'knowagent-trash-'))
    writeFileSync(join(folder, 'report.md'), '# The report')
    writeFileSync(join(folder, 'draft.md'), 'a draft')
    expect((await runCli(['import', folder, 'kb://me/notes/', '--user', 'alice'], env)).code).toBe(0)
    rmSync(folder, { recursive: true, force: true })
    const { openDatabase } = await import('../../src/effects/db/database.ts')
    const { findUserByLogin } = await import('../../src/effects/auth/users.ts')
    const { getNode } = await import('../../src/effects/workspace/store.ts')
    const { moveToTrash } = await import('../../src/effects/workspace/trash.ts')
    const database = await openDatabase({ databaseUrl: undefined, dataDir })
    try {
      const alice = (await findUserByLogin(database.db, 'alice'))!
      for (const name of ['draft.md', 'report.md']) await moveToTrash(database.db, { owner: alice, node: await getNode(database.db, alice, ['notes', name]) })
    } finally {
      await database.close()
    }

    const listed = await run(commands[0]!)
    expect(listed.code).toBe(0)
    const lines = listed.out.split('\n')
    expect(lines[0]).toMatch(/^id +deleted \(UTC\) +purged on +what +from$/)
    expect(lines.slice(1).map((line) => line.split(/ {2,}/).slice(3))).toEqual([
      ['report.md', 'kb://users/alice/notes/'],
      ['draft.md', 'kb://users/alice/notes/'],
    ])
    expect(lines[1]).toMatch(/^[0-9a-f-]{36} {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}\d{4}-\d\d-\d\d {2}/)

    const unknown = await runCli(['trash', 'restore', '00000000-0000-4000-8000-000000000000', '--user', 'alice'], env)
    expect(unknown).toMatchObject({ code: 1, err: expect.stringContaining('nothing in your Trash has the id') })
    expect(await runCli(['trash', 'restore', 'kb://me/notes/never.md', '--user', 'alice'], env)).toMatchObject({ code: 1, err: expect.stringContaining("nothing in alice's Trash was deleted from kb://me/notes/never.md") })
    expect(await run(commands[1]!)).toMatchObject({ code: 0, out: 'restored kb://users/alice/notes/report.md' })

    const unconfirmed = await runCli(['trash', 'empty', '--user', 'alice'], env)
    expect(unconfirmed).toMatchObject({ code: 1, err: 'knowagent: nothing was deleted: there is no terminal to confirm on; pass --yes to empty it from a script' })
    expect((await run(commands[0]!)).out).toContain('draft.md')
    expect(await run(commands[2]!)).toMatchObject({ code: 0, out: 'deleted 1 item(s), 7 byte(s), for good' })
    expect(await run(commands[0]!)).toMatchObject({ code: 0, out: 'the Trash is empty' })
  })
})
