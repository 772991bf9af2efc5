// Users, sessions and API tokens (plain repository functions).
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { preparedQuery } from '../db/prepared-query.ts'
import type { Db, UserRole } from '../db/schema.ts'
import { ensureRoot } from '../workspace/store.ts'
import type { Owner } from '../db/schema.ts'
import { validateLogin } from '../workspace/uri.ts'
import { hashPassword, type ScryptCost, validatePassword, verifyPassword } from './passwords.ts'
import { generateApiToken, generateOpaqueToken, hashToken } from './tokens.ts'

export interface User extends Owner {
  readonly createdAt: Date
  /** `admin` reaches the administration pages (src/http/admin-guard.ts); `member` does not. */
  readonly role: UserRole
}

export class UserError extends Error {
  override readonly name = 'UserError'
}

/** The right password for a disabled account: it cannot sign in. */
export class AccountDisabled extends Error {
  override readonly name = 'AccountDisabled'
  constructor({ login }: { login: string }) {
    super(`the account "${login}" is disabled; ask an administrator`)
  }
}

export async function createUser(
  db: Db,
  {
    login,
    password,
    hashCost,
    role = 'member',
  }: {
    login: string
    password: string | undefined
    /** Ignored for the first user, who is always an admin (someone must be able to administer). */
    role?: UserRole
    /** The password hash's scrypt cost (default DEFAULT_SCRYPT_COST); the tests' accounts take a cheap one. */
    hashCost?: ScryptCost
  },
): Promise<User> {
  const loginReason = validateLogin(login)
  if (loginReason) throw new UserError(`invalid login "${login}": ${loginReason}`)
  if (password !== undefined) {
    const reason = validatePassword(password)
    if (reason) throw new UserError(reason)
  }
  const existing = await findUserByLogin(db, login)
  if (existing) throw new UserError(`user "${login}" already exists`)
  const id = randomUUID()
  const passwordHash = password === undefined ? null : await hashPassword(password, hashCost)
  // The first user of an installation is an admin, whatever was asked (decided in the insert itself).
  await sql`insert into users (id, login, password_hash, role)
    values (${id}, ${login}, ${passwordHash}, case when exists (select 1 from users) then ${role}::text else 'admin' end)`.execute(db)
  const user = { id, login }
  await ensureRoot(db, { id: user.id, login })
  return (await findUserByLogin(db, login))!
}

export interface PasswordChange {
  readonly sessionsEnded: number
  /** Tokens that still work (all of them unless `revokeTokens`). */
  readonly tokensValid: number
  readonly tokensRevoked: number
}

/**
 * The change feed's channel on which a user's sessions or tokens ended (payload: the user's id):
 * signed out, password changed, token revoked — from any process, the CLI's included. Live job
 * streams of that user re-check their own credential at once (compile.routes.ts).
 */
export const CREDENTIALS_CHANNEL = 'knowagent_credentials'

async function credentialsEnded(db: Db, userId: string): Promise<void> {
  await sql`select pg_notify(${CREDENTIALS_CHANNEL}, ${userId})`.execute(db)
}

/**
 * `work` and its notice in one transaction (the caller's, or one of its own): the notice is sent
 * when the change commits, and never for a change that did not.
 */
function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work)
}

/** Sets a password and signs out every session of the user; API tokens stay valid unless `revokeTokens`. */
export async function setPassword(
  db: Db,
  { login, password, revokeTokens = false }: { login: string; password: string; revokeTokens?: boolean },
): Promise<PasswordChange> {
  const reason = validatePassword(password)
  if (reason) throw new UserError(reason)
  const hash = await hashPassword(password)
  return db.transaction().execute(async (trx) => {
    const user = await trx.updateTable('users').set({ password_hash: hash }).where('login', '=', login).returning('id').executeTakeFirst()
    if (!user) throw new UserError(`no user "${login}"`)
    const sessions = await trx.deleteFrom('sessions').where('user_id', '=', user.id).executeTakeFirst()
    const revoked = revokeTokens ? await revokeTokensWhere(trx, { userId: user.id }) : 0
    if (Number(sessions.numDeletedRows) > 0) await credentialsEnded(trx, user.id) // sent when this transaction commits
    const valid = await trx
      .selectFrom('api_tokens')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('user_id', '=', user.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow()
    return { sessionsEnded: Number(sessions.numDeletedRows), tokensValid: Number(valid.n), tokensRevoked: revoked }
  })
}

/**
 * The signed-in user's own password change: `current` must be right (else UserError, nothing
 * changes); every other session of the user ends, the one that asked (`keepSessionHash`) stays. API
 * tokens stay valid (the account page lists them).
 */
export async function changeOwnPassword(
  db: Db,
  { userId, current, next, keepSessionHash, hashCost }: { userId: string; current: string; next: string; keepSessionHash: string; hashCost?: ScryptCost | undefined },
): Promise<{ sessionsEnded: number }> {
  const reason = validatePassword(next) // before the current one is checked: a refused new password is no guess
  if (reason) throw new UserError(reason)
  const row = await db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst()
  if (!row || !(await verifyPassword(current, row.password_hash))) throw new WrongPassword()
  const hash = await hashPassword(next, hashCost)
  return inTransaction(db, async (trx) => {
    await trx.updateTable('users').set({ password_hash: hash }).where('id', '=', userId).execute()
    const ended = await trx.deleteFrom('sessions').where('user_id', '=', userId).where('id_hash', '<>', keepSessionHash).executeTakeFirst()
    const sessionsEnded = Number(ended.numDeletedRows)
    if (sessionsEnded > 0) await credentialsEnded(trx, userId)
    return { sessionsEnded }
  })
}

/** The current password given to change it was wrong. */
export class WrongPassword extends UserError {
  constructor() {
    super('the current password is not right; nothing was changed')
  }
}

/** Signs the user out everywhere: every session ends, the caller's own included. API tokens stay. */
export async function endAllSessions(db: Db, { userId }: { userId: string }): Promise<number> {
  return inTransaction(db, async (trx) => {
    const ended = Number((await trx.deleteFrom('sessions').where('user_id', '=', userId).executeTakeFirst()).numDeletedRows)
    if (ended > 0) await credentialsEnded(trx, userId)
    return ended
  })
}

export async function findUserByLogin(db: Db, login: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').select(['id', 'login', 'created_at', 'role']).where('login', '=', login).executeTakeFirst()
  return row ? { id: row.id, login: row.login, createdAt: new Date(row.created_at), role: row.role } : undefined
}

export async function countUsers(db: Db): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function authenticatePassword(db: Db, { login, password }: { login: string; password: string }): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('login', '=', login).executeTakeFirst()
  // Verify against a dummy hash when the user is unknown, so timing does not reveal logins.
  const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH)
  if (!row || !ok) return undefined
  // A disabled account is told so only once its password was right (nobody else learns it exists).
  if (row.disabled_at !== null) throw new AccountDisabled({ login: row.login })
  return { id: row.id, login: row.login, createdAt: new Date(row.created_at), role: row.role }
}
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

export async function createApiTokenFor(db: Db, { secret, login, label }: { secret: string; login: string; label?: string }): Promise<string> {
  const user = await findUserByLogin(db, login)
  if (!user) throw new UserError(`no user "${login}"`)
  return (await createApiToken(db, { secret, userId: user.id, label })).token
}

export const MAX_TOKEN_LABEL_CHARS = 100

export async function createApiToken(
  db: Db,
  { secret, userId, label }: { secret: string; userId: string; label?: string | undefined },
): Promise<{ id: string; token: string }> {
  const created = await createApiTokenOnce(db, { secret, userId, label, formNonce: undefined })
  if (!created) throw new Error('unreachable: a token without a form nonce is always created')
  return created
}

/**
 * `createApiToken` for a form that may be sent twice: with `formNonce`, a second request carrying the
 * same value creates nothing and answers undefined (the first token was shown once; it is not shown again).
 */
export async function createApiTokenOnce(
  db: Db,
  { secret, userId, label, formNonce }: { secret: string; userId: string; label?: string | undefined; formNonce: string | undefined },
): Promise<{ id: string; token: string } | undefined> {
  const trimmed = label?.trim()
  if (trimmed && trimmed.length > MAX_TOKEN_LABEL_CHARS) throw new UserError(`a token label is at most ${MAX_TOKEN_LABEL_CHARS} characters`)
  const token = generateApiToken()
  const id = randomUUID()
  const inserted = await db
    .insertInto('api_tokens')
    .values({ id, user_id: userId, token_hash: hashToken({ secret, token }), label: trimmed || null, form_nonce: formNonce ?? null })
    .onConflict((oc) => oc.columns(['user_id', 'form_nonce']).where('form_nonce', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst()
  return inserted ? { id, token } : undefined
}

/** What is shown of a token: never the token itself (only its keyed hash is stored anyway). */
export interface ApiTokenInfo {
  readonly id: string
  readonly label: string | null
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
  readonly revokedAt: Date | null
}

export async function listApiTokens(db: Db, { userId, includeRevoked = true }: { userId: string; includeRevoked?: boolean }): Promise<ApiTokenInfo[]> {
  let query = db
    .selectFrom('api_tokens')
    .select(['id', 'label', 'created_at', 'last_used_at', 'revoked_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
  if (!includeRevoked) query = query.where('revoked_at', 'is', null)
  const rows = await query.execute()
  return rows.map((row) => ({
    id: row.id,
    label: row.label,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
    revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
  }))
}

async function revokeTokensWhere(db: Db, { userId, tokenId }: { userId: string; tokenId?: string }): Promise<number> {
  return inTransaction(db, async (trx) => {
    let query = trx.updateTable('api_tokens').set({ revoked_at: sql<Date>`now()` }).where('user_id', '=', userId).where('revoked_at', 'is', null)
    if (tokenId !== undefined) query = query.where('id', '=', tokenId)
    const revoked = Number((await query.executeTakeFirst()).numUpdatedRows)
    if (revoked > 0) await credentialsEnded(trx, userId)
    return revoked
  })
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Revokes one of the user's tokens (or all of them): effective on the next request in every
 * process, since each request looks its token up in the database. Returns how many were revoked.
 */
export async function revokeApiTokens(db: Db, { userId, tokenId }: { userId: string; tokenId: string | 'all' }): Promise<number> {
  if (tokenId === 'all') return revokeTokensWhere(db, { userId })
  if (!UUID_PATTERN.test(tokenId)) throw new UserError(`"${tokenId}" is not a token id (see the list of tokens)`)
  const token = await db.selectFrom('api_tokens').select(['id', 'revoked_at']).where('id', '=', tokenId).where('user_id', '=', userId).executeTakeFirst()
  if (!token) throw new UserError(`no token ${tokenId} for this user`)
  return revokeTokensWhere(db, { userId, tokenId })
}

/** The live token with this hash and its user: the query of every API request, compiled once. */
export const liveTokenQuery = preparedQuery(['tokenHash'], (db, { tokenHash }: { tokenHash: string }) =>
  db
    .selectFrom('api_tokens')
    .innerJoin('users', 'users.id', 'api_tokens.user_id')
    .select(['users.id', 'users.login', 'users.created_at', 'users.role', 'api_tokens.id as token_id', 'api_tokens.last_used_at'])
    .where('api_tokens.token_hash', '=', tokenHash)
    .where('api_tokens.revoked_at', 'is', null)
    .where('users.disabled_at', 'is', null) // disabling revokes them anyway; a token made later (the CLI) must not work either
    .compile(),
)

export async function findUserByApiToken(db: Db, { secret, token }: { secret: string; token: string }): Promise<User | undefined> {
  return findUserByTokenHash(db, hashToken({ secret, token }))
}

/** `findUserByApiToken` for a token already hashed (`hashToken`). */
export async function findUserByTokenHash(db: Db, tokenHash: string): Promise<User | undefined> {
  const row = (await liveTokenQuery.execute(db, { tokenHash })).rows[0]
  if (!row) return undefined
  // Recorded at most once a minute per token: not a write on every request.
  if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > 60_000) {
    await db.updateTable('api_tokens').set({ last_used_at: sql`now()` }).where('id', '=', row.token_id).execute()
  }
  return { id: row.id, login: row.login, createdAt: new Date(row.created_at), role: row.role }
}

export interface Session {
  readonly user: User
  readonly csrfToken: string
}

export async function createSession(
  db: Db,
  { secret, userId, ttlHours, now = Date.now() }: { secret: string; userId: string; ttlHours: number; now?: number },
): Promise<{ token: string; csrfToken: string; expiresAt: Date }> {
  const token = generateOpaqueToken()
  const csrfToken = generateOpaqueToken()
  const expiresAt = new Date(now + ttlHours * 3600_000)
  await db
    .insertInto('sessions')
    .values({ id_hash: hashToken({ secret, token }), user_id: userId, csrf_token: csrfToken, expires_at: expiresAt })
    .execute()
  return { token, csrfToken, expiresAt }
}

export async function findSession(db: Db, { secret, token, now = Date.now() }: { secret: string; token: string; now?: number }): Promise<Session | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.login', 'users.created_at', 'users.role', 'sessions.csrf_token'])
    .where('sessions.id_hash', '=', hashToken({ secret, token }))
    .where('sessions.expires_at', '>', new Date(now))
    .where('users.disabled_at', 'is', null)
    .executeTakeFirst()
  return row ? { user: { id: row.id, login: row.login, createdAt: new Date(row.created_at), role: row.role }, csrfToken: row.csrf_token } : undefined
}

export async function deleteSession(db: Db, { secret, token }: { secret: string; token: string }): Promise<void> {
  await inTransaction(db, async (trx) => {
    const ended = await trx.deleteFrom('sessions').where('id_hash', '=', hashToken({ secret, token })).returning('user_id').executeTakeFirst()
    if (ended) await credentialsEnded(trx, ended.user_id)
  })
}
