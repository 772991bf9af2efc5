// Users, sessions and API tokens (plain repository functions).
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../workspace/store.ts'
import { ensureRoot, type Owner } from '../workspace/store.ts'
import { validateLogin } from '../workspace/uri.ts'
import { hashPassword, validatePassword, verifyPassword } from './passwords.ts'
import { generateApiToken, generateOpaqueToken, hashToken } from './tokens.ts'

export interface User extends Owner {
  readonly createdAt: Date
}

export class UserError extends Error {
  override readonly name = 'UserError'
}

export async function createUser(db: Db, { login, password }: { login: string; password: string | undefined }): Promise<User> {
  const loginReason = validateLogin(login)
  if (loginReason) throw new UserError(`invalid login "${login}": ${loginReason}`)
  if (password !== undefined) {
    const reason = validatePassword(password)
    if (reason) throw new UserError(reason)
  }
  const existing = await findUserByLogin(db, login)
  if (existing) throw new UserError(`user "${login}" already exists`)
  const user = {
    id: randomUUID(),
    login,
    password_hash: password === undefined ? null : await hashPassword(password),
  }
  await db.insertInto('users').values(user).execute()
  await ensureRoot(db, { id: user.id, login })
  return (await findUserByLogin(db, login))!
}

export async function setPassword(db: Db, { login, password }: { login: string; password: string }): Promise<void> {
  const reason = validatePassword(password)
  if (reason) throw new UserError(reason)
  const result = await db
    .updateTable('users')
    .set({ password_hash: await hashPassword(password) })
    .where('login', '=', login)
    .executeTakeFirst()
  if (Number(result.numUpdatedRows) === 0) throw new UserError(`no user "${login}"`)
  // A new password signs out every existing session.
  await db.deleteFrom('sessions').where('user_id', 'in', db.selectFrom('users').select('id').where('login', '=', login)).execute()
}

export async function findUserByLogin(db: Db, login: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').select(['id', 'login', 'created_at']).where('login', '=', login).executeTakeFirst()
  return row ? { id: row.id, login: row.login, createdAt: new Date(row.created_at) } : undefined
}

export async function countUsers(db: Db): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function authenticatePassword(db: Db, { login, password }: { login: string; password: string }): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('login', '=', login).executeTakeFirst()
  // Verify against a dummy hash when the user is unknown, so timing does not reveal logins.
  const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH)
  return row && ok ? { id: row.id, login: row.login, createdAt: new Date(row.created_at) } : undefined
}
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

export async function createApiTokenFor(db: Db, { secret, login, label }: { secret: string; login: string; label?: string }): Promise<string> {
  const user = await findUserByLogin(db, login)
  if (!user) throw new UserError(`no user "${login}"`)
  const token = generateApiToken()
  await db
    .insertInto('api_tokens')
    .values({ id: randomUUID(), user_id: user.id, token_hash: hashToken({ secret, token }), label: label ?? null })
    .execute()
  return token
}

export async function findUserByApiToken(db: Db, { secret, token }: { secret: string; token: string }): Promise<User | undefined> {
  const row = await db
    .selectFrom('api_tokens')
    .innerJoin('users', 'users.id', 'api_tokens.user_id')
    .select(['users.id', 'users.login', 'users.created_at', 'api_tokens.id as token_id', 'api_tokens.last_used_at'])
    .where('api_tokens.token_hash', '=', hashToken({ secret, token }))
    .where('api_tokens.revoked_at', 'is', null)
    .executeTakeFirst()
  if (!row) return undefined
  // Recorded at most once a minute per token: not a write on every request.
  if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > 60_000) {
    await db.updateTable('api_tokens').set({ last_used_at: sql`now()` }).where('id', '=', row.token_id).execute()
  }
  return { id: row.id, login: row.login, createdAt: new Date(row.created_at) }
}

export interface Session {
  readonly user: User
  readonly csrfToken: string
}

export async function createSession(
  db: Db,
  { secret, userId, ttlHours }: { secret: string; userId: string; ttlHours: number },
): Promise<{ token: string; csrfToken: string; expiresAt: Date }> {
  const token = generateOpaqueToken()
  const csrfToken = generateOpaqueToken()
  const expiresAt = new Date(Date.now() + ttlHours * 3600_000)
  await db
    .insertInto('sessions')
    .values({ id_hash: hashToken({ secret, token }), user_id: userId, csrf_token: csrfToken, expires_at: expiresAt })
    .execute()
  return { token, csrfToken, expiresAt }
}

export async function findSession(db: Db, { secret, token }: { secret: string; token: string }): Promise<Session | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.login', 'users.created_at', 'sessions.csrf_token'])
    .where('sessions.id_hash', '=', hashToken({ secret, token }))
    .where('sessions.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
  return row ? { user: { id: row.id, login: row.login, createdAt: new Date(row.created_at) }, csrfToken: row.csrf_token } : undefined
}

export async function deleteSession(db: Db, { secret, token }: { secret: string; token: string }): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', hashToken({ secret, token })).execute()
}
