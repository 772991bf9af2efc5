// Admin → Model connections in Chromium (issue 36): the administrator adds a connection to a
// local OpenAI-compatible server, presses Test, offers two of its models; a member already signed
// in sees them in the model picker on the next page load and gets an answer from one; the
// administrator takes one away and it disappears from the member's picker. The key appears in no
// page. A screenshot of /admin/models is kept under test-artifacts/browser/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { ARTIFACTS_DIR, ask, releaseSharedBrowser, screenshot, sharedBrowser, waitForAnswer, assistantMessage } from '../support/browser.ts'
import { startKeyedProvider } from '../support/model-connections.ts'
import type { ScriptedProvider } from '../support/scripted-provider.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

const API_KEY = 'prov-browser-Key-7e1a55c0d9'

describe('Admin → Model connections in the browser', () => {
  let server: TestServer
  let provider: ScriptedProvider
  let browser: Browser
  const contexts: BrowserContext[] = []
  const problems: string[] = []
  let passwords: Record<string, string>

  const signedInPage = async (login: string, viewport = { width: 1280, height: 900 }): Promise<Page> => {
    const { cookie } = await signIn(server, login, passwords[login]!)
    const [name, value] = cookie.split('=') as [string, string]
    const context = await browser.newContext({ viewport, baseURL: server.url })
    context.setDefaultTimeout(10_000)
    contexts.push(context)
    await context.addCookies([{ name, value, url: server.url }])
    const page = await context.newPage()
    page.on('pageerror', (error) => problems.push(`${login} pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (/Failed to load resource/.test(message.text())) return // answers are checked by URL below
      if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(`${login} console: ${message.text()}`)
    })
    page.on('response', (response) => {
      if (response.status() >= 400 && !(login === 'max' && new URL(response.url()).pathname === '/admin/models')) problems.push(`${login} ${response.status()} ${response.url()}`)
    })
    return page
  }
  const pickerOptions = (page: Page) => page.locator('#chat-model option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))

  beforeAll(async () => {
    provider = await startKeyedProvider({ apiKey: API_KEY })
    server = await startTestServer({ configure: (config) => ({ ...config, streamsPerMinute: 1000 }) })
    const admin = await addUserWithToken(server, 'ada') // the first account: an administrator
    const member = await addUserWithToken(server, 'max')
    passwords = { ada: admin.password, max: member.password }
    browser = await sharedBrowser()
  })

  afterAll(async () => {
    for (const context of contexts) await context.close()
    await releaseSharedBrowser(browser)
    await server?.close()
    await provider?.close()
  })

  it('adds, tests and offers a connection\'s models; a signed-in member uses one; one taken away disappears', async () => {
    const member = await signedInPage('max')
    await member.goto('/workspace')
    expect(await pickerOptions(member)).toEqual(['local'])
    // A member reaching the page by its address is refused.
    expect((await member.goto('/admin/models'))!.status()).toBe(403)

    const admin = await signedInPage('ada')
    await admin.goto('/workspace')
    await admin.getByRole('link', { name: 'Administration' }).waitFor()
    await admin.goto('/admin/models')
    await admin.getByRole('heading', { name: 'Model connections', level: 1 }).waitFor()
    const add = admin.locator('section', { has: admin.getByRole('heading', { name: 'Add a connection' }) })
    await add.getByLabel('Name').fill('Local server')
    await add.getByLabel('Base URL').fill(provider.baseUrl)
    await add.getByLabel('API key', { exact: true }).fill(API_KEY)
    await add.getByRole('button', { name: 'Add connection' }).click()
    await admin.getByRole('status').filter({ hasText: 'The connection was added' }).waitFor()
    const card = admin.getByTestId('connection')
    await expect(card.getByTestId('api-key-status').textContent()).resolves.toBe('configured')

    await card.getByRole('button', { name: 'Test' }).click()
    await admin.getByTestId('test-result').filter({ hasText: 'OK: the provider lists 3 models.' }).waitFor()
    await expect(admin.getByTestId('test-result').textContent()).resolves.toContain('Chat with gpt-4o: OK')
    await admin.getByRole('checkbox', { name: 'Offer gpt-4o' }).check()
    await admin.getByRole('checkbox', { name: 'Offer qwen-plus' }).check()
    await admin.getByRole('textbox', { name: 'Display name of qwen-plus' }).fill('Qwen Plus (local)')
    await admin.getByRole('button', { name: 'Save models' }).click()
    await admin.getByRole('status').filter({ hasText: 'The models were saved' }).waitFor()
    await expect(admin.getByTestId('offered-models').textContent()).resolves.toContain('Qwen Plus (local)')
    await screenshot(admin, 'admin-models')
    await admin.screenshot({ path: `${ARTIFACTS_DIR}admin-models-full.png`, fullPage: true })
    expect(await admin.content()).not.toContain(API_KEY)

    // The member, still signed in, sees both on the next page load and gets an answer from one.
    await member.goto('/workspace')
    await member.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    expect(await pickerOptions(member)).toEqual(['gpt-4o', 'qwen-plus', 'local'])
    await member.locator('#chat-model').selectOption('qwen-plus')
    await ask(member, 'Who answers?')
    await waitForAnswer(member)
    await expect(assistantMessage(member).textContent()).resolves.toContain('Answer from qwen-plus.')
    const chat = provider.requests.filter((request) => request.method === 'POST').at(-1)!
    expect(chat.headers.authorization).toBe(`Bearer ${API_KEY}`)

    // The administrator takes gpt-4o away: gone from the member's picker on the next load.
    await admin.getByRole('checkbox', { name: 'Offer gpt-4o' }).uncheck()
    await admin.getByRole('button', { name: 'Save models' }).click()
    await admin.getByRole('status').filter({ hasText: 'The models were saved' }).waitFor()
    await member.goto('/workspace')
    await member.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    expect(await pickerOptions(member)).toEqual(['qwen-plus', 'local'])
    expect(await member.content()).not.toContain(API_KEY)

    // Usable at phone width.
    await admin.setViewportSize({ width: 390, height: 844 })
    await admin.goto('/admin/models')
    await screenshot(admin, 'admin-models-phone')
    const wide = await admin.evaluate(() => [...document.querySelectorAll('body *')].filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1 && !element.closest('.model-table-scroll')).map((element) => `${element.tagName}.${element.className}`).slice(0, 8))
    expect(wide).toEqual([])
    expect(await admin.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    expect(problems).toEqual([])
  })
})
