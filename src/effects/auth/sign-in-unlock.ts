// A way out of a sign-in lock-out for someone who can prove more than the password (SPEC §10;
// docs/security.md): the operator runs `knowagent user unlock <login>`, which prints a one-time
// link. Signing in through that link checks the password even while the login or the address is
// locked out — once: the link is used up by that one check, right password or wrong, and it
// expires after UNLOCK_TTL_MINUTES. Only the HMAC of its token is stored (tokens.ts).
import type { Db } from '../db/schema.ts'
import { generateOpaqueToken, hashToken } from './tokens.ts'
import { UserError } from './users.ts'

export const UNLOCK_TTL_MINUTES = 15
/** The query parameter (and form field) that carries an unlock link's token. */
export const UNLOCK_PARAMETER = 'unlock'

/** Makes an unlock link's token for `login`; throws UserError when there is no such user. */
export async function createUnlockToken(db: Db, { secret, login, now = Date.now() }: { secret: string; login: string; now?: number }): Promise<string> {
  const user = await db.selectFrom('users').select('id').where('login', '=', login).executeTakeFirst()
  if (!user) throw new UserError(`no user "${login}"`)
  const token = generateOpaqueToken()
  await db.deleteFrom('sign_in_unlocks').where('expires_at', '<', new Date(now)).execute()
  await db
    .insertInto('sign_in_unlocks')
    .values({ token_hash: hashToken({ secret, token }), user_id: user.id, expires_at: new Date(now + UNLOCK_TTL_MINUTES * 60_000) })
    .execute()
  return token
}

/**
 * Uses up the unlock link `token` if it is live and was made for `login`: true when it was (this
 * sign-in's password is then checked whatever the lock-outs say). One statement, so a link is used
 * once even by requests that race.
 */
export async function useUnlockToken(db: Db, { secret, token, login, now }: { secret: string; token: string; login: string; now: number }): Promise<boolean> {
  if (token.length === 0 || token.length > 128) return false
  const used = await db
    .deleteFrom('sign_in_unlocks')
    .where('token_hash', '=', hashToken({ secret, token }))
    .where('expires_at', '>', new Date(now))
    .where('user_id', '=', (eb) => eb.selectFrom('users').select('id').where('login', '=', login))
    .returning('user_id')
    .executeTakeFirst()
  return used !== undefined
}
