// Accounts as an administrator manages them: the first user is an admin whatever was asked; at
// least one enabled admin always remains (demote, disable, delete of the last one are refused, and
// nothing changes); disabling ends the account's sessions and revokes its tokens, announced on the
// credentials channel; the list shows role, last sign-in, disabled and live tokens.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accountContents, deleteAccount, disableAccount, enableAccount, listAccounts, recordSignIn, setRole } from '../../src/effects/auth/accounts.ts'
import { createApiTokenFor, createSession, createUser, CREDENTIALS_CHANNEL, findUserByApiToken } from '../../src/effects/auth/users.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const SECRET = 'accounts-test-secret-0123456789'

describe('accounts', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openTestDatabase('postgres')
  })
  afterAll(() => database?.close())
  const add = (login: string, role?: 'admin' | 'member') => createUser(database.db, { login, password: `password-${login}`, hashCost: TEST_PASSWORD_COST, role })
  const roles = async () => Object.fromEntries((await listAccounts(database.db)).map((account) => [account.login, `${account.role}${account.disabled ? ' (disabled)' : ''}`]))

  it('makes the first user an admin, whatever was asked, and the next ones what was asked', async () => {
    expect((await add('ada', 'member')).role).toBe('admin')
    expect((await add('bo')).role).toBe('member')
    expect((await add('cy', 'admin')).role).toBe('admin')
    expect(await roles()).toEqual({ ada: 'admin', bo: 'member', cy: 'admin' })
  })

  it('keeps one enabled admin: the last cannot be demoted, disabled or deleted, and a refused change changes nothing', async () => {
    await setRole(database.db, { login: 'cy', role: 'member' })
    await expect(setRole(database.db, { login: 'ada', role: 'member' })).rejects.toThrow('"ada" is the last enabled admin')
    await expect(disableAccount(database.db, { login: 'ada' })).rejects.toThrow('last enabled admin')
    await expect(deleteAccount(database.db, { login: 'ada' })).rejects.toThrow('last enabled admin')
    expect(await roles()).toEqual({ ada: 'admin', bo: 'member', cy: 'member' })
    await setRole(database.db, { login: 'bo', role: 'admin' })
    await disableAccount(database.db, { login: 'ada' })
    // a disabled admin does not count: bo is now the last enabled one
    await expect(setRole(database.db, { login: 'bo', role: 'member' })).rejects.toThrow('"bo" is the last enabled admin')
    await enableAccount(database.db, { login: 'ada' })
    expect(await roles()).toEqual({ ada: 'admin', bo: 'admin', cy: 'member' })
  })

  it('disabling ends the sessions and revokes the tokens, announced on the credentials channel; enabling gives none back', async () => {
    const cy = (await listAccounts(database.db)).find((account) => account.login === 'cy')!
    const token = await createApiTokenFor(database.db, { secret: SECRET, login: 'cy' })
    await createSession(database.db, { secret: SECRET, userId: cy.id, ttlHours: 1 })
    const listener = new pg.Client({ connectionString: database.url })
    await listener.connect()
    const notices: string[] = []
    listener.on('notification', (message) => notices.push(message.payload ?? ''))
    await listener.query(`listen ${CREDENTIALS_CHANNEL}`)
    try {
      expect(await disableAccount(database.db, { login: 'cy' })).toEqual({ sessions: 1, tokens: 1 })
      await expect.poll(() => notices).toContain(cy.id)
    } finally {
      await listener.end()
    }
    expect(await findUserByApiToken(database.db, { secret: SECRET, token })).toBeUndefined()
    expect((await listAccounts(database.db)).find((account) => account.login === 'cy')).toMatchObject({ disabled: true, tokens: 0 })
    await enableAccount(database.db, { login: 'cy' })
    expect(await findUserByApiToken(database.db, { secret: SECRET, token })).toBeUndefined()
  })

  it('records the last sign-in, says what an account holds, and deletes it with everything it owns', async () => {
    const dee = await add('dee')
    await putText(database.db, { owner: dee, segments: ['notes', 'a.md'], text: 'one' })
    await putText(database.db, { owner: dee, segments: ['notes', 'a.md'], text: 'two' })
    await createApiTokenFor(database.db, { secret: SECRET, login: 'dee' })
    await recordSignIn(database.db, dee.id)
    expect((await listAccounts(database.db)).find((account) => account.login === 'dee')!.lastSignInAt).toBeInstanceOf(Date)
    expect(await accountContents(database.db, { login: 'dee' })).toEqual({ files: 1, trashed: 0, versions: 2, bytes: 6, tokens: 1, jobs: 0 })
    await deleteAccount(database.db, { login: 'dee' })
    expect((await listAccounts(database.db)).map((account) => account.login)).not.toContain('dee')
    expect(await database.db.selectFrom('nodes').select('id').where('owner_id', '=', dee.id).execute()).toEqual([])
  })
})
