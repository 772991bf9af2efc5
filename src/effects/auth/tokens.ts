import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** An opaque bearer credential: "ka_" + 32 random bytes. Only its keyed hash is stored. */
export function generateApiToken(): string {
  return 'ka_' + randomBytes(32).toString('base64url')
}

export function generateOpaqueToken(): string {
  return randomBytes(32).toString('base64url')
}

/** HMAC-SHA256 with the server secret: a leaked table alone cannot be used to check guesses. */
export function hashToken({ secret, token }: { secret: string; token: string }): string {
  return createHmac('sha256', secret).update(token).digest('hex')
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
