// The sample corpus, imported for `demo` as on a first start, is usable end to end in the
// browser with the built-in local model: a question gets tool cards and an answer citing kb:// URIs.
import { describe, expect, it } from 'vitest'
import { bootstrapDemo } from '../../src/effects/workspace/bootstrap-demo.ts'
import { ask, assistantMessage, keyPatternOf, screenshot, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { startTestServer } from '../support/test-server.ts'

const PASSWORD = 'demo-password-123'

// The app as on a first start: the demo user and the sample corpus, the built-in local model.
const ui = useBrowserFixture({
  start: async () => {
    const server = await startTestServer()
    const demo = await bootstrapDemo(server.database.db, { demoPassword: PASSWORD, maxFileBytes: server.ctx.config.maxFileBytes, parser: server.ctx.parser })
    expect(demo.created).toBe(true)
    return { server, login: 'demo', password: PASSWORD, close: () => server.close() }
  },
})

describe('the demo corpus with the local model', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)

  it('answers a question about the samples with tool cards and cited URIs', async () => {
    const page = await workspace.open({ uri: 'kb://me/samples/' })
    await expect.poll(() => page.locator('#chat-model').inputValue()).toBe('local')
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe('kb://users/demo/samples/')
    await ask(page, 'What happens when a stream ends without a done event?')
    const answer = assistantMessage(page)
    await waitForAnswer(page)
    await expect(answer.getAttribute('id')).resolves.toMatch(keyPatternOf(mode))
    const toolNames = await answer.locator('.tool-card .tool-name').allTextContents()
    expect(toolNames).toContain('search')
    expect(toolNames).toContain('read')
    const citation = answer.locator('.answer a.kb-link').first()
    await expect(citation.textContent()).resolves.toMatch(/^kb:\/\/users\/demo\/samples\//)
    await answer.locator('.tool-card').first().locator('summary').click()
    await expect(answer.locator('.tool-card').first().locator('.tool-arguments').isVisible()).resolves.toBe(true)
    if (mode.randomUUID) await screenshot(page, 'desktop-demo-answer')

    await page.getByRole('button', { name: 'New chat' }).click()
    const example = page.locator('#chat-welcome .example').first()
    await expect(example.textContent()).resolves.toBe('What are the key points of README.md?')
    await expect(page.locator('#chat-history').inputValue()).resolves.toBe('[]')
    await example.click()
    await waitForAnswer(page)
    await expect(page.locator('#chat-log .msg.user .bubble').textContent()).resolves.toBe('What are the key points of README.md?')
    await expect(assistantMessage(page).locator('.answer a.kb-link').first().textContent()).resolves.toContain('kb://users/demo/samples/')
    expect(workspace.problems()).toEqual([])
  })
})
