// Sign-in throttling shared by every server process through PostgreSQL (SPEC §10). Failed
// attempts are counted per login and per client address; past a number of free failures each
// further failure locks that key for an exponentially growing time (1 s, 2 s, 4 s … up to a cap).
// An attempt is counted *before* its password is checked — one atomic update per key that refuses
// while the key is locked — so concurrent guesses cannot all slip through before the first one
// fails, and a locked attempt costs no password hash. A success clears the login's count and
// takes back its own count on the address.
import { isIPv4, isIPv6 } from 'node:net'
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'

export interface SignInPolicy {
  /** Failures per login before lock-outs start. */
  readonly freeFailuresPerLogin: number
  /** Failures per client address before lock-outs start (higher: many people can share one address). */
  readonly freeFailuresPerAddress: number
  /** The first lock-out; each further failure doubles it. */
  readonly baseLockoutMs: number
  readonly maxLockoutMs: number
}

export const DEFAULT_SIGN_IN_POLICY: SignInPolicy = {
  freeFailuresPerLogin: 5,
  freeFailuresPerAddress: 50,
  baseLockoutMs: 1000,
  maxLockoutMs: 15 * 60_000,
}

/** Failures are forgotten this long after a key's last attempt (always longer than a lock-out). */
export function failureMemoryMs(policy: SignInPolicy): number {
  return Math.max(60 * 60_000, 4 * policy.maxLockoutMs)
}

/** The lock-out after the `failures`-th failure (0 while still within the free failures). */
export function lockoutMs({ failures, free, policy }: { failures: number; free: number; policy: SignInPolicy }): number {
  if (failures <= free) return 0
  return Math.min(policy.maxLockoutMs, policy.baseLockoutMs * 2 ** Math.min(failures - free - 1, 40))
}

/**
 * The throttling key of a client address: IPv4 as is (also when IPv6-mapped), IPv6 by its /64
 * prefix — one subscriber usually holds a whole /64, so single IPv6 addresses are free to vary.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown'
  const bare = address.replace(/%.*$/, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!
  if (isIPv4(bare)) return bare
  if (!isIPv6(bare)) return 'unknown'
  const [head = '', tail] = bare.toLowerCase().split('::') as [string, string | undefined]
  const headParts = head === '' ? [] : head.split(':')
  const tailParts = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? headParts : [...headParts, ...Array(8 - headParts.length - tailParts.length).fill('0'), ...tailParts]
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`
}

export type SignInGate =
  | {
      readonly ok: true
      /** The password was right: clears the login's count and takes back this attempt's count on the address. */
      readonly succeeded: () => Promise<void>
      /** The password was never checked (the server was too busy): takes back this attempt's counts. */
      readonly notChecked: () => Promise<void>
    }
  | { readonly ok: false; readonly scope: 'login' | 'address'; readonly retryAfterMs: number }

interface KeyRule {
  readonly key: string
  readonly scope: 'login' | 'address'
  readonly free: number
}

/** Counts one attempt for the key unless it is locked; true when counted. */
async function countAttempt(db: Db, { rule, now, policy }: { rule: KeyRule; now: number; policy: SignInPolicy }): Promise<boolean> {
  const at = new Date(now)
  const forgetBefore = new Date(now - failureMemoryMs(policy))
  await sql`insert into sign_in_throttles (key, failures, last_attempt_at) values (${rule.key}, 0, ${at}) on conflict (key) do nothing`.execute(db)
  // One statement, so concurrent attempts on one key are counted one after another (row lock);
  // the lock-out formula is `lockoutMs` written in SQL.
  const counted = await sql<{ failures: number }>`
    update sign_in_throttles as t
       set (failures, blocked_until, last_attempt_at) = (
         select f,
                case when f > ${rule.free}::int
                     then ${at}::timestamptz + make_interval(secs => least(${policy.maxLockoutMs}::float8, ${policy.baseLockoutMs}::float8 * power(2, least(f - ${rule.free}::int - 1, 40))) / 1000.0)
                end,
                ${at}::timestamptz
           from (select (case when t.last_attempt_at < ${forgetBefore}::timestamptz then 0 else t.failures end) + 1 as f) as next)
     where t.key = ${rule.key} and (t.blocked_until is null or t.blocked_until <= ${at}::timestamptz)
    returning t.failures`.execute(db)
  return counted.rows.length > 0
}

async function retryAfter(db: Db, { key, now }: { key: string; now: number }): Promise<number> {
  const row = await db.selectFrom('sign_in_throttles').select('blocked_until').where('key', '=', key).executeTakeFirst()
  return Math.max(1, (row?.blocked_until ? new Date(row.blocked_until).getTime() : now) - now)
}

/** Removes a bounded number of rows nobody has tried for a while (keeps the table small without a timer). */
async function forgetStale(db: Db, { now, policy }: { now: number; policy: SignInPolicy }): Promise<void> {
  const before = new Date(now - failureMemoryMs(policy))
  await sql`
    delete from sign_in_throttles where key in (
      select key from sign_in_throttles
       where last_attempt_at < ${before}::timestamptz and (blocked_until is null or blocked_until < ${new Date(now)}::timestamptz)
       limit 100)`.execute(db)
}

/**
 * Admits one sign-in attempt or says how long the client must wait. On `ok`, call `succeeded()`
 * when the password was right, `notChecked()` when it was never checked; a wrong password needs
 * nothing more (it was counted up front).
 */
export async function beginSignInAttempt(
  db: Db,
  { login, address, now, policy }: { login: string; address: string | undefined; now: number; policy: SignInPolicy },
): Promise<SignInGate> {
  const rules: KeyRule[] = [
    { key: `address:${addressKey(address)}`, scope: 'address', free: policy.freeFailuresPerAddress },
    { key: `login:${login.slice(0, 128)}`, scope: 'login', free: policy.freeFailuresPerLogin }, // the key clearLoginThrottle forgets
  ]
  await forgetStale(db, { now, policy })
  for (const rule of rules) {
    if (!(await countAttempt(db, { rule, now, policy }))) {
      return { ok: false, scope: rule.scope, retryAfterMs: await retryAfter(db, { key: rule.key, now }) }
    }
  }
  const [addressRule, loginRule] = rules as [KeyRule, KeyRule]
  return {
    ok: true,
    succeeded: async () => {
      await db.deleteFrom('sign_in_throttles').where('key', '=', loginRule.key).execute()
      await uncount(db, addressRule)
    },
    notChecked: async () => {
      await uncount(db, loginRule)
      await uncount(db, addressRule)
    },
  }
}

/** Forgets a login's failures and lock-out (a sign-in through an unlock link succeeded, sign-in-unlock.ts). */
export async function clearLoginThrottle(db: Db, login: string): Promise<void> {
  await db.deleteFrom('sign_in_throttles').where('key', '=', `login:${login.slice(0, 128)}`).execute()
}

/** Takes one counted attempt back; the lock-out stays only if the failures left still call for one. */
async function uncount(db: Db, rule: KeyRule): Promise<void> {
  await sql`
    update sign_in_throttles
       set failures = greatest(failures - 1, 0),
           blocked_until = case when failures - 1 > ${rule.free}::int then blocked_until end
     where key = ${rule.key}`.execute(db)
}
