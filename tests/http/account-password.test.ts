// Settings → Account (issue 36): a user changes their own password — the current one is asked, the
// new one is validated like every password, the user's other sessions end and this one stays —
// and "Sign out everywhere" ends every session of theirs, this one included, saying so on the
// sign-in page. Both need the session's CSRF token; neither takes an API token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ configure: (config) => ({ ...config, signInFailuresPerLogin: 3 }) })
  await addUserWithToken(server, 'admin') // the first user; the others are members
})
afterAll(async () => {
  await server?.close()
})

const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields) })
const post = (cookie: string, path: string, fields: Record<string, string>) => fetch(`${server.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie }, ...form(fields) })
const sessionWorks = async (cookie: string) => (await fetch(`${server.url}/workspace`, { redirect: 'manual', headers: { cookie } })).status === 200
const tokenWorks = async (token: string) => (await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })).status === 200
const alertOf = (html: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1]
const statusOf = (html: string) => /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1]

describe('changing one\'s own password', () => {
  it('asks for the current one, validates the new one, ends the other sessions and keeps this one', async () => {
    const kim = await addUserWithToken(server, 'kim')
    const here = await signIn(server, 'kim', kim.password)
    const elsewhere = await signIn(server, 'kim', kim.password)
    const third = await signIn(server, 'kim', kim.password)
    const page = await (await fetch(`${server.url}/settings`, { headers: { cookie: here.cookie } })).text()
    expect(page).toContain('action="/settings/password"')
    expect(page).toContain('name="current"')

    const change = (fields: Record<string, string>) => post(here.cookie, '/settings/password', { _csrf: here.csrf, ...fields })
    const wrong = await change({ current: 'not-the-password', password: 'a-new-password', repeat: 'a-new-password' })
    expect(wrong.status).toBe(400)
    expect(alertOf(await wrong.text())).toBe('The current password is not right; nothing was changed.')
    const short = await change({ current: kim.password, password: 'short', repeat: 'short' })
    expect(short.status).toBe(400)
    expect(alertOf(await short.text())).toBe('a password needs at least 8 characters; nothing was changed.')
    const differ = await change({ current: kim.password, password: 'a-new-password', repeat: 'a-new-passwort' })
    expect(differ.status).toBe(400)
    expect(alertOf(await differ.text())).toBe('The new password and its repetition differ; nothing was changed.')
    expect((await post(here.cookie, '/settings/password', { current: kim.password, password: 'a-new-password', repeat: 'a-new-password' })).status).toBe(403) // no CSRF token
    expect(await sessionWorks(elsewhere.cookie)).toBe(true) // nothing changed so far

    const changed = await change({ current: kim.password, password: 'a-new-password', repeat: 'a-new-password' })
    expect(changed.status).toBe(200)
    expect(statusOf(await changed.text())).toBe(
      'Password changed. 2 other sessions of yours ended (other browsers and devices sign in again); this one stays signed in. Your API tokens still work.',
    )
    expect(await sessionWorks(here.cookie)).toBe(true)
    expect(await sessionWorks(elsewhere.cookie)).toBe(false)
    expect(await sessionWorks(third.cookie)).toBe(false)
    expect(await tokenWorks(kim.token)).toBe(true)
    await expect(signIn(server, 'kim', kim.password)).rejects.toThrow('401')
    await signIn(server, 'kim', 'a-new-password')
  })

  it('counts a wrong current password as a failed sign-in: guesses through a session are throttled like the sign-in page\'s', async () => {
    const lee = await addUserWithToken(server, 'lee')
    const { cookie, csrf } = await signIn(server, 'lee', lee.password)
    const guess = () => post(cookie, '/settings/password', { _csrf: csrf, current: 'a-guess-at-it', password: 'a-new-password', repeat: 'a-new-password' })
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await guess()).status)
    expect(statuses).toContain(429)
    const refused = await post(cookie, '/settings/password', { _csrf: csrf, current: lee.password, password: 'a-new-password', repeat: 'a-new-password' })
    expect(refused.status).toBe(429)
    expect(alertOf(await refused.text())).toMatch(/^Too many wrong passwords for this login\. Try again in \d+ s; nothing was changed\.$/)
  })

  it('an API token cannot change the password', async () => {
    const mo = await addUserWithToken(server, 'mo')
    const response = await fetch(`${server.url}/settings/password`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mo.token}`, accept: 'application/json' },
      ...form({ current: mo.password, password: 'a-new-password', repeat: 'a-new-password' }),
    })
    expect(response.status).toBe(403)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('session_required')
  })
})

describe('sign out everywhere', () => {
  it('ends every session of the user, this one included, says so on the sign-in page, and leaves API tokens and other users alone', async () => {
    const ned = await addUserWithToken(server, 'ned')
    const here = await signIn(server, 'ned', ned.password)
    const elsewhere = await signIn(server, 'ned', ned.password)
    const other = await addUserWithToken(server, 'ola')
    const olaSession = await signIn(server, 'ola', other.password)
    expect((await post(here.cookie, '/settings/sign-out-everywhere', {})).status).toBe(403) // no CSRF token
    expect(await sessionWorks(here.cookie)).toBe(true)

    const ended = await post(here.cookie, '/settings/sign-out-everywhere', { _csrf: here.csrf })
    expect(ended.status).toBe(303)
    expect(ended.headers.get('location')).toBe('/login?notice=signed_out_everywhere')
    expect(ended.headers.getSetCookie().some((cookie) => cookie.startsWith('ka_session=;'))).toBe(true)
    expect(await sessionWorks(here.cookie)).toBe(false)
    expect(await sessionWorks(elsewhere.cookie)).toBe(false)
    expect(await sessionWorks(olaSession.cookie)).toBe(true)
    expect(await tokenWorks(ned.token)).toBe(true)
    const login = await (await fetch(`${server.url}${ended.headers.get('location')}`)).text()
    expect(statusOf(login)).toBe(
      'You are signed out everywhere: every session of your account ended, this one included. Your API tokens still work; revoke them under Settings if one may be lost.',
    )
  })
})
