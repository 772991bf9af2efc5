// Hostile text everywhere it can come from — a file name, a file body, a model's answer, its
// thinking and tool arguments, a command argument, an error echoing a URI — renders as text:
// no dialog opens, no CSP violation is reported, and the DOM holds no such element.
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { ask, assistantMessage, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace } from '../support/chat-workspace.ts'
import { chatCompletionSse, streamScript, toolCallsSse } from '../support/scripted-provider.ts'

const IMG = `<img src=x onerror=alert('xss')>`
const SCRIPT = `<script>alert('xss')</script>`
const HOSTILE_NAME = `${IMG}.md`
const HOSTILE_TEXT_NAME = '<script>x.txt'

/** Elements an injection would create anywhere in the page body (the page's own scripts are in <head>). */
const injectedElements = (page: Page) =>
  page.evaluate(() => document.body.querySelectorAll('script, img, iframe, svg, object, embed, [onerror], [onload], [onclick]').length)

// One app, one scripted provider and one browser for the whole file; each scenario runs in
// a fresh browser context (the page without crypto.randomUUID: lan-page.test.ts).
const ui = useBrowserFixture({
  start: async () => {
    const app = await startChatWorkspace()
    await app.putText(['x', HOSTILE_NAME], `# Title ${IMG}\n\nBody ${SCRIPT} and ${IMG} [link](javascript:alert('xss'))\n`)
    await app.putText(['x', HOSTILE_TEXT_NAME], `Plain ${IMG} ${SCRIPT}\n`)
    return app
  },
})

describe('hostile text renders as text', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)

  it('in the tree, the previews, the chat, command cards and errors', async () => {
    const page = await workspace.open({
      uri: 'kb://users/alice/x/',
      allowConsoleErrors: [/status of 404/], // the deliberate request for a missing node
    })
    await expect(page.locator('#tree .name', { hasText: HOSTILE_NAME }).count()).resolves.toBe(1)
    await expect(page.locator('#content .entries', { hasText: HOSTILE_TEXT_NAME }).count()).resolves.toBe(1)

    await page.locator('#tree .node-link', { hasText: HOSTILE_NAME }).click()
    await page.locator('#content .markdown').waitFor()
    await expect(page.locator('#content .markdown h1').textContent()).resolves.toBe(`Title ${IMG}`)
    await expect(page.locator('#content .markdown').textContent()).resolves.toContain(`Body ${SCRIPT}`)
    await expect(page.locator('#content .markdown a[href]').count()).resolves.toBe(0) // the javascript: link lost its href
    await page.locator('#tree .node-link', { hasText: HOSTILE_TEXT_NAME }).click()
    await expect(page.locator('#content pre.text').textContent()).resolves.toBe(`Plain ${IMG} ${SCRIPT}\n`)

    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(
      streamScript(chatCompletionSse([{ thinking: `musing ${SCRIPT}` }]) + toolCallsSse([{ id: 'call_x', name: 'search', arguments: { query: IMG } }]).replace(/^data: \{[^\n]*"reasoning_content"[^\n]*\n\n/, '')),
      streamScript(chatCompletionSse([{ text: `Answer ${IMG} and ${SCRIPT} in **bold**` }, { finish: 'stop' }, 'done'])),
    )
    await ask(page, `Question ${IMG}`)
    const answer = assistantMessage(page)
    await waitForAnswer(page)
    await expect(answer.locator('.answer').textContent()).resolves.toContain(`Answer ${IMG} and ${SCRIPT} in bold`)
    await expect(answer.locator('.tool-args').textContent()).resolves.toContain(IMG)
    await answer.locator('.thinking summary').click()
    await expect(answer.locator('.thinking-text').textContent()).resolves.toContain(SCRIPT)
    await expect(page.locator('#chat-log .msg.user .bubble').first().textContent()).resolves.toBe(`Question ${IMG}`)

    await page.getByRole('textbox', { name: 'Message' }).fill(`/search ${IMG}`)
    await page.getByRole('textbox', { name: 'Message' }).press('Enter')
    await page.locator('#chat-log .command-card .card-meta', { hasText: 'for “<img' }).waitFor()
    await page.getByRole('textbox', { name: 'Message' }).fill(`/read ${SCRIPT}.md`)
    await page.getByRole('textbox', { name: 'Message' }).press('Enter')
    await page.locator('#chat-log .command-card.failed').last().waitFor()

    await page.evaluate((uri) => {
      const htmx = (window as unknown as { htmx: { ajax: (verb: string, path: string, options: object) => Promise<void> } }).htmx
      return htmx.ajax('GET', `/workspace/content?uri=${encodeURIComponent(uri)}`, { target: '#content', swap: 'outerHTML' })
    }, `kb://users/alice/${IMG}`)
    await expect(page.locator('#content .problem').textContent()).resolves.toContain(IMG)

    expect(await injectedElements(page)).toBe(0)
    expect(workspace.problems()).toEqual([])
  })
})
