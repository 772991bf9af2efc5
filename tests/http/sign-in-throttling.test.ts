// Sign-in throttling over HTTP: per login and per client address, refused before any password is
// hashed, with Retry-After; the clock is the app's injected one, never slept on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUnlockToken } from '../../src/effects/auth/sign-in-unlock.ts'
import { addUserWithToken, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'

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

/**
 * One POST /login through the real form (its own double-submit token), from `address`; with
 * `unlock`, the form as the unlock link `/login?unlock=…` shows it (its hidden field sent along).
 */
async function attempt({ login, password, address, unlock }: { login: string; password: string; address: string; unlock?: string }) {
  const page = await fetch(`${server.url}/login${unlock === undefined ? '' : `?unlock=${unlock}`}`)
  const cookie = page.headers.getSetCookie().find((c) => c.startsWith('ka_login='))!.split(';')[0]!
  const html = await page.text()
  const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(html)![1]!
  const unlockField = /name="unlock" value="([^"]+)"/.exec(html)?.[1]
  const res = await fetch(`${server.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': address },
    body: new URLSearchParams({ login, password, _login_csrf: loginCsrf, ...(unlockField === undefined ? {} : { unlock: unlockField }) }),
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

  it('an unlock link (`knowagent user unlock`) lets the right password through a lock-out once; it is used up, made for one login, and a wrong password uses it up too', async () => {
    now += 3_600_000
    const address = '198.18.0.7'
    for (let i = 0; i < 12; i++) await attempt({ login: 'alice', password: 'wrong-password', address }) // login and address both locked out
    expect((await attempt({ login: 'alice', password: alice.password, address })).status).toBe(429)

    const forBob = await createUnlockToken(server.database.db, { secret: TEST_SECRET, login: 'bob', now })
    expect((await attempt({ login: 'alice', password: alice.password, address, unlock: forBob })).status).toBe(429) // another login's link

    const wasted = await createUnlockToken(server.database.db, { secret: TEST_SECRET, login: 'alice', now })
    expect((await attempt({ login: 'alice', password: 'wrong-password', address, unlock: wasted })).status).toBe(401)
    expect((await attempt({ login: 'alice', password: alice.password, address, unlock: wasted })).status).toBe(429) // used up

    const link = await createUnlockToken(server.database.db, { secret: TEST_SECRET, login: 'alice', now })
    const page = await (await fetch(`${server.url}/login?unlock=${link}`)).text()
    expect(page).toContain('one-time unlock link')
    expect((await attempt({ login: 'alice', password: alice.password, address, unlock: link })).status).toBe(303)
    expect((await attempt({ login: 'alice', password: alice.password, address: '198.18.0.8', unlock: link })).status).toBe(303) // the login's lock-out is cleared; the link was not needed

    const expired = await createUnlockToken(server.database.db, { secret: TEST_SECRET, login: 'bob', now })
    now += 15 * 60_000 + 1
    for (let i = 0; i < 12; i++) await attempt({ login: 'bob', password: 'wrong-password', address: '198.18.0.9' })
    expect((await attempt({ login: 'bob', password: 'password-bob', address: '198.18.0.9', unlock: expired })).status).toBe(429)
  })
})
