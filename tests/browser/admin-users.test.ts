// Administration → Users in Chromium (issue 36): an admin reaches it from the top bar, adds a
// member whose password is shown once, and that member signs in with it in another browser — and
// finds no Administration link, and a 403 at /admin/users. At desktop and phone width, without
// errors or CSP violations; a screenshot of the page is kept under test-artifacts/browser/.
import { describe, expect, it } from 'vitest'
import { screenshot, SECURE_PAGE, useBrowserFixture } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'

const ui = useBrowserFixture({ start: startChatWorkspace }) // alice, the first user, is an admin

describe.each([
  { name: 'desktop', viewport: { width: 1360, height: 860 }, newLogin: 'dana' },
  { name: 'phone width', viewport: { width: 390, height: 844 }, newLogin: 'dana-phone' },
])('Administration → Users ($name)', ({ name, viewport, newLogin }) => {
  const workspace = ui.workspace(SECURE_PAGE)

  it('an admin adds a member with a one-time password, and the member signs in with it', async () => {
    const page = await workspace.open({ viewport })
    await page.getByRole('link', { name: 'Administration' }).click()
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/admin/users')
    await expect(page.locator('nav[aria-label="Administration sections"] a[aria-current="page"]').textContent()).resolves.toBe('Users')

    await page.getByRole('textbox', { name: 'Login' }).fill(newLogin)
    await page.getByRole('combobox', { name: 'Role' }).selectOption('member')
    await page.getByRole('button', { name: 'Add user' }).click()
    const password = (await page.getByLabel(`The new password for ${newLogin}`, { exact: true }).textContent())!
    expect(password).toMatch(/^[A-Za-z0-9_-]{16}$/)
    await expect(page.getByRole('row').filter({ hasText: newLogin }).getByRole('cell').nth(1).textContent()).resolves.toBe('member')
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await screenshot(page, `admin-users-${name.replace(/\W+/g, '-')}`)

    await page.goto('/admin/users')
    await expect(page.locator('body').textContent()).resolves.not.toContain(password)

    const member = await ui.browser.newContext({ viewport, baseURL: ui.app.server.url })
    try {
      const signIn = await member.newPage()
      await signIn.goto('/login')
      await signIn.getByRole('textbox', { name: 'Login' }).fill(newLogin)
      await signIn.getByLabel('Password').fill(password)
      await signIn.getByRole('button', { name: 'Sign in' }).click()
      await signIn.waitForURL('**/workspace')
      await expect(signIn.locator('.topbar .who').textContent()).resolves.toBe(newLogin)
      await expect(signIn.getByRole('link', { name: 'Administration' }).count()).resolves.toBe(0)
      const refused = await signIn.goto('/admin/users')
      expect(refused?.status()).toBe(403)
    } finally {
      await member.close()
    }
    expect(workspace.problems()).toEqual([])
  })
})
