// scrypt password hashes: "scrypt$N$r$p$<salt b64url>$<hash b64url>".
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto'

const KEY_LENGTH = 32

/** scrypt's cost parameters; a stored hash carries its own, so verifying uses the cost it was made with. */
export interface ScryptCost {
  readonly N: number
  readonly r: number
  readonly p: number
}

export const DEFAULT_SCRYPT_COST: ScryptCost = { N: 1 << 15, r: 8, p: 1 }

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFC'), salt, KEY_LENGTH, { ...options, maxmem: 128 * 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  )
}

export const MIN_PASSWORD_LENGTH = 8

export function validatePassword(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `a password needs at least ${MIN_PASSWORD_LENGTH} characters`
  if (password.length > 1024) return 'a password is at most 1024 characters'
  return undefined
}

export async function hashPassword(password: string, cost: ScryptCost = DEFAULT_SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, cost)
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) return false
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/** A random password for generated accounts (printed once, never stored in clear). */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url')
}
