// Settings → Retrieval services in Chromium: the API key is never echoed back (not in the field,
// not in the HTML source), clearing a field falls back to the next layer and says where the value
// now comes from, service ids are offered from the cache, and "Refresh now" updates the
// diagnostics in place. Also at phone width, without errors or CSP violations.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { releaseSharedBrowser, sharedBrowser } from '../support/browser.ts'
import { type FakeBailian, startFakeBailian } from '../support/fake-bailian.ts'
import { addUserWithToken, signIn, startTestServer, type TestServer } from '../support/test-server.ts'

const KEY = 'sk-browser-bailian-key-93e1'
let fake: FakeBailian
let server: TestServer
let browser: Browser
let login: { cookie: string }
let context: BrowserContext | undefined
let problems: string[] = []

beforeAll(async () => {
  fake = await startFakeBailian({
    workspaces: {
      'ws-config': {
        apiKey: KEY,
        services: [
          { agent_id: 'search-handbook', agent_name: 'Handbook search', scene: 'search' },
          { agent_id: 'chat-handbook', agent_name: 'Handbook Q&A', scene: 'chat' },
        ],
      },
    },
  })
  ;[server, browser] = await Promise.all([
    startTestServer({
      retrieval: true,
      env: { BAILIAN_DEFAULT_CHAT_AGENT_ID: 'chat-from-env' },
      configure: (config) => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: fake.endpointHost, workspaceId: 'ws-config' }) }),
    }),
    sharedBrowser(),
  ])
  const alice = await addUserWithToken(server, 'alice')
  login = await signIn(server, 'alice', alice.password)
})
afterEach(async () => {
  expect(problems).toEqual([])
  await context?.close()
  context = undefined
})
afterAll(async () => {
  await releaseSharedBrowser(browser)
  await server?.close()
  await fake?.close()
})

async function openSettings({ width = 1280 }: { width?: number } = {}): Promise<Page> {
  problems = []
  context = await browser.newContext({ viewport: { width, height: 900 }, baseURL: server.url })
  context.setDefaultTimeout(10_000)
  const [name, value] = login.cookie.split('=') as [string, string]
  await context.addCookies([{ name, value, url: server.url }])
  const page = await context.newPage()
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`))
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(`console: ${message.text()}`)
  })
  await page.goto('/settings/retrieval')
  return page
}

const sourceOf = (page: Page, field: string) => page.getByTestId(`${field}-source`).textContent()

describe('Settings → Retrieval services', () => {
  test('the API key is written, never shown: not in the field, not in the HTML source', async () => {
    const page = await openSettings()
    await expect(page.getByTestId('api-key-status').textContent()).resolves.toBe('not configured')
    await page.getByLabel('API key').fill(KEY)
    await expect(page.getByLabel('API key').getAttribute('type')).resolves.toBe('password')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await expect(page.getByTestId('api-key-status').textContent()).resolves.toBe('configured')
    await expect(page.getByLabel('API key').inputValue()).resolves.toBe('')
    expect(await page.content()).not.toContain(KEY)
    const source = await (await fetch(`${server.url}/settings/retrieval`, { headers: { cookie: login.cookie } })).text()
    expect(source).not.toContain(KEY)
    // Saving the form again without typing a key keeps the stored one.
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await expect(page.getByTestId('api-key-status').textContent()).resolves.toBe('configured')
  })

  test('clearing a field falls back to the next layer and shows where the value now comes from', async () => {
    const page = await openSettings()
    const workspace = page.getByLabel('Workspace id')
    await expect(workspace.inputValue()).resolves.toBe('ws-config')
    await expect(sourceOf(page, 'workspace_id')).resolves.toBe('the server config file (retrieval.bailian)')
    await workspace.fill('ws-mine')
    await page.getByLabel('Default chat service (kb_chat)').fill('chat-mine')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await expect(workspace.inputValue()).resolves.toBe('ws-mine')
    await expect(sourceOf(page, 'workspace_id')).resolves.toBe('your settings')
    await expect(sourceOf(page, 'default_chat_agent_id')).resolves.toBe('your settings')

    await workspace.fill('')
    await page.getByLabel('Default chat service (kb_chat)').fill('')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await expect(workspace.inputValue()).resolves.toBe('ws-config')
    await expect(sourceOf(page, 'workspace_id')).resolves.toBe('the server config file (retrieval.bailian)')
    await expect(page.getByLabel('Default chat service (kb_chat)').inputValue()).resolves.toBe('chat-from-env')
    await expect(sourceOf(page, 'default_chat_agent_id')).resolves.toBe('from environment (BAILIAN_DEFAULT_CHAT_AGENT_ID)')
  })

  test('service ids are offered from the cache, and "Refresh now" updates the diagnostics in place', async () => {
    const page = await openSettings()
    await page.getByRole('button', { name: 'Refresh now' }).click()
    await page.getByTestId('cache-message').filter({ hasText: 'Refreshed just now.' }).waitFor()
    await expect(page.getByTestId('cache-chat-services').textContent()).resolves.toBe('1')
    const firstFetch = await page.getByTestId('cache-fetched-at').locator('time').getAttribute('datetime')
    await page.reload()
    await expect(page.locator('#default_retrieve_agent_id_options option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).resolves.toEqual(['search-handbook'])

    fake.workspace('ws-config')!.services.push({ agent_id: 'chat-legal', agent_name: 'Legal Q&A', scene: 'chat' })
    const url = page.url()
    await page.getByRole('button', { name: 'Refresh now' }).click()
    await page.getByTestId('cache-message').filter({ hasText: 'Refreshed just now.' }).waitFor()
    await expect(page.getByTestId('cache-chat-services').textContent()).resolves.toBe('2')
    expect(page.url()).toBe(url) // swapped in place by htmx, no navigation
    const secondFetch = await page.getByTestId('cache-fetched-at').locator('time').getAttribute('datetime')
    expect(Date.parse(secondFetch!)).toBeGreaterThanOrEqual(Date.parse(firstFetch!))
    await expect(page.getByTestId('cache-last-error').textContent()).resolves.toBe('none')

    // A failing refresh says so and keeps the counts it had.
    fake.enqueue('list', { kind: 'response', status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'ServiceUnavailable', message: 'try later' }) })
    await page.getByRole('button', { name: 'Refresh now' }).click()
    await page.getByTestId('cache-message').filter({ hasText: 'The refresh failed' }).waitFor()
    await expect(page.getByTestId('cache-chat-services').textContent()).resolves.toBe('2')
    await expect(page.getByTestId('cache-last-error').textContent()).resolves.toContain('ServiceUnavailable: try later')
  })

  test('usable at phone width: nothing overflows sideways', async () => {
    const page = await openSettings({ width: 390 })
    await page.getByRole('button', { name: 'Save' }).waitFor()
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
  })
})
