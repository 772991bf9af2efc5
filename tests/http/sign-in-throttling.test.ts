// Sign-in throttling over HTTP: per login and per client address, refused before any password is
// hashed, with Retry-After; the clock is the app's injected one, never slept on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addUserWithToken, startTestServer, type TestServer } from '../support/test-server.ts'

let now = 1_700_000_000_000
let server: TestServer
let alice: Awaited<ReturnType<typeof addUserWithToken>>

beforeAll(async () => {
  server = await startTestServer({
    now: () => now,
    configure: (config) => ({ ...config, trustProxy: true, signInFailuresPerLogin: 3, signInFailuresPerAddress: 6, signInMaxLockoutSeconds: 60 }),
  })
  alice = await addUserWithToken(server, 'alice')
  await addUserWithToken(server, 'bob')
})
afterAll(async () => {
  await server?.close()
})

/** One POST /login through the real form (its own double-submit token), from `address`. */
async function attempt({ login, password, address }: { login: string; password: string; address: string }) {
  const page = await fetch(`${server.url}/login`)
  const cookie = page.headers.getSetCookie().find((c) => c.startsWith('ka_login='))!.split(';')[0]!
  const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(await page.text())![1]!
  const res = await fetch(`${server.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': address },
    body: new URLSearchParams({ login, password, _login_csrf: loginCsrf }),
  })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() }
}

describe('sign-in throttling', () => {
  it('locks a login after its free failures: even the right password is refused until the window passes, then works', async () => {
    for (let i = 0; i < 4; i++) {
      expect((await attempt({ login: 'alice', password: 'wrong-password', address: `198.51.100.${i}` })).status).toBe(401)
    }
    const refused = await attempt({ login: 'alice', password: alice.password, address: '198.51.100.9' })
    expect(refused.status).toBe(429)
    expect(refused.retryAfter).toBe('1')
    expect(refused.text).toContain('Too many failed sign-ins for this login. Try again in 1 s; until then the password is not checked, so even the right one is refused.')
    now += 1000
    const allowed = await attempt({ login: 'alice', password: alice.password, address: '198.51.100.9' })
    expect(allowed.status).toBe(303)
    expect((await attempt({ login: 'alice', password: 'wrong-password', address: '198.51.100.9' })).status).toBe(401) // cleared by the success
  })

  it('throttles one client address across logins, and not another address', async () => {
    now += 3_600_000
    const address = '203.0.113.50'
    for (const login of ['carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan']) {
      expect((await attempt({ login, password: 'wrong-password', address })).status).toBe(401)
    }
    const refused = await attempt({ login: 'bob', password: 'password-bob', address })
    expect(refused.status).toBe(429)
    expect(refused.text).toContain('Too many failed sign-ins from your network address')
    expect((await attempt({ login: 'bob', password: 'password-bob', address: '203.0.113.51' })).status).toBe(303)
  })

  it('checks at most free + 1 passwords of a burst of concurrent guesses; the rest are refused with Retry-After, unhashed', async () => {
    now += 3_600_000
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => attempt({ login: 'bob', password: `guess-${i}`, address: `192.0.2.${i}` })),
    )
    const statuses = results.map((r) => r.status)
    expect(statuses.filter((s) => s === 401)).toHaveLength(4) // 3 free + the one that started the lock-out
    expect(statuses.filter((s) => s === 429)).toHaveLength(36)
    expect(results.find((r) => r.status === 429)!.retryAfter).toBe('1')
  })
})
