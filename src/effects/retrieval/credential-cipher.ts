// Encryption at rest of the per-user credential store: AES-256-GCM with a key derived (HKDF-SHA256)
// from the server secret, a random 96-bit nonce per value, and the owner and credential name as
// associated data, so a ciphertext copied to another row or user does not decrypt.
// Stored form: `v1.<nonce>.<ciphertext>.<tag>`, each part base64url.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

const VERSION = 'v1'

export interface CredentialCipher {
  readonly encrypt: (input: { readonly plaintext: string; readonly userId: string; readonly name: string }) => string
  /** Undefined when the value was written with another secret, tampered with, or moved. */
  readonly decrypt: (input: { readonly stored: string; readonly userId: string; readonly name: string }) => string | undefined
}

export function makeCredentialCipher(secret: string): CredentialCipher {
  if (secret.length < 16) throw new Error('the server secret is too short to key the credential store')
  const key = Buffer.from(hkdfSync('sha256', secret, 'knowagent', 'credential-store/aes-256-gcm/v1', 32))
  const associated = (userId: string, name: string) => Buffer.from(`${userId}\u0000${name}`, 'utf8')
  return {
    encrypt: ({ plaintext, userId, name }) => {
      const nonce = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, nonce)
      cipher.setAAD(associated(userId, name))
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return [VERSION, nonce, body, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
    },
    decrypt: ({ stored, userId, name }) => {
      const parts = stored.split('.')
      if (parts.length !== 4 || parts[0] !== VERSION) return undefined
      const [nonce, body, tag] = parts.slice(1).map((part) => Buffer.from(part, 'base64url')) as [Buffer, Buffer, Buffer]
      if (nonce.length !== 12 || tag.length !== 16) return undefined
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, nonce)
        decipher.setAAD(associated(userId, name))
        decipher.setAuthTag(tag)
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8')
      } catch {
        return undefined
      }
    },
  }
}
