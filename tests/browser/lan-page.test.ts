// The seed's LAN regression, once, end to end: a page served over plain HTTP on a LAN address has
// no crypto.randomUUID (browsers offer it only in secure contexts), and the chat must still work —
// send, stream, Stop, an explicit command, the compile dialog, at phone width — with display keys
// from the timestamp-and-counter fallback. (The fallback itself is unit-tested in
// views/commands-script.test.ts; every other browser scenario runs once, with randomUUID.)
import { describe, expect, it } from 'vitest'
import { ask, assistantMessage, keyPatternOf, LAN_PAGE, screenshot, useBrowserFixture, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace } from '../support/chat-workspace.ts'
import { chatCompletionSse, streamScript, textAnswerSse } from '../support/scripted-provider.ts'

const ui = useBrowserFixture({ start: startChatWorkspace })

describe('a plain-HTTP LAN page without crypto.randomUUID', () => {
  const workspace = ui.workspace(LAN_PAGE)

  it('sends, streams, stops, runs a command and opens the compile dialog at phone width', async () => {
    const { provider } = ui.app
    const page = await workspace.open({ uri: 'kb://users/alice/docs/', viewport: { width: 390, height: 844 } })
    await expect(page.evaluate(() => typeof globalThis.crypto?.randomUUID)).resolves.toBe('undefined')
    await page.getByRole('button', { name: 'Ask KnowAgent' }).click()
    await expect(page.locator('#chat-panel').boundingBox()).resolves.toEqual({ x: 0, y: 0, width: 390, height: 844 })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)

    // Send and stream: the first delta shows while the provider still holds the rest.
    const rest = Promise.withResolvers<void>()
    provider.enqueue({
      kind: 'stream',
      chunks: [{ bytes: chatCompletionSse([{ text: 'The answer ' }]) }, { bytes: chatCompletionSse([{ text: 'is forty-two.' }, { finish: 'stop' }, 'done']), after: rest.promise }],
    })
    await ask(page, 'What is the answer?')
    const first = assistantMessage(page)
    await first.locator('.answer', { hasText: 'The answer' }).waitFor()
    await expect(first.getAttribute('class')).resolves.toContain('is-streaming')
    rest.resolve()
    await waitForAnswer(page)
    await expect(first.locator('.answer').textContent()).resolves.toContain('forty-two')
    await expect(first.getAttribute('id')).resolves.toMatch(keyPatternOf(LAN_PAGE))
    await expect(page.locator('#chat-log article.msg.user').first().getAttribute('id')).resolves.toMatch(keyPatternOf(LAN_PAGE))

    // Stop: the provider sees its request closed, the partial answer stays, marked.
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'Working on it' }]) }], end: 'hang' })
    await ask(page, 'Take your time')
    const second = assistantMessage(page, 2)
    await second.locator('.answer', { hasText: 'Working on it' }).waitFor()
    const held = provider.requests.length - 1
    await page.getByRole('button', { name: 'Stop' }).click()
    await provider.waitForClientClose(held, { timeoutMs: 5000 })
    await waitForAnswer(page, { n: 2, state: 'stopped' })
    await expect(second.locator('.msg-status').textContent()).resolves.toBe('Stopped')

    // An explicit command: a result card, no model call.
    const requests = provider.requests.length
    const message = page.getByRole('textbox', { name: 'Message' })
    await message.fill('/search forty')
    await message.press('Enter')
    const card = page.locator('#chat-log article.msg.command:not(.is-pending)').last()
    await card.locator('.search-hits').waitFor()
    await expect(card.getAttribute('id')).resolves.toMatch(keyPatternOf(LAN_PAGE))
    expect(provider.requests.length).toBe(requests)

    // The compile dialog opens from /compile, not from the model.
    await message.fill('/compile')
    await message.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Compile to wiki' })
    await dialog.locator('#compile-form').waitFor()
    await expect(dialog.locator('input[name="uris"]').count()).resolves.toBeGreaterThan(0)
    expect(provider.requests.length).toBe(requests)
    await screenshot(page, 'phone-lan-page')

    // The answer after all that still streams.
    provider.enqueue(streamScript(textAnswerSse('Still here.')))
    await page.keyboard.press('Escape')
    await ask(page, 'Still there?')
    await waitForAnswer(page, { n: 3 })
    expect(workspace.problems()).toEqual([])
  })
})
