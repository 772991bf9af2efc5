// Administration → Users (issue 36): every admin route × {anonymous, member session, member's
// token, admin session, admin's token} answers as docs/security.md says; refusals (the last enabled
// admin, an unknown login) are the page with a message, never a 500; a new user's password and a
// reset one are shown once (a reload shows neither again nor makes a second change); a reset ends
// the user's sessions and tokens; disabling ends a running session at its next request; deleting
// says what goes first; every change leaves an audit line without a secret.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiTokenFor, createSession, createUser, findUserByLogin } from '../../src/effects/auth/users.ts'
import { addUserWithToken, signIn, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

let server: TestServer
let ada: Awaited<ReturnType<typeof addUserWithToken>> // the first user: an admin
let bob: Awaited<ReturnType<typeof addUserWithToken>> // a member
let adaSession: { cookie: string; csrf: string }
let bobSession: { cookie: string; csrf: string }

beforeAll(async () => {
  server = await startTestServer()
  ada = await addUserWithToken(server, 'ada')
  bob = await addUserWithToken(server, 'bob')
  adaSession = await signIn(server, 'ada', ada.password)
  bobSession = await signIn(server, 'bob', bob.password)
})
afterAll(async () => {
  await server?.close()
})

const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields) })
const addScratch = (login: string) => createUser(server.database.db, { login, password: `password-${login}`, hashCost: TEST_PASSWORD_COST })
const asSession = (session: { cookie: string }, path: string, fields?: Record<string, string>) =>
  fetch(`${server.url}${path}`, { redirect: 'manual', headers: { cookie: session.cookie }, ...(fields ? { method: 'POST', ...form(fields) } : {}) })
const shownPassword = (html: string, login: string) => new RegExp(`aria-label="The new password for ${login}">([A-Za-z0-9_-]{12,})</code>`).exec(html)?.[1]
const alertOf = (html: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1]
const statusOf = (html: string) => /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1]
const auditLines = () => server.logLines.filter((line) => line.includes('"msg":"admin action"')).map((line) => JSON.parse(line) as Record<string, unknown>)
/** Whether `cookie`'s session still works (a page, not a redirect to /login). */
const sessionWorks = async (cookie: string) => (await fetch(`${server.url}/workspace`, { redirect: 'manual', headers: { cookie } })).status === 200
const tokenWorks = async (token: string) => (await fetch(`${server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })).status === 200

/** Each admin route: a request that succeeds for an admin (its target made fresh for each call) and the status it then gets. */
const ROUTES: ReadonlyArray<{ name: string; method: 'GET' | 'POST'; request: () => Promise<{ path: string; fields?: Record<string, string> }>; ok: number }> = [
  { name: 'GET /admin', method: 'GET', request: async () => ({ path: '/admin' }), ok: 303 },
  { name: 'GET /admin/users', method: 'GET', request: async () => ({ path: '/admin/users' }), ok: 200 },
  { name: 'GET /admin/users/:login/delete', method: 'GET', request: async () => ({ path: '/admin/users/bob/delete' }), ok: 200 },
  { name: 'POST /admin/users', method: 'POST', request: async () => ({ path: '/admin/users', fields: { login: `new-${randomUUID().slice(0, 8)}`, role: 'member', _once: randomUUID() } }), ok: 201 },
  ...(['password', 'role', 'disable', 'enable', 'delete'] as const).map((action) => ({
    name: `POST /admin/users/:login/${action}`,
    method: 'POST' as const,
    request: async () => {
      const login = `t-${action}-${randomUUID().slice(0, 8)}`
      await addScratch(login)
      const fields: Record<string, string> = { password: { _once: randomUUID() }, role: { role: 'admin' }, disable: {}, enable: {}, delete: { confirm: login } }[action]
      return { path: `/admin/users/${login}/${action}`, fields }
    },
    ok: 200,
  })),
]

describe('the admin routes × callers', () => {
  it.each(ROUTES)('$name: anonymous → sign-in (a page) or 401, member → 403 admin_required, admin token → 403 session_required, admin session → $ok', async ({ method, request, ok }) => {
    const send = async (headers: Record<string, string>, { csrf }: { csrf?: string } = {}) => {
      const { path, fields } = await request()
      const body = fields ? form({ ...fields, ...(csrf ? { _csrf: csrf } : {}) }) : {}
      return fetch(`${server.url}${path}`, { method, redirect: 'manual', headers: { ...headers }, ...body })
    }
    const json = { accept: 'application/json' }
    const anonymous = await send({})
    if (method === 'GET') {
      expect(anonymous.status).toBe(303)
      expect(anonymous.headers.get('location')).toMatch(/^\/login\?next=%2Fadmin/)
    } else {
      expect(anonymous.status).toBe(401)
    }
    const codeOf = async (response: Response) => [response.status, ((await response.json()) as { error: { code: string } }).error.code]
    expect(await codeOf(await send({ ...json, cookie: bobSession.cookie }, { csrf: bobSession.csrf }))).toEqual([403, 'admin_required'])
    expect(await codeOf(await send({ ...json, authorization: `Bearer ${bob.token}` }))).toEqual([403, 'admin_required'])
    expect(await codeOf(await send({ ...json, authorization: `Bearer ${ada.token}` }))).toEqual([403, 'session_required'])
    if (method === 'POST') expect(await codeOf(await send({ ...json, cookie: adaSession.cookie }))).toEqual([403, 'csrf'])
    const admin = await send({ cookie: adaSession.cookie }, { csrf: adaSession.csrf })
    expect(admin.status).toBe(ok)
    if (ok === 303) expect(admin.headers.get('location')).toBe('/admin/users')
    if (ok !== 303) expect(admin.headers.get('cache-control')).toBe('no-store')
  })
})

describe('the Users page', () => {
  it('lists every account with role, dates, state and live tokens, in the admin frame, and never a secret', async () => {
    const html = await (await asSession(adaSession, '/admin/users')).text()
    expect(html).toContain('<nav class="settings-nav" aria-label="Administration sections">')
    for (const href of ['/admin/users', '/admin/models', '/admin/retrieval']) expect(html).toContain(`href="${href}"`)
    expect(html).toMatch(/<tr data-login="bob"><td><strong>bob<\/strong><\/td><td data-label="Role">member<\/td><td data-label="Created">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/td><td data-label="Last sign-in">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/td><td data-label="State">enabled<\/td><td data-label="API tokens">1<\/td>/)
    expect(html).toMatch(/<tr data-login="ada"><td><strong>ada<\/strong><span class="muted"> \(you\)<\/span><\/td><td data-label="Role">admin<\/td>/)
    expect(html).not.toContain(ada.token)
    expect(html).not.toContain(bob.password)
    // the top bar of an admin's settings page links here; a member's does not
    expect(await (await asSession(adaSession, '/settings')).text()).toContain('href="/admin/users">Administration</a>')
    expect(await (await asSession(bobSession, '/settings')).text()).not.toContain('Administration')
  })

  it('adds a user whose generated password is shown once: a reload shows it no more and adds no second user', async () => {
    const fields = { _csrf: adaSession.csrf, login: 'carol', role: 'member', _once: randomUUID() }
    const added = await asSession(adaSession, '/admin/users', fields)
    expect(added.status).toBe(201)
    expect(added.headers.get('cache-control')).toBe('no-store')
    const html = await added.text()
    const password = shownPassword(html, 'carol')!
    expect(html).toContain('Added carol as a member.')
    expect(html).toContain('shown only this once')
    await signIn(server, 'carol', password) // the shown password signs in

    const reload = await asSession(adaSession, '/admin/users', fields) // the same form, sent again
    expect(reload.status).toBe(200)
    const again = await reload.text()
    expect(again).not.toContain(password)
    expect(shownPassword(again, 'carol')).toBeUndefined()
    expect(statusOf(again)).toContain('This form already added its user')
    expect(await (await asSession(adaSession, '/admin/users')).text()).not.toContain(password)
    expect(await signIn(server, 'carol', password)).toBeTruthy() // not replaced by a second one

    const duplicate = await asSession(adaSession, '/admin/users', { ...fields, _once: randomUUID() })
    expect(duplicate.status).toBe(400)
    expect(alertOf(await duplicate.text())).toBe('user &quot;carol&quot; already exists')

    const admin = await asSession(adaSession, '/admin/users', { _csrf: adaSession.csrf, login: 'dora', role: 'admin', _once: randomUUID() })
    expect(await admin.text()).toContain('Added dora as an admin.')
    expect((await findUserByLogin(server.database.db, 'dora'))?.role).toBe('admin')
    const badLogin = await asSession(adaSession, '/admin/users', { _csrf: adaSession.csrf, login: 'Not Valid', role: 'member', _once: randomUUID() })
    expect(badLogin.status).toBe(400)
    expect(alertOf(await badLogin.text())).toContain('invalid login')
  })

  it('resets a password shown once, ending the user\'s sessions and revoking their tokens, and says so', async () => {
    const erin = await addUserWithToken(server, 'erin')
    const erinSession = await signIn(server, 'erin', erin.password)
    expect(await sessionWorks(erinSession.cookie)).toBe(true)
    const fields = { _csrf: adaSession.csrf, _once: randomUUID() }
    const reset = await asSession(adaSession, '/admin/users/erin/password', fields)
    expect(reset.status).toBe(200)
    const html = await reset.text()
    const password = shownPassword(html, 'erin')!
    expect(html).toContain('1 browser session ended and 1 API token revoked: erin signs in again with this password.')
    expect(await sessionWorks(erinSession.cookie)).toBe(false)
    expect(await tokenWorks(erin.token)).toBe(false)
    await expect(signIn(server, 'erin', erin.password)).rejects.toThrow('401')
    await signIn(server, 'erin', password)

    const reload = await (await asSession(adaSession, '/admin/users/erin/password', fields)).text()
    expect(reload).not.toContain(password)
    expect(statusOf(reload)).toContain('This form already reset the password of erin')
    await signIn(server, 'erin', password) // still the one shown
  })

  it('promotes and demotes; refuses, with a message and nothing changed, what would leave no enabled admin or names nobody', async () => {
    await addScratch('fay')
    const promoted = await asSession(adaSession, '/admin/users/fay/role', { _csrf: adaSession.csrf, role: 'admin' })
    expect(statusOf(await promoted.text())).toBe('fay is now an admin.')
    const demoted = await asSession(adaSession, '/admin/users/fay/role', { _csrf: adaSession.csrf, role: 'member' })
    expect(statusOf(await demoted.text())).toBe('fay is now a member.')

    // A server whose only admin is ada: every change that would leave none is refused.
    const lone = await startTestServer()
    try {
      await createUser(lone.database.db, { login: 'ada', password: ada.password, hashCost: TEST_PASSWORD_COST })
      await createUser(lone.database.db, { login: 'bob', password: bob.password, hashCost: TEST_PASSWORD_COST })
      const session = await signIn(lone, 'ada', ada.password)
      const post = (path: string, fields: Record<string, string>) => fetch(`${lone.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie: session.cookie }, ...form({ _csrf: session.csrf, ...fields }) })
      const refusal = '&quot;ada&quot; is the last enabled admin: promote another account first'
      for (const [path, fields] of [
        ['/admin/users/ada/role', { role: 'member' }],
        ['/admin/users/ada/disable', {}],
        ['/admin/users/ada/delete', { confirm: 'ada' }],
      ] as const) {
        const response = await post(path, fields)
        expect(response.status).toBe(409)
        expect(alertOf(await response.text())).toBe(refusal)
      }
      const confirmation = await fetch(`${lone.url}/admin/users/ada/delete`, { headers: { cookie: session.cookie } })
      expect(confirmation.status).toBe(409)
      expect(alertOf(await confirmation.text())).toBe(refusal)
      expect((await findUserByLogin(lone.database.db, 'ada'))?.role).toBe('admin')
      expect(await (await fetch(`${lone.url}/admin/users`, { headers: { cookie: session.cookie } })).text()).toMatch(/<tr data-login="ada">.*?>admin<\/td>.*?>enabled<\/td>/)
      for (const path of ['/admin/users/nobody/disable', '/admin/users/nobody/enable', '/admin/users/nobody/password']) {
        const response = await post(path, path.endsWith('password') ? { _once: randomUUID() } : {})
        expect(response.status).toBe(404)
        expect(alertOf(await response.text())).toBe('no user &quot;nobody&quot;')
      }
      expect((await fetch(`${lone.url}/admin/users/nobody/delete`, { headers: { cookie: session.cookie } })).status).toBe(404)
    } finally {
      await lone.close()
    }
  })

  it('disabling ends a signed-in session at its next request and revokes the tokens; enabling lets the user sign in again', async () => {
    const gus = await addUserWithToken(server, 'gus')
    const gusSession = await signIn(server, 'gus', gus.password)
    expect(await sessionWorks(gusSession.cookie)).toBe(true)
    const disabled = await asSession(adaSession, '/admin/users/gus/disable', { _csrf: adaSession.csrf })
    expect(statusOf(await disabled.text())).toBe('gus is disabled: 1 browser session ended and 1 API token revoked. Signing in is refused until the account is enabled.')
    const next = await fetch(`${server.url}/workspace`, { redirect: 'manual', headers: { cookie: gusSession.cookie } })
    expect(next.status).toBe(303)
    expect(next.headers.get('location')).toMatch(/^\/login/)
    expect(await tokenWorks(gus.token)).toBe(false)
    await expect(signIn(server, 'gus', gus.password)).rejects.toThrow('403')
    // a token or session made for the disabled account some other way (the CLI, a database tool) does not work either
    const lateToken = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'gus' })
    expect(await tokenWorks(lateToken)).toBe(false)
    const late = await createSession(server.database.db, { secret: TEST_SECRET, userId: gus.user.id, ttlHours: 1 })
    expect(await sessionWorks(`ka_session=${late.token}`)).toBe(false)

    const enabled = await asSession(adaSession, '/admin/users/gus/enable', { _csrf: adaSession.csrf })
    expect(statusOf(await enabled.text())).toContain('gus is enabled')
    await signIn(server, 'gus', gus.password)
  })

  it('deletes after a confirmation that says what goes and offers the export first; a wrong confirmation deletes nothing', async () => {
    const hal = await addScratch('hal')
    await putText(server.database.db, { owner: hal, segments: ['notes.md'], text: '# notes' })
    await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login: 'hal' })
    const confirmation = await (await asSession(adaSession, '/admin/users/hal/delete')).text()
    expect(confirmation).toContain('<h1>Delete hal</h1>')
    expect(confirmation).toContain('<li>1 file with 1 version (7 B)</li>')
    expect(confirmation).toContain('<li>1 live API token</li>')
    expect(confirmation).toContain('Export it first if it is worth keeping: knowagent export kb://users/hal/ hal.zip --user hal')
    const wrong = await asSession(adaSession, '/admin/users/hal/delete', { _csrf: adaSession.csrf, confirm: 'ha' })
    expect(wrong.status).toBe(400)
    expect(alertOf(await wrong.text())).toBe('Nothing was deleted: type &quot;hal&quot; to confirm.')
    expect(await findUserByLogin(server.database.db, 'hal')).toBeDefined()
    const deleted = await asSession(adaSession, '/admin/users/hal/delete', { _csrf: adaSession.csrf, confirm: 'hal' })
    expect(statusOf(await deleted.text())).toBe('hal is deleted, with everything the account owned.')
    expect(await findUserByLogin(server.database.db, 'hal')).toBeUndefined()
    expect(await (await asSession(adaSession, '/admin/users')).text()).not.toContain('data-login="hal"')
  })

  it('an admin who demotes themselves lands on Settings without the Administration link; one who disables themselves is signed out', async () => {
    await createUser(server.database.db, { login: 'ivy', password: 'password-ivy', hashCost: TEST_PASSWORD_COST, role: 'admin' })
    const ivy = await signIn(server, 'ivy', 'password-ivy')
    const demoted = await asSession(ivy, '/admin/users/ivy/role', { _csrf: ivy.csrf, role: 'member' })
    expect([demoted.status, demoted.headers.get('location')]).toEqual([303, '/settings'])
    expect(await (await asSession(ivy, '/settings')).text()).not.toContain('Administration')
    expect((await asSession(ivy, '/admin/users')).status).toBe(403)

    await createUser(server.database.db, { login: 'jo', password: 'password-jo', hashCost: TEST_PASSWORD_COST, role: 'admin' })
    const jo = await signIn(server, 'jo', 'password-jo')
    const disabled = await asSession(jo, '/admin/users/jo/disable', { _csrf: jo.csrf })
    expect([disabled.status, disabled.headers.get('location')]).toEqual([303, '/login'])
    expect(await sessionWorks(jo.cookie)).toBe(false)
  })

  it('leaves an audit line for every change — who, what, which account — and never a password', async () => {
    const lines = auditLines()
    const seen = new Set(lines.map((line) => line.action))
    for (const action of ['user.add', 'user.password_reset', 'user.promote', 'user.demote', 'user.disable', 'user.enable', 'user.delete']) expect(seen).toContain(action)
    expect(lines.find((line) => line.action === 'user.disable' && line.target === 'gus')).toMatchObject({ level: 'info', by: 'ada' })
    const everything = server.logLines.join('\n')
    expect(everything).not.toMatch(/"password":"[^[]/)
    for (const line of lines) expect(Object.keys(line).sort()).toEqual(expect.arrayContaining(['by', 'action', 'target']))
  })
})
