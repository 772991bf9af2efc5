// Accounts as an administrator manages them (docs/operations.md, Administration): roles, disabling,
// deleting, the list. One rule holds through every change, checked in the change's own transaction
// under one lock: **at least one enabled admin remains**. Disabling ends the account's sessions and
// revokes its API tokens (and so its running turns, through the credentials notice), so a disabled
// account holds no credential at all; enabling it again gives it none back. The CLI and the admin
// pages both call these.
import { sql } from 'kysely'
import type { Db, UserRole } from '../db/schema.ts'
import { useFormNonce } from './form-nonces.ts'
import { generatePassword, hashPassword, type ScryptCost } from './passwords.ts'
import { createUser, CREDENTIALS_CHANNEL, UserError, type User } from './users.ts'

/** No account has this login (the pages answer 404). */
export class NoSuchAccount extends UserError {
  constructor({ login }: { login: string }) {
    super(`no user "${login}"`)
  }
}

/** The change would leave no enabled admin (the pages answer 409). */
export class LastEnabledAdmin extends UserError {
  constructor({ login }: { login: string }) {
    super(`"${login}" is the last enabled admin: promote another account first`)
  }
}

/** The lock's class (first key): "acct" in ASCII; one key for the whole installation's roles. */
const ACCOUNTS_LOCK_CLASS = 0x61636374

export interface AccountSummary {
  readonly id: string
  readonly login: string
  readonly role: UserRole
  readonly createdAt: Date
  readonly lastSignInAt: Date | null
  readonly disabled: boolean
  /** Live (not revoked) API tokens. */
  readonly tokens: number
}

/** Every account, by login. */
export async function listAccounts(db: Db): Promise<AccountSummary[]> {
  const rows = await db
    .selectFrom('users')
    .select((eb) => [
      'users.id',
      'users.login',
      'users.role',
      'users.created_at',
      'users.last_sign_in_at',
      'users.disabled_at',
      eb
        .selectFrom('api_tokens')
        .select(eb.fn.countAll<string>().as('n'))
        .whereRef('api_tokens.user_id', '=', 'users.id')
        .where('api_tokens.revoked_at', 'is', null)
        .as('tokens'),
    ])
    .orderBy(sql`users.login collate "C"`)
    .execute()
  return rows.map((row) => ({
    id: row.id,
    login: row.login,
    role: row.role,
    createdAt: new Date(row.created_at),
    lastSignInAt: row.last_sign_in_at ? new Date(row.last_sign_in_at) : null,
    disabled: row.disabled_at !== null,
    tokens: Number(row.tokens ?? 0),
  }))
}

/** Runs `change` on the account `login` in a transaction that holds the accounts lock; refuses what would leave no enabled admin. */
async function changeAccount<T>(db: Db, login: string, change: (trx: Db, id: string) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${ACCOUNTS_LOCK_CLASS}::int4, 0)`.execute(trx)
    const row = await trx.selectFrom('users').select('id').where('login', '=', login).executeTakeFirst()
    if (!row) throw new NoSuchAccount({ login })
    const result = await change(trx, row.id)
    const admins = await trx
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('role', '=', 'admin')
      .where('disabled_at', 'is', null)
      .executeTakeFirstOrThrow()
    if (Number(admins.n) === 0) throw new LastEnabledAdmin({ login })
    return result
  })
}

/** Ends every session and revokes every token of the account, announcing it (running turns and streams end). */
async function endCredentials(trx: Db, userId: string): Promise<{ sessions: number; tokens: number }> {
  const sessions = await trx.deleteFrom('sessions').where('user_id', '=', userId).executeTakeFirst()
  const tokens = await trx.updateTable('api_tokens').set({ revoked_at: sql<Date>`now()` }).where('user_id', '=', userId).where('revoked_at', 'is', null).executeTakeFirst()
  await sql`select pg_notify(${CREDENTIALS_CHANNEL}, ${userId})`.execute(trx) // sent when the change commits
  return { sessions: Number(sessions.numDeletedRows), tokens: Number(tokens.numUpdatedRows) }
}

/**
 * Refuses at once, with the error the change itself would give, what would leave no enabled admin
 * (before asking to confirm a deletion); the change re-checks under the lock.
 */
export async function refuseIfLastEnabledAdmin(db: Db, { login }: { login: string }): Promise<void> {
  const row = await sql<{ found: boolean; others: string; counts: boolean }>`
    select exists (select 1 from users where login = ${login}) as found,
           exists (select 1 from users where login = ${login} and role = 'admin' and disabled_at is null) as counts,
           (select count(*) from users where login <> ${login} and role = 'admin' and disabled_at is null) as others`.execute(db)
  const { found, counts, others } = row.rows[0]!
  if (!found) throw new NoSuchAccount({ login })
  if (counts && Number(others) === 0) throw new LastEnabledAdmin({ login })
}

export async function setRole(db: Db, { login, role }: { login: string; role: UserRole }): Promise<void> {
  await changeAccount(db, login, async (trx, id) => {
    await trx.updateTable('users').set({ role }).where('id', '=', id).execute()
  })
}

/** Disables the account: it cannot sign in, and its sessions and tokens end now. */
export async function disableAccount(db: Db, { login }: { login: string }): Promise<{ sessions: number; tokens: number }> {
  return changeAccount(db, login, async (trx, id) => {
    await trx.updateTable('users').set({ disabled_at: sql<Date>`coalesce(disabled_at, now())` }).where('id', '=', id).execute()
    return endCredentials(trx, id)
  })
}

export async function enableAccount(db: Db, { login }: { login: string }): Promise<void> {
  await changeAccount(db, login, async (trx, id) => {
    await trx.updateTable('users').set({ disabled_at: null }).where('id', '=', id).execute()
  })
}

/** What deleting an account removes (shown before asking for confirmation). */
export interface AccountContents {
  /** Files, those in the Trash included (`trashed` of them). */
  readonly files: number
  readonly trashed?: number | undefined
  readonly versions: number
  readonly bytes: number
  readonly tokens: number
  /** Compile jobs, whatever their state. */
  readonly jobs: number
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/** What deleting the account removes, in words (the CLI's question and the page's confirmation). */
export function describeAccountContents(contents: AccountContents): string[] {
  return [
    `${count(contents.files, 'file')} with ${count(contents.versions, 'version')} (${formatBytes(contents.bytes)})${contents.trashed ? `, ${contents.trashed} of them in the Trash` : ''}`,
    count(contents.tokens, 'live API token'),
    count(contents.jobs, 'compile job'),
    'its sessions, settings and stored credentials',
  ]
}

/** Said before every deletion: nothing exports a workspace yet. */
/** What deleting an account offers first: the command that takes its whole workspace out as a zip of the original files. */
export function exportFirst(login: string): string {
  return `Export it first if it is worth keeping: knowagent export kb://users/${login}/ ${login}.zip --user ${login}`
}

export async function accountContents(db: Db, { login }: { login: string }): Promise<AccountContents> {
  const row = await sql<{ files: string; trashed: string; versions: string; bytes: string; tokens: string; jobs: string }>`
    select (select count(*) from all_nodes n where n.owner_id = u.id and n.kind = 'file') as files,
           (select count(*) from all_nodes n where n.owner_id = u.id and n.kind = 'file' and n.trash_id is not null) as trashed,
           (select count(*) from file_versions v join all_nodes n on n.id = v.node_id where n.owner_id = u.id) as versions,
           (select coalesce(sum(v.size), 0) from file_versions v join all_nodes n on n.id = v.node_id where n.owner_id = u.id) as bytes,
           (select count(*) from api_tokens t where t.user_id = u.id and t.revoked_at is null) as tokens,
           (select count(*) from jobs j where j.owner_id = u.id and j.kind = 'compile') as jobs
      from users u where u.login = ${login}`.execute(db)
  const found = row.rows[0]
  if (!found) throw new NoSuchAccount({ login })
  return { files: Number(found.files), trashed: Number(found.trashed), versions: Number(found.versions), bytes: Number(found.bytes), tokens: Number(found.tokens), jobs: Number(found.jobs) }
}

/**
 * Deletes the account and everything it owns (files with every version, tokens, sessions, jobs,
 * settings: the database's cascades), announcing the end of its credentials first.
 */
export async function deleteAccount(db: Db, { login }: { login: string }): Promise<void> {
  await changeAccount(db, login, async (trx, id) => {
    await endCredentials(trx, id)
    await trx.deleteFrom('users').where('id', '=', id).execute()
  })
}

/** Records a successful sign-in (shown on the admin's list of accounts). */
export async function recordSignIn(db: Db, userId: string): Promise<void> {
  await db.updateTable('users').set({ last_sign_in_at: sql<Date>`now()` }).where('id', '=', userId).execute()
}

/** A form's one-time value and whose form it is (src/effects/auth/form-nonces.ts). */
export interface FormUse {
  readonly userId: string
  readonly nonce: string
}

/**
 * Creates an account with `password`, or a generated one (returned: shown once, stored only as a
 * hash). With `form`, a form sent again creates nothing and answers undefined.
 */
export async function addAccount(
  db: Db,
  { login, role, password, form, hashCost }: { login: string; role: UserRole; password?: string | undefined; form?: FormUse | undefined; hashCost?: ScryptCost | undefined },
): Promise<{ user: User; password: string } | undefined> {
  const chosen = password ?? generatePassword()
  return db.transaction().execute(async (trx) => {
    if (form && !(await useFormNonce(trx, form))) return undefined
    const user = await createUser(trx, { login, password: chosen, role, ...(hashCost ? { hashCost } : {}) })
    return { user, password: chosen }
  })
}

export interface PasswordReset {
  /** Generated; shown once. */
  readonly password: string
  readonly sessions: number
  readonly tokens: number
}

/**
 * Gives the account a generated password and ends its sessions and API tokens (announced: its
 * running turns and streams end). With `form`, a form sent again changes nothing and answers undefined.
 */
export async function resetPassword(db: Db, { login, form, hashCost }: { login: string; form?: FormUse | undefined; hashCost?: ScryptCost | undefined }): Promise<PasswordReset | undefined> {
  const password = generatePassword()
  const hash = await hashPassword(password, hashCost)
  return db.transaction().execute(async (trx) => {
    if (form && !(await useFormNonce(trx, form))) return undefined
    const row = await trx.updateTable('users').set({ password_hash: hash }).where('login', '=', login).returning('id').executeTakeFirst()
    if (!row) throw new NoSuchAccount({ login })
    return { password, ...(await endCredentials(trx, row.id)) }
  })
}
