// The workspace page around the chat: the lazily loaded tree, previews, the conversation rules
// (same directory keeps it, another directory cancels and restarts it), the resizable divider
// and the phone-width layout.
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { ask, assistantMessage, screenshot, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace } from '../support/chat-workspace.ts'
import { chatCompletionSse, streamScript, textAnswerSse } from '../support/scripted-provider.ts'

// One app, one scripted provider and one browser for the whole file; each scenario runs in
// a fresh browser context (the page without crypto.randomUUID: lan-page.test.ts).
const ui = useBrowserFixture({ start: startChatWorkspace })

describe('the workspace page', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)
  const open = workspace.open
  const treeItem = (page: Page, name: string) => page.locator('#tree li.node', { has: page.locator(':scope > .row .name', { hasText: new RegExp(`^${name}$`) }) })
  const historyLength = (page: Page) => page.locator('#chat-history').inputValue().then((value) => (JSON.parse(value) as unknown[]).length)

  it('loads a directory’s children when it is expanded and previews files in place', async () => {
    const page = await open()
    const docs = treeItem(page, 'docs')
    await expect(docs.locator('li.node').count()).resolves.toBe(0) // not loaded yet
    const loaded = page.waitForResponse((r) => r.url().includes('/workspace/tree?uri=') && r.status() === 200)
    await docs.getByRole('button', { name: 'Expand docs' }).click()
    await loaded
    await expect(docs.locator(':scope > ul > li .name').allTextContents()).resolves.toEqual(['deep', 'a.md', 'b.txt'])
    await expect(docs.getByRole('button', { name: 'Collapse docs' }).getAttribute('aria-expanded')).resolves.toBe('true')

    await treeItem(page, 'a.md').getByRole('link').click()
    await page.locator('#content .markdown h1', { hasText: 'Alpha' }).waitFor()
    await expect(page.locator('#content .markdown strong').textContent()).resolves.toBe('forty-two')
    expect(new URL(page.url()).searchParams.get('uri')).toBe('kb://users/alice/docs/a.md')
    await expect(treeItem(page, 'a.md').getByRole('link').getAttribute('aria-current')).resolves.toBe('page')

    await treeItem(page, 'b.txt').getByRole('link').click()
    await expect(page.locator('#content pre.text').textContent()).resolves.toContain('Bravo notes')
    await docs.getByRole('button', { name: 'Collapse docs' }).click()
    await expect(docs.locator(':scope > ul').isHidden()).resolves.toBe(true)
    await screenshot(page, `desktop-preview-${mode.randomUUID ? 'uuid' : 'no-uuid'}`)
    expect(workspace.problems()).toEqual([])
  })

  it('keeps the conversation while previewing files of the same directory; another directory cancels the stream and starts anew', async () => {
    const { provider, server } = ui.app
    const page = await open({ uri: 'kb://users/alice/docs/a.md' })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe('kb://users/alice/docs/')
    provider.enqueue(streamScript(textAnswerSse('Forty-two, from a.md.')))
    await ask(page, 'What does a.md say?')
    await waitForAnswer(page)

    await treeItem(page, 'b.txt').getByRole('link').click()
    await page.locator('#content pre.text').waitFor()
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2)
    await expect(historyLength(page)).resolves.toBe(2)
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe('kb://users/alice/docs/')

    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'Thinking about b…' }]) }], end: 'hang' })
    const response = page.waitForResponse((r) => r.url().includes('/workspace/chat/stream'))
    await ask(page, 'And b.txt?')
    const turnId = (await response).headers()['x-turn-id']!
    await assistantMessage(page, 2).locator('.answer', { hasText: 'Thinking about b' }).waitFor()
    const streaming = provider.requests.length - 1

    await treeItem(page, 'other').getByRole('link').click()
    await page.locator('#chat-welcome', { hasText: 'Ask about other/' }).waitFor()
    await provider.waitForClientClose(streaming, { timeoutMs: 5000 })
    await expect.poll(async () => (await findTurn(server.database.db, turnId))?.status, { timeout: 5000 }).toBe('cancelled')
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(0)
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe('kb://users/alice/other/')
    await expect(historyLength(page)).resolves.toBe(0)
    await expect(page.getByRole('button', { name: 'Send' }).isVisible()).resolves.toBe(true)

    provider.enqueue(streamScript(textAnswerSse('Delta lives here.')))
    await ask(page, 'What is here?')
    await waitForAnswer(page)
    const sent = provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string | null }> }
    expect(sent.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['What is here?'])
    expect(workspace.problems()).toEqual([])
  })

  it('resizes the chat with the divider by mouse and keyboard, and remembers the width', async () => {
    const page = await open()
    const divider = page.getByRole('separator', { name: 'Resize the chat panel' })
    const chatWidth = () => page.locator('#chat-panel').evaluate((element) => element.getBoundingClientRect().width)
    await expect(divider.getAttribute('aria-valuenow')).resolves.toBe('40')
    const before = await chatWidth()
    await divider.focus()
    await page.keyboard.press('ArrowLeft')
    await page.keyboard.press('ArrowLeft')
    await expect(divider.getAttribute('aria-valuenow')).resolves.toBe('44')
    expect(await chatWidth()).toBeGreaterThan(before)
    await page.keyboard.press('ArrowRight')
    await expect(divider.getAttribute('aria-valuenow')).resolves.toBe('42')
    await page.keyboard.press('End')
    await expect(divider.getAttribute('aria-valuenow')).resolves.toBe('70')
    await page.keyboard.press('Home')
    await expect(divider.getAttribute('aria-valuenow')).resolves.toBe('25')

    const box = (await divider.boundingBox())!
    const viewport = page.viewportSize()!
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2)
    await page.mouse.down()
    await page.mouse.move(viewport.width * 0.45, box.y + box.height / 2, { steps: 5 })
    await page.mouse.up()
    const dragged = Number(await divider.getAttribute('aria-valuenow'))
    expect(dragged).toBeGreaterThanOrEqual(53)
    expect(dragged).toBeLessThanOrEqual(57)

    await page.reload()
    await expect(page.getByRole('separator').getAttribute('aria-valuenow')).resolves.toBe(String(dragged))
    expect(workspace.problems()).toEqual([])
  })

  it('at phone width shows the chat as a full-screen panel behind a toggle, with the same features', async () => {
    const page = await open({ uri: 'kb://users/alice/docs/a.md', viewport: { width: 390, height: 844 } })
    const chat = page.locator('#chat-panel')
    await expect(chat.isVisible()).resolves.toBe(false)
    await expect(page.locator('#divider').isVisible()).resolves.toBe(false)
    await expect(page.locator('#content .markdown h1').isVisible()).resolves.toBe(true)
    const suffix = mode.randomUUID ? 'uuid' : 'no-uuid'
    await screenshot(page, `phone-workspace-${suffix}`)

    const toggle = page.getByRole('button', { name: 'Ask KnowAgent' })
    await toggle.click()
    await expect(page.locator('#chat-toggle').getAttribute('aria-expanded')).resolves.toBe('true')
    await expect(chat.boundingBox()).resolves.toEqual({ x: 0, y: 0, width: 390, height: 844 })
    await expect(page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).resolves.toBe('Message')

    await page.locator('#chat-model').selectOption('local')
    await ask(page, 'What is the answer in a.md?')
    await waitForAnswer(page)
    await expect(assistantMessage(page).locator('.tool-card').count()).resolves.toBeGreaterThan(0)
    await page.locator('#context-summary').click()
    await screenshot(page, `phone-chat-${suffix}`)

    await page.getByRole('button', { name: 'Close chat' }).click()
    await expect(chat.isVisible()).resolves.toBe(false)
    await toggle.click()
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2) // the conversation is still there
    expect(workspace.problems()).toEqual([])
  })
})
