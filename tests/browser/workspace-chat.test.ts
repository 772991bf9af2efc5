// The chat beside the workspace (issue 14), in real Chromium: citations that open the highlighted
// passage with the chat kept (desktop and phone width), the conversation kept per directory in
// sessionStorage (reload, New chat, a stopped answer in the history with its paired tool call, a
// renamed folder), the answer tools, the keyboard, the Ctrl+K search and the colour scheme.
// (File management and uploads: workspace-files.test.ts.)
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { ask, assistantMessage, screenshot, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace } from '../support/chat-workspace.ts'
import { chatCompletionSse, streamScript, textAnswerSse, toolCallsSse } from '../support/scripted-provider.ts'
import { addUserWithToken } from '../support/test-server.ts'
import { chatHistory, DESKTOP, documentKept, fileDialog, lowContrastTexts, markDocument, nodeAction, PHONE } from '../support/workspace-page.ts'


const ui = useBrowserFixture({ start: startChatWorkspace })

describe('chatting in the workspace', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)
  const open = workspace.open
  const tag = mode.randomUUID ? 'uuid' : 'nouuid'
  const root = 'kb://users/alice/'
  const history = chatHistory
  const action = nodeAction

  for (const viewport of [DESKTOP, PHONE]) {
    const width = viewport === PHONE ? 'phone' : 'desktop'
    it(`at ${width} width a citation of a file the turn read opens the passage in place; one it never read is not a link`, async () => {
      const text = '# Alpha\n\nThe answer is **forty-two**.\n'
      const offset = text.indexOf('The answer')
      ui.app.provider.enqueue(
        streamScript(toolCallsSse([{ id: 'call_read', name: 'read', arguments: { uri: 'kb://me/docs/a.md' } }])),
        streamScript(textAnswerSse(`It is forty-two (kb://users/alice/docs/a.md @${offset}); not in (kb://users/alice/docs/b.txt @3).`)),
      )
      const page = await open({ uri: root, viewport })
      await markDocument(page)
      if (viewport === PHONE) await page.getByRole('button', { name: 'Ask KnowAgent' }).click()
      await page.locator('#chat-model').selectOption(REMOTE_MODEL)
      await ask(page, 'What is the answer?')
      await waitForAnswer(page)
      const answer = assistantMessage(page)
      const cite = answer.locator('a.kb-cite')
      await expect(cite.count()).resolves.toBe(1)
      await expect(cite.textContent()).resolves.toBe(`kb://users/alice/docs/a.md @${offset}`)
      await expect(answer.locator('.kb-ref').textContent()).resolves.toBe('kb://users/alice/docs/b.txt @3')
      await expect(answer.locator('a', { hasText: 'b.txt' }).count()).resolves.toBe(0)
      await cite.click()
      const passage = page.locator('#content mark#passage')
      await passage.waitFor()
      await expect(passage.textContent()).resolves.toMatch(/^The answer/)
      await expect(passage.evaluate((element) => document.activeElement === element)).resolves.toBe(true)
      const box = (await passage.boundingBox())!
      expect(box.y).toBeGreaterThanOrEqual(0)
      expect(box.y + box.height).toBeLessThanOrEqual(viewport.height) // scrolled into view
      expect(new URL(page.url()).searchParams.get('offset')).toBe(String(offset))
      await screenshot(page, `${width}-citation-passage-${tag}`)
      // The tree opens down to the cited file and highlights it (issue 33: it stayed on the folder before).
      await page.locator(`#tree .node-link[aria-current="page"][data-node-uri="${root}docs/a.md"]`).waitFor()
      await expect(page.locator('#tree [aria-current="page"]').count()).resolves.toBe(1)
      // The chat was kept: same directory, same conversation, same document.
      await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe(root)
      await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2)
      expect(await documentKept(page)).toBe(true)
      expect(workspace.problems()).toEqual([])
    })
  }

  it('keeps the conversation per directory across reloads; a stopped answer stays with its paired tool call; New chat clears it', async () => {
    const { provider } = ui.app
    const page = await open({ uri: `${root}docs/`, allowConsoleErrors: [/ERR_ABORTED|aborted|network/i] })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    provider.enqueue(
      streamScript(toolCallsSse([{ id: 'call_ls', name: 'ls', arguments: { uri: 'kb://me/docs/' } }])),
      { kind: 'stream', chunks: [{ bytes: chatCompletionSse([{ text: 'Half an answer' }]) }], end: 'hang' },
    )
    await ask(page, 'List and think')
    const answer = assistantMessage(page)
    await answer.locator('.answer', { hasText: 'Half an answer' }).waitFor()
    await page.getByRole('textbox', { name: 'Message' }).press('Escape') // Esc stops while the input has focus
    await waitForAnswer(page, { state: 'stopped' })
    const kept = await history(page)
    expect(kept).toHaveLength(4)
    expect(kept[0]).toEqual({ role: 'user', content: 'List and think' })
    expect(kept[1]).toMatchObject({ role: 'assistant', content: null, tool_calls: [{ id: 'call_ls', type: 'function', function: { name: 'ls', arguments: '{"uri":"kb://me/docs/"}' } }] })
    expect(kept[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_ls' })
    // The server's history (issue 38): the tool's own result, as the model read it.
    expect(JSON.parse(kept[2]!.content as string)).toMatchObject({ uri: 'kb://users/alice/docs/', entries: expect.any(Array) })
    expect(kept[3]).toEqual({ role: 'assistant', content: 'Half an answer\n\n[This answer was stopped by the user; the text above is incomplete.]' })

    await page.reload()
    await assistantMessage(page).locator('.answer', { hasText: 'Half an answer' }).waitFor()
    await expect(page.locator('#chat-log .msg-status').first().textContent()).resolves.toBe('Stopped')
    expect(await history(page)).toEqual(kept)

    // The next question carries what the person saw.
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    provider.enqueue(streamScript(textAnswerSse('Continuing.')))
    await ask(page, 'Go on')
    await waitForAnswer(page, { n: 2 })
    const sent = provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string | null; tool_call_id?: string }> }
    expect(sent.messages.find((m) => m.role === 'tool')?.tool_call_id).toBe('call_ls')
    expect(sent.messages.some((m) => m.role === 'assistant' && m.content?.includes('[This answer was stopped by the user'))).toBe(true)

    // Another directory has its own conversation; coming back restores this one.
    await page.locator('#tree .node-link', { hasText: /^other$/ }).click()
    await page.locator('#chat-welcome').waitFor()
    await page.goBack()
    await assistantMessage(page, 2).locator('.answer', { hasText: 'Continuing.' }).waitFor()

    // New chat in a folder above (the root) starts the root's conversation afresh and keeps the
    // conversations of the folders below it (it cleared every one of them).
    await page.goto(new URL(`/workspace?uri=${encodeURIComponent(root)}`, page.url()).href)
    await page.locator('#chat-welcome').waitFor()
    await page.getByRole('button', { name: 'New chat' }).click()
    await page.locator('#chat-welcome').waitFor()
    await page.goBack()
    await assistantMessage(page, 2).locator('.answer', { hasText: 'Continuing.' }).waitFor()

    await page.getByRole('button', { name: 'New chat' }).click()
    await page.locator('#chat-welcome').waitFor()
    await page.reload()
    await page.locator('#chat-welcome').waitFor()
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(0)
    expect(await history(page)).toEqual([])
    await screenshot(page, `desktop-new-chat-${tag}`)
    expect(workspace.problems()).toEqual([])
  })

  it('renaming the folder the chat is in keeps the conversation: the chat follows it, and a reload restores it there', async () => {
    const base = `${tag}-renamed`
    await ui.app.putText([base, 'note.md'], 'a note\n')
    const page = await open({ uri: `${root}${base}/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse('One note.')))
    await ask(page, 'How many notes?')
    await waitForAnswer(page)
    await action(page, 'Rename').click()
    await fileDialog(page).getByRole('textbox', { name: 'New name' }).fill(`${base}-2`)
    await fileDialog(page).getByRole('button', { name: 'Rename' }).click()
    await page.waitForURL((url) => url.searchParams.get('uri') === `${root}${base}-2/`)
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe(`${root}${base}-2/`)
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2)
    await page.reload()
    await assistantMessage(page).locator('.answer', { hasText: 'One note.' }).waitFor()
    await expect(history(page)).resolves.toEqual([
      { role: 'user', content: 'How many notes?' },
      { role: 'assistant', content: 'One note.' },
    ])
    expect(workspace.problems()).toEqual([])
  })

  it('answer tools: model and elapsed time, copy the markdown source, retry the last question; ↑ recalls it', async () => {
    const { provider } = ui.app
    const page = await open({ uri: `${root}docs/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    await page.evaluate(() => {
      const copied: string[] = ((window as { __copied?: string[] }).__copied = [])
      Object.defineProperty(navigator, 'clipboard', { value: { writeText: async (text: string) => void copied.push(text) }, configurable: true })
    })
    provider.enqueue(streamScript(textAnswerSse('First **answer**.')))
    await ask(page, 'Question one')
    await waitForAnswer(page)
    const answer = assistantMessage(page)
    await expect(answer.locator('.model-name').textContent()).resolves.toBe('Remote')
    await expect(answer.locator('.elapsed').textContent()).resolves.toMatch(/^\d+\.\d s$/)
    await answer.getByRole('button', { name: 'Copy' }).click()
    await answer.getByRole('button', { name: 'Copied' }).waitFor()
    await expect(page.evaluate(() => (window as { __copied?: string[] }).__copied)).resolves.toEqual(['First **answer**.'])

    provider.enqueue(streamScript(textAnswerSse('Second answer.')))
    await answer.getByRole('button', { name: 'Retry' }).click()
    await assistantMessage(page).locator('.answer', { hasText: 'Second answer.' }).waitFor()
    await waitForAnswer(page)
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2)
    const sent = provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string | null }> }
    expect(sent.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['Question one'])
    expect(await history(page)).toEqual([
      { role: 'user', content: 'Question one' },
      { role: 'assistant', content: 'Second answer.' },
    ])

    const box = page.getByRole('textbox', { name: 'Message' })
    await box.focus()
    await box.press('ArrowUp')
    await expect(box.inputValue()).resolves.toBe('Question one')
    expect(workspace.problems()).toEqual([])
  })

  it('Ctrl+K searches the whole workspace; a hit in another folder opens the passage and moves the chat and the tree there', async () => {
    const page = await open({ uri: `${root}other/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse('Delta is here.')))
    await ask(page, 'Where is Delta?')
    await waitForAnswer(page)
    await page.keyboard.press('Control+k')
    const dialog = page.locator('#search-dialog')
    await expect(dialog.isVisible()).resolves.toBe(true)
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('search-input')
    await page.keyboard.type('forty')
    const hit = dialog.locator('a.search-hit', { hasText: 'kb://users/alice/docs/a.md' })
    await hit.waitFor()
    await screenshot(page, `desktop-search-${tag}`)
    await hit.click()
    await page.locator('#content mark#passage', { hasText: 'forty' }).waitFor()
    await expect(dialog.isVisible()).resolves.toBe(false)
    // Issue 33 (9): the chat stayed on other/ and the next question silently searched there.
    await expect(page.locator('#uri-prefix-text').textContent()).resolves.toBe(`${root}docs/`)
    const shown = page.locator('#tree .node-link[aria-current="page"]')
    await shown.waitFor()
    await expect(shown.getAttribute('data-node-uri')).resolves.toBe(`${root}docs/a.md`)
    await expect(page.getByRole('button', { name: 'Collapse docs' }).getAttribute('aria-expanded')).resolves.toBe('true')
    const request = page.waitForRequest((r) => r.url().endsWith('/workspace/chat/stream'))
    ui.app.provider.enqueue(streamScript(textAnswerSse('Forty-two.')))
    await ask(page, 'What is the answer?')
    expect(new URLSearchParams((await request).postData() ?? '').get('uri')).toBe(`${root}docs/`)
    await waitForAnswer(page)
    const sent = ui.app.provider.requests.at(-1)!.body as { messages: Array<{ role: string; content: string | null }> }
    expect(sent.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['What is the answer?'])
    // other/'s conversation is kept for other/.
    await page.goBack()
    await assistantMessage(page).locator('.answer', { hasText: 'Delta is here.' }).waitFor()
    expect(workspace.problems()).toEqual([])
  })

  it('signing out leaves no trace of the conversations in the tab; another user signing in wipes those a tab kept', async () => {
    const bob = await addUserWithToken(ui.app.server, `bob-${tag}`)
    const secret = `alices-secret-${tag}`
    const page = await open({ uri: `${root}docs/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse(`Noted: ${secret}.`)))
    await ask(page, `Remember ${secret}`)
    await waitForAnswer(page)
    const stored = (target: Page) => target.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }))
    await expect(stored(page)).resolves.toContain(secret) // kept for a reload
    // A second tab of alice's keeps its own conversation (sessionStorage is per tab).
    const other = await page.context().newPage()
    await other.goto(`/workspace?uri=${encodeURIComponent(`${root}other/`)}`)
    await other.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    await other.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse(`Noted too: ${secret}.`)))
    await ask(other, `Remember ${secret} here too`)
    await waitForAnswer(other)
    await expect(stored(other)).resolves.toContain(secret)

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL((url) => url.pathname === '/login')
    await expect(stored(page)).resolves.not.toContain(secret)
    // Back does not bring alice's page out of a cache: it is asked for again, and sign-in answers.
    await page.goBack()
    await page.waitForURL((url) => url.pathname === '/login')
    await expect(page.content()).resolves.not.toContain(secret)
    await page.goto('/login')
    await page.getByRole('textbox', { name: 'Login' }).fill(`bob-${tag}`)
    await page.getByLabel('Password').fill(bob.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((url) => url.pathname === '/workspace')
    await page.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    await expect(page.locator('.who').textContent()).resolves.toBe(`bob-${tag}`)
    await expect(page.content()).resolves.not.toContain(secret)
    await expect(stored(page)).resolves.not.toContain(secret)

    // The other tab never saw the sign-out: bob's first page in it, whichever, wipes alice's conversations.
    await other.goto('/settings')
    await expect(other.locator('.who').textContent()).resolves.toBe(`bob-${tag}`)
    await expect(stored(other)).resolves.not.toContain(secret)
    await other.goto('/workspace')
    await other.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    await expect(other.locator('.who').textContent()).resolves.toBe(`bob-${tag}`)
    await expect(other.content()).resolves.not.toContain(secret)
    await expect(stored(other)).resolves.not.toContain(secret)
    expect(workspace.problems()).toEqual([])
  })

  it('a reload restores the context meter with the conversation', async () => {
    const page = await open({ uri: `${root}docs/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    const meter = () => page.locator('#context-meter').evaluate((element) => ({ summary: element.querySelector('#context-summary')!.textContent, detail: element.querySelector('#context-detail')!.textContent }))
    await expect(meter().then((m) => m.summary)).resolves.toContain('measured when you ask')
    ui.app.provider.enqueue(streamScript(textAnswerSse('Measured.')))
    await ask(page, 'How big is this?')
    await waitForAnswer(page)
    const measured = await meter()
    expect(measured.summary).not.toContain('measured when you ask')
    await page.reload()
    await assistantMessage(page).locator('.answer', { hasText: 'Measured.' }).waitFor()
    await expect(meter()).resolves.toEqual(measured)
    // Another folder's conversation has its own figure (none yet); coming back restores this one.
    await page.locator('#tree .node-link', { hasText: /^other$/ }).click()
    await page.locator('#chat-welcome').waitFor()
    await expect(meter().then((m) => m.summary)).resolves.toContain('measured when you ask')
    await page.goBack()
    await assistantMessage(page).locator('.answer', { hasText: 'Measured.' }).waitFor()
    await expect(meter()).resolves.toEqual(measured)
    expect(workspace.problems()).toEqual([])
  })

  it("a question asked before another folder's welcome arrives keeps its place: the late welcome is not shown over it", async () => {
    const page = await open({ uri: `${root}docs/` })
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    await page.route('**/workspace/chat/welcome?*', async (route) => {
      await held
      await route.continue()
    })
    await page.locator('#tree .node-link', { hasText: /^other$/ }).click()
    await page.waitForURL((url) => url.searchParams.get('uri') === `${root}other/`)
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse('Asked in time.')))
    await ask(page, 'Before the welcome?')
    await waitForAnswer(page)
    // htmx's last word on that request comes after its swap (or the swap's refusal)
    const welcomeDone = page.evaluate(
      () =>
        new Promise<void>((resolve) =>
          document.addEventListener('htmx:finally:request', (event) => {
            const action = (event as CustomEvent<{ ctx?: { request?: { action?: string } } }>).detail?.ctx?.request?.action ?? ''
            if (action.includes('/workspace/chat/welcome')) resolve()
          }),
        ),
    )
    release()
    await welcomeDone
    await expect(page.locator('#chat-welcome').count()).resolves.toBe(0)
    await expect(history(page)).resolves.toEqual([
      { role: 'user', content: 'Before the welcome?' },
      { role: 'assistant', content: 'Asked in time.' },
    ])
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(2)
    expect(workspace.problems()).toEqual([])
  })

  it('every piece of text on the folder page with an answer is readable in both colour schemes (contrast ≥ 4.5:1)', async () => {
    const page = await open({ uri: `${root}docs/` })
    await page.locator('#chat-model').selectOption(REMOTE_MODEL)
    ui.app.provider.enqueue(streamScript(textAnswerSse('Readable.')))
    await ask(page, 'Contrast?')
    await waitForAnswer(page)
    // the texts the sweep must see: the listing, the composer hint, the answer's model, time and status
    for (const selector of ['table.entries td.num', '.composer-hint', '#chat-log .model-name', '#chat-log .elapsed', '#chat-log .msg-status']) {
      await expect(page.locator(selector).first().isVisible(), selector).resolves.toBe(true)
    }
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme })
      await page.waitForFunction(() => document.getAnimations().every((animation) => animation.playState !== 'running')) // the colours' transitions
      expect({ colorScheme, low: await page.evaluate(lowContrastTexts, 4.5) }).toEqual({ colorScheme, low: [] })
    }
    // and the other pages a member sees
    for (const path of ['/settings', '/tasks', '/workspace/trash']) {
      expect((await page.goto(path))?.status(), path).toBe(200)
      for (const colorScheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme })
        await page.waitForFunction(() => document.getAnimations().every((animation) => animation.playState !== 'running'))
        expect({ path, colorScheme, low: await page.evaluate(lowContrastTexts, 4.5) }).toEqual({ path, colorScheme, low: [] })
      }
    }
    expect(workspace.problems()).toEqual([])
  })

  it('follows the system colour scheme: dark mode when the system prefers it', async () => {
    const page = await open({ uri: `${root}docs/a.md` })
    const colours = () =>
      page.evaluate(() => {
        const of = (selector: string) => getComputedStyle(document.querySelector(selector)!)
        return { page: of('html').backgroundColor, text: of('body').color, panel: of('#chat-panel').backgroundColor }
      })
    await page.emulateMedia({ colorScheme: 'light' })
    await expect(colours()).resolves.toMatchObject({ page: 'rgb(245, 246, 248)', text: 'rgb(27, 30, 36)' })
    await page.emulateMedia({ colorScheme: 'dark' })
    await expect(colours()).resolves.toMatchObject({ page: 'rgb(18, 20, 25)', text: 'rgb(228, 231, 236)' })
    await screenshot(page, `desktop-dark-${tag}`)

    // …and its wish for less motion: the streaming answer's pulsing dot and bouncing dots stand still, colours change at once
    await page.evaluate(() => document.body.insertAdjacentHTML('beforeend', '<article class="msg assistant is-streaming" id="motion-probe"><p class="msg-status">Answering</p><div class="typing"><span></span></div><button type="button">b</button></article>'))
    const motion = () =>
      page.evaluate(() => {
        const probe = document.querySelector('#motion-probe')!
        return {
          pulse: getComputedStyle(probe.querySelector('.msg-status')!, '::before').animationName,
          dots: getComputedStyle(probe.querySelector('.typing span')!).animationName,
          button: getComputedStyle(probe.querySelector('button')!).transitionDuration,
        }
      })
    await page.emulateMedia({ reducedMotion: 'no-preference' })
    await expect(motion()).resolves.toEqual({ pulse: 'pulse', dots: 'bounce', button: expect.stringMatching(/^0\.12s/) })
    await page.emulateMedia({ reducedMotion: 'reduce' })
    await expect(motion()).resolves.toEqual({ pulse: 'none', dots: 'none', button: expect.stringMatching(/^0s(, 0s)*$/) })
    expect(workspace.problems()).toEqual([])
  })
})
