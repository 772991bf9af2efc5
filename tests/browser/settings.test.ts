// The settings page in Chromium: reached from the workspace header, a token created through the
// form is shown once and works, its Revoke button ends it; usable at phone width.
import { describe, expect, it } from 'vitest'
import { useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'

const ui = useBrowserFixture({ start: startChatWorkspace })
const asToken = (token: string) => fetch(`${ui.app.server.url}/api/v1/workspace/node?uri=kb://me/`, { headers: { authorization: `Bearer ${token}` } })

describe.each([
  { name: 'desktop', viewport: { width: 1360, height: 860 } },
  { name: 'phone width', viewport: { width: 390, height: 844 } },
])('settings ($name)', ({ name, viewport }) => {
  const workspace = ui.workspace(SECURE_PAGE)

  it('creates a token shown once, lists it, and revokes it', async () => {
    const page = await workspace.open({ viewport })
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('heading', { name: 'Account and API tokens' }).waitFor()
    await expect(page.locator('nav[aria-label="Settings sections"] a[aria-current="page"]').textContent()).resolves.toBe('Account and API tokens')

    await page.getByRole('textbox', { name: 'Token name' }).fill(`script on ${name}`)
    await page.getByRole('button', { name: 'Create token' }).click()
    const token = (await page.getByLabel('The new API token').textContent())!
    expect(token).toMatch(/^ka_[A-Za-z0-9_-]{43}$/)
    expect((await asToken(token)).status).toBe(200)
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)

    await page.goto('/settings')
    await expect(page.locator('body').textContent()).resolves.not.toContain(token)
    await page.getByRole('button', { name: `Revoke token script on ${name}` }).click()
    await page.getByRole('status').filter({ hasText: 'Token revoked' }).waitFor()
    await expect(page.getByRole('button', { name: `Revoke token script on ${name}` }).count()).resolves.toBe(0)
    expect((await asToken(token)).status).toBe(401)
    expect(workspace.problems()).toEqual([])
  })
})
