// Administration → Retrieval defaults in Chromium: an administrator changes the kb_chat time limit
// and, after a reload, sees it in force and stored here; a refused value leaves it as it was; the
// config file's value comes back with one button. Also at phone width, without errors or CSP
// violations.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { ARTIFACTS_DIR, releaseSharedBrowser, screenshot, sharedBrowser } from '../support/browser.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

let server: TestServer
let browser: Browser
let login: { cookie: string }
let adminId: string
let context: BrowserContext | undefined
let problems: string[] = []

beforeAll(async () => {
  ;[server, browser] = await Promise.all([
    startTestServer({
      retrieval: true,
      configure: (config) => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: 'http://127.0.0.1:9/ws/{workspaceId}', chatTimeoutMs: 120_000 }) }),
    }),
    sharedBrowser(),
  ])
  const admin = await addUserWithToken(server, 'root') // the first account is an administrator
  adminId = admin.user.id
  login = await signIn(server, 'root', admin.password)
})
afterEach(async () => {
  expect(problems).toEqual([])
  await context?.close()
  context = undefined
})
afterAll(async () => {
  await releaseSharedBrowser(browser)
  await server?.close()
})

async function openPage({ width = 1280 }: { width?: number } = {}): Promise<Page> {
  problems = []
  context = await browser.newContext({ viewport: { width, height: 900 }, baseURL: server.url })
  context.setDefaultTimeout(10_000)
  const [name, value] = login.cookie.split('=') as [string, string]
  await context.addCookies([{ name, value, url: server.url }])
  const page = await context.newPage()
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(`console: ${message.text()}`)
  })
  await page.goto('/admin/retrieval')
  return page
}

const text = (page: Page, testId: string) => page.getByTestId(testId).textContent()

describe('Administration → Retrieval defaults', () => {
  test('an administrator changes chatTimeoutMs and sees it in force after a reload', async () => {
    const page = await openPage()
    await expect(text(page, 'chatTimeoutMs-in-force')).resolves.toBe('120000')
    await expect(text(page, 'chatTimeoutMs-source')).resolves.toBe('the config file (retrieval.bailian)')
    await expect(page.getByRole('link', { name: 'Retrieval defaults' }).getAttribute('aria-current')).resolves.toBe('page')

    const field = page.getByLabel('New chat time limit (ms)')
    await field.fill('90000')
    await page.getByRole('button', { name: 'Save chat time limit (ms)' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    await page.reload()
    await expect(text(page, 'chatTimeoutMs-in-force')).resolves.toBe('90000')
    await expect(text(page, 'chatTimeoutMs-source')).resolves.toBe('stored here (for every server on this database)')
    await expect(field.inputValue()).resolves.toBe('90000')
    expect((await server.ctx.retrieval!.settings.resolve(adminId)).chatTimeoutMs).toBe(90_000) // in force in the server, not only on the page

    // a refused value says why and leaves the value in force as it was
    await field.fill('soon')
    await page.getByRole('button', { name: 'Save chat time limit (ms)' }).click()
    await page.getByTestId('chatTimeoutMs-error').waitFor()
    await expect(page.getByRole('alert').textContent()).resolves.toContain('chatTimeoutMs must be a whole number of milliseconds from 1000 to 3600000')
    await expect(text(page, 'chatTimeoutMs-in-force')).resolves.toBe('90000')
    expect(problems.splice(0)).toEqual([expect.stringContaining('status of 400')]) // the refusal's own status, logged by Chromium
    await screenshot(page, 'admin-retrieval')
    await page.locator('#setting-chatTimeoutMs').screenshot({ path: `${ARTIFACTS_DIR}admin-retrieval-refused.png` })

    await page.getByRole('button', { name: "Back to the config file's value for chat time limit (ms)" }).click()
    await page.getByRole('status').filter({ hasText: 'Back to the config file' }).waitFor()
    await expect(text(page, 'chatTimeoutMs-in-force')).resolves.toBe('120000')
    await expect(text(page, 'chatTimeoutMs-source')).resolves.toBe('the config file (retrieval.bailian)')
    await expect(page.getByRole('button', { name: "Back to the config file's value for chat time limit (ms)" }).count()).resolves.toBe(0)
  })

  test('usable at phone width: nothing overflows sideways', async () => {
    const page = await openPage({ width: 390 })
    await page.getByRole('button', { name: 'Save endpoint host' }).waitFor()
    await screenshot(page, 'admin-retrieval-phone')
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
  })
})
