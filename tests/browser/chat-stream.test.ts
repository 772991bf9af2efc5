// The chat's stream in a real browser: htmx's SSE extension swaps the server's HTML fragments as
// they arrive; the page decides how a turn ended (terminal event, Stop), picks a cut stream up
// again (Last-Event-ID) and keeps the server's history.
import { beforeEach, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { readTurnEvents } from '../../src/effects/turn/stored-turn-events.ts'
import { ask, assistantMessage, keyPatternOf, screenshot, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace, TEXT_ONLY_MODEL } from '../support/chat-workspace.ts'
import { chatCompletionSse, splitBytes, streamScript, textAnswerSse, toolCallsSse } from '../support/scripted-provider.ts'
import { betweenCrAndLf, insideCodePoints, toCrlf, withoutTerminal } from '../support/stream-proxy.ts'

const DIRECTORY = 'kb://users/alice/docs/'

// One app, one scripted provider, one stream proxy and one browser for the whole file; each
// scenario runs in a fresh browser context (the page without crypto.randomUUID: lan-page.test.ts).
const ui = useBrowserFixture({ start: startChatWorkspace, proxy: true })

describe('chat streaming', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)

  beforeEach(() => {
    ui.app.provider.setHandler(undefined)
    ui.proxy.reshape(undefined)
  })

  const open = async (options: { viaProxy?: boolean; allowConsoleErrors?: ReadonlyArray<RegExp> } = {}) => {
    const page = await workspace.open({ uri: DIRECTORY, ...options })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    return page
  }
  const history = (page: Page) => page.locator('#chat-history').inputValue().then((value) => JSON.parse(value) as Array<{ role: string; content: string | null }>)
  const turnIdOf = async (page: Page, question: string) => {
    const response = page.waitForResponse((r) => r.url().includes('/workspace/chat/stream'))
    await ask(page, question)
    return (await response).headers()['x-turn-id']!
  }

  it('shows the first delta before the stream ends, tool cards that expand, the context meter, and sends the history back', async () => {
    const { provider } = ui.app
    const rest = Promise.withResolvers<void>() // the provider holds the rest of the answer until the test has looked
    provider.enqueue(
      streamScript(toolCallsSse([{ id: 'call_read_1', name: 'read', arguments: { uri: 'kb://me/docs/a.md' } }])),
      {
        kind: 'stream',
        chunks: [
          { bytes: chatCompletionSse([{ text: 'The answer ' }]) },
          { bytes: chatCompletionSse([{ text: 'is **forty-two** (kb://users/alice/docs/a.md).' }, { finish: 'stop' }, 'done']), after: rest.promise },
        ],
      },
    )
    const page = await open()
    const first = provider.requests.length
    await ask(page, 'What is the answer?')
    const answer = assistantMessage(page)
    await answer.locator('.answer', { hasText: 'The answer' }).waitFor()
    expect(provider.requests[first + 1]?.finishedAt).toBeUndefined() // the provider is still streaming
    await expect(answer.getAttribute('class')).resolves.toContain('is-streaming')
    await expect(page.getByRole('button', { name: 'Stop' }).isVisible()).resolves.toBe(true)
    if (mode.randomUUID) await screenshot(page, 'desktop-streaming')

    rest.resolve()
    await waitForAnswer(page)
    await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Answered · 1 tool call')
    await expect(answer.locator('.answer strong').textContent()).resolves.toBe('forty-two')
    await expect(answer.getAttribute('id')).resolves.toMatch(keyPatternOf(mode))
    const card = answer.locator('details.tool-card')
    await expect(card.locator('.tool-name').textContent()).resolves.toBe('read')
    await expect(card.locator('.tool-state').textContent()).resolves.toBe('done')
    await expect(card.locator('.tool-arguments').isVisible()).resolves.toBe(false)
    await card.locator('summary').click()
    await expect(card.locator('.tool-arguments').textContent()).resolves.toContain('"uri": "kb://me/docs/a.md"')
    await expect(card.locator('.tool-result').textContent()).resolves.toContain('read kb://users/alice/docs/a.md')
    await expect(page.locator('#context-summary .meter-text').textContent()).resolves.toMatch(/\/ 30\.7k · window 32\.8k · no compaction/)
    await page.locator('#context-summary').click()
    await expect(page.locator('#context-detail').textContent()).resolves.toContain('Output reserve1,024')
    await expect(page.getByRole('button', { name: 'Send' }).isVisible()).resolves.toBe(true)

    const kept = await history(page)
    expect(kept.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
    provider.enqueue(streamScript(textAnswerSse('Still forty-two.')))
    const box = page.getByRole('textbox', { name: 'Message' })
    await box.pressSequentially('Are you sure?')
    await box.press('Shift+Enter') // a new line, not a send
    await box.pressSequentially('Really?')
    await expect(page.locator('#chat-log article.msg.user').count()).resolves.toBe(1)
    await box.press('Enter')
    await waitForAnswer(page, { n: 2 })
    await expect(page.locator('#chat-log article.msg.user .bubble').nth(1).innerText()).resolves.toBe('Are you sure?\nReally?')
    const sent = provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string | null }> }
    expect(sent.messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(
      expect.arrayContaining(['What is the answer?', 'The answer is **forty-two** (kb://users/alice/docs/a.md).', 'Are you sure?\nReally?']),
    )
    expect(await history(page)).toHaveLength(6)
    expect(workspace.problems()).toEqual([])
  })

  /** The history of the turn's stored terminal event: what the server handed back. */
  const serverHistory = async (turnId: string) => JSON.parse((await readTurnEvents(ui.app.server.database.db, { turnId, after: 0 })).at(-1)!.json).history as unknown

  it('Stop is a command: the server cancels the turn, the provider sees its request closed, and the page keeps the partial answer and the server’s history', async () => {
    const { provider, server } = ui.app
    provider.enqueue({ kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'Working on it' }]) }], end: 'hang' })
    const page = await open()
    const turnId = await turnIdOf(page, 'Take your time')
    const answer = assistantMessage(page)
    await answer.locator('.answer', { hasText: 'Working on it' }).waitFor()
    const requestIndex = provider.requests.length - 1
    await page.getByRole('button', { name: 'Stop' }).click()
    await provider.waitForClientClose(requestIndex, { timeoutMs: 5000 })
    await expect.poll(async () => (await findTurn(server.database.db, turnId))?.status, { timeout: 5000 }).toBe('cancelled')
    await waitForAnswer(page, { state: 'stopped' })
    await expect(answer.locator('.answer').textContent()).resolves.toContain('Working on it')
    await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Stopped')
    await expect(page.getByRole('button', { name: 'Send' }).isVisible()).resolves.toBe(true)
    await expect(page.getByRole('button', { name: 'Stop' }).isVisible()).resolves.toBe(false)
    await expect(answer.locator('.turn-error strong').textContent()).resolves.toBe('Stopped') // the server's own notice: its terminal arrived
    // The stopped answer stays in the conversation as the person saw it, marked (issue 14) — as the
    // server's terminal event says, not rebuilt from the page (issue 38).
    expect(await history(page)).toEqual([
      { role: 'user', content: 'Take your time' },
      { role: 'assistant', content: 'Working on it\n\n[This answer was stopped by the user; the text above is incomplete.]' },
    ])
    expect(await history(page)).toEqual(await serverHistory(turnId))
    expect(workspace.problems()).toEqual([])
  })

  it('a stream that ends without done or error is picked up again: the terminal arrives, no text twice', async () => {
    ui.app.provider.enqueue(streamScript(textAnswerSse('Partial but useful text.')))
    const page = await open({ viaProxy: true })
    ui.proxy.reshape((body) => [withoutTerminal(body)])
    const turnId = await turnIdOf(page, 'Tell me')
    await waitForAnswer(page)
    const answer = assistantMessage(page)
    await expect(answer.locator('.answer').innerText()).resolves.toBe('Partial but useful text.')
    await expect(answer.locator('.answer').count()).resolves.toBe(1)
    await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Answered')
    expect(await history(page)).toEqual([
      { role: 'user', content: 'Tell me' },
      { role: 'assistant', content: 'Partial but useful text.' },
    ])
    expect(await history(page)).toEqual(await serverHistory(turnId))
    expect(workspace.problems()).toEqual([])
  })

  it('when the stream cannot be picked up again (its events expired), the answer shows as cut off and keeps what arrived', async () => {
    ui.app.provider.enqueue(streamScript(textAnswerSse('Partial but useful text.')))
    const page = await open({ viaProxy: true, allowConsoleErrors: [/410/] })
    ui.proxy.reshape((body) => [withoutTerminal(body)])
    ui.proxy.refuse({ prefix: '/workspace/chat/turns/', status: 410 })
    try {
      await ask(page, 'Tell me')
      const answer = assistantMessage(page)
      await answer.locator('.turn-error').waitFor()
      await expect(answer.locator('.turn-error').textContent()).resolves.toContain('The answer was cut off')
      await expect(answer.locator('.answer').textContent()).resolves.toContain('Partial but useful text.')
      await expect(answer.getAttribute('class')).resolves.toContain('is-failed')
      await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Cut off')
      // No terminal reached the page: the question stays in the conversation with the mark, not text it cannot vouch for.
      expect(await history(page)).toEqual([
        { role: 'user', content: 'Tell me' },
        { role: 'assistant', content: '[This answer was cut off: the connection ended before it was complete.]' },
      ])
      expect(workspace.problems()).toEqual([])
    } finally {
      ui.proxy.refuse(undefined)
    }
  })

  it('going offline mid-answer shows "Reconnecting…"; back online the answer resumes where it was, no delta twice', async () => {
    const { provider } = ui.app
    const rest = Promise.withResolvers<void>()
    provider.enqueue({
      kind: 'stream',
      chunks: [
        { bytes: chatCompletionSse([{ text: 'First half, ' }]) },
        { bytes: chatCompletionSse([{ text: 'second half.' }, { finish: 'stop' }, 'done']), after: rest.promise },
      ],
    })
    const page = await open({ viaProxy: true, allowConsoleErrors: [/ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_INTERNET_DISCONNECTED|htmx:sse:error: network error/] })
    const turnId = await turnIdOf(page, 'Two halves')
    const answer = assistantMessage(page)
    await answer.locator('.answer', { hasText: 'First half' }).waitFor()
    await page.context().setOffline(true)
    expect(ui.proxy.cut()).toBe(1) // the blip: the stream under way breaks
    await answer.locator('.msg-status', { hasText: 'Reconnecting…' }).waitFor()
    await expect(answer.getAttribute('class')).resolves.toContain('is-reconnecting')
    if (mode.randomUUID) await screenshot(page, 'desktop-reconnecting')
    rest.resolve() // the turn goes on on the server meanwhile
    await expect.poll(async () => (await findTurn(ui.app.server.database.db, turnId))?.status, { timeout: 5000 }).toBe('done')
    await page.context().setOffline(false)
    await waitForAnswer(page)
    await expect(answer.locator('.answer').innerText()).resolves.toBe('First half, second half.')
    await expect(answer.locator('.answer').count()).resolves.toBe(1)
    await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Answered')
    expect(await history(page)).toEqual(await serverHistory(turnId))
    expect(workspace.problems()).toEqual([])
  })

  it('a provider EOF mid-answer arrives as the server error event: shown, with the partial text kept', async () => {
    ui.app.provider.enqueue(streamScript(chatCompletionSse([{ text: 'Half an ans' }, { text: 'wer' }])))
    const page = await open()
    await ask(page, 'Go')
    const answer = assistantMessage(page)
    await answer.locator('.turn-error').waitFor()
    await expect(answer.locator('.turn-error-code').textContent()).resolves.toBe('provider.incomplete')
    await expect(answer.locator('.answer').textContent()).resolves.toContain('Half an answer')
    await expect(answer.locator('.msg-status').textContent()).resolves.toBe('Failed')
    expect(workspace.problems()).toEqual([])
  })

  // issue 33: an answer cut at the output limit (or by the content filter) read "Answered"
  it('an answer the provider cut shows why in its status, and the history marks it incomplete', async () => {
    ui.app.provider.enqueue(
      streamScript(chatCompletionSse([{ text: 'The answer is' }, { finish: 'length' }, 'done'])),
      streamScript(chatCompletionSse([{ text: 'Part of it' }, { finish: 'content_filter' }, 'done'])),
    )
    const page = await open()
    await ask(page, 'What is the answer?')
    await waitForAnswer(page, { n: 1 })
    await expect(assistantMessage(page, 1).locator('.answer').textContent()).resolves.toContain('The answer is')
    await expect(assistantMessage(page, 1).locator('.msg-status').textContent()).resolves.toBe('Cut off at the output limit')

    await ask(page, 'And the rest?')
    await waitForAnswer(page, { n: 2 })
    await expect(assistantMessage(page, 2).locator('.msg-status').textContent()).resolves.toBe("Stopped by the provider's content filter")
    expect(await history(page)).toEqual([
      { role: 'user', content: 'What is the answer?' },
      { role: 'assistant', content: 'The answer is\n\n[This answer was cut off at the output limit; the text above is incomplete.]' },
      { role: 'user', content: 'And the rest?' },
      { role: 'assistant', content: "Part of it\n\n[This answer was stopped by the provider's content filter; the text above is incomplete.]" },
    ])
    expect(workspace.problems()).toEqual([])
  })

  it('the page parses UTF-8 split inside code points, CRLF split between CR and LF, and many events in one chunk', async () => {
    const text = '知识库 notes 😀 — 答案是四十二。'
    ui.app.provider.enqueue(streamScript(textAnswerSse(text, { chunkChars: 3 })), streamScript(textAnswerSse(`Again: ${text}`, { chunkChars: 2 })))
    const page = await open({ viaProxy: true })
    ui.proxy.reshape((body) => {
      const crlf = toCrlf(body)
      return splitBytes(crlf, [...insideCodePoints(crlf), ...betweenCrAndLf(crlf)])
    }, { delayMs: 2 })
    await ask(page, 'Unicode please')
    await waitForAnswer(page, { n: 1 })
    await expect(assistantMessage(page, 1).locator('.answer').innerText()).resolves.toBe(text)

    ui.proxy.reshape((body) => [body]) // the whole stream, every event, in one chunk
    await ask(page, 'Once more')
    await waitForAnswer(page, { n: 2 })
    await expect(assistantMessage(page, 2).locator('.answer').innerText()).resolves.toBe(`Again: ${text}`)
    expect(await history(page)).toHaveLength(4)
    expect(workspace.problems()).toEqual([])
  })

  it('the model selector shows each model’s tool capability, says what a text-only model cannot do, and is used and remembered', async () => {
    const page = await open()
    const options = await page.locator('#chat-model option').allTextContents()
    expect(options).toEqual(['Remote · scripted — tools', 'Text only · scripted — text only', 'Local extractive (no LLM) · builtin — tools'])
    await expect(page.locator('#model-notice').isVisible()).resolves.toBe(false)
    await page.getByLabel('Model').selectOption(TEXT_ONLY_MODEL)
    await expect(page.locator('#model-notice').textContent()).resolves.toContain('cannot call tools')
    await expect(page.locator('#model-capability').textContent()).resolves.toBe('Text only')
    ui.app.provider.enqueue(streamScript(textAnswerSse('From the listing only.')))
    await ask(page, 'What is here?')
    await waitForAnswer(page)
    const body = ui.app.provider.requests.at(-1)!.body as { tools?: unknown }
    expect(body.tools).toBeUndefined()
    await expect(assistantMessage(page).locator('.model-name').textContent()).resolves.toBe('Text only')
    await page.reload()
    await expect(page.locator('#chat-model').inputValue()).resolves.toBe(TEXT_ONLY_MODEL)
    await expect(page.locator('#model-notice').isVisible()).resolves.toBe(true)
    expect(workspace.problems()).toEqual([])
  })
})
