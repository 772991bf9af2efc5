import { describe, expect, test } from 'vitest'
import { makeCredentialCipher } from './credential-cipher.ts'

const SECRET = 'server-secret-0123456789abcdef'
const cipher = makeCredentialCipher(SECRET)
const where = { userId: '6f1e2d3c-0000-4000-8000-000000000001', name: 'DASHSCOPE_API_KEY' }

describe('credential cipher (AES-256-GCM)', () => {
  test('round trip; the stored form holds no plaintext', () => {
    const stored = cipher.encrypt({ plaintext: 'sk-very-secret-key', ...where })
    expect(stored).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(stored).not.toContain('sk-very-secret-key')
    expect(Buffer.from(stored.split('.')[2]!, 'base64url').toString('utf8')).not.toContain('secret')
    expect(cipher.decrypt({ stored, ...where })).toBe('sk-very-secret-key')
  })

  test('a fresh nonce per value: the same key encrypts differently each time', () => {
    expect(cipher.encrypt({ plaintext: 'same', ...where })).not.toBe(cipher.encrypt({ plaintext: 'same', ...where }))
  })

  test('another server secret cannot decrypt', () => {
    const stored = cipher.encrypt({ plaintext: 'sk-1', ...where })
    expect(makeCredentialCipher('another-secret-0123456789').decrypt({ stored, ...where })).toBeUndefined()
  })

  test('bound to its owner and name: a copied row does not decrypt', () => {
    const stored = cipher.encrypt({ plaintext: 'sk-1', ...where })
    expect(cipher.decrypt({ stored, ...where, userId: '6f1e2d3c-0000-4000-8000-000000000002' })).toBeUndefined()
    expect(cipher.decrypt({ stored, ...where, name: 'BAILIAN_WORKSPACE_ID' })).toBeUndefined()
  })

  test.each([
    ['a flipped ciphertext byte', (s: string) => { const p = s.split('.'); const b = Buffer.from(p[2]!, 'base64url'); b[0] = b[0]! ^ 1; p[2] = b.toString('base64url'); return p.join('.') }],
    ['a cut tag', (s: string) => s.slice(0, -4)],
    ['another version', (s: string) => s.replace(/^v1/, 'v2')],
    ['garbage', () => 'not a value'],
  ])('%s is refused', (_name, tamper) => {
    const stored = cipher.encrypt({ plaintext: 'sk-1', ...where })
    expect(cipher.decrypt({ stored: tamper(stored), ...where })).toBeUndefined()
  })

  test('a short secret is refused', () => {
    expect(() => makeCredentialCipher('short')).toThrow(/too short/)
  })
})
