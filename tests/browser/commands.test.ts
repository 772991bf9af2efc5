// Slash commands and the command menu: explicit workspace commands render result cards,
// /compile /compiler /parse open the compile form, the directory dialog opens from /ls or the
// URI prefix — and none of it ever reaches the model (the scripted provider gets no request).
import { beforeEach, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { keyPatternOf, screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'

// One app, one scripted provider and one browser for the whole file; each scenario runs in
// a fresh browser context (the page without crypto.randomUUID: lan-page.test.ts).
const ui = useBrowserFixture({ start: startChatWorkspace })

describe('commands', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)
  let page: Page
  let requestsBefore = 0

  beforeEach(async () => {
    page = await workspace.open({ uri: 'kb://users/alice/docs/' })
    requestsBefore = ui.app.provider.requests.length
  })

  const message = (page: Page) => page.getByRole('textbox', { name: 'Message' })
  const run = async (page: Page, text: string) => {
    await message(page).fill(text)
    await message(page).press('Enter')
  }
  const lastCard = (page: Page) => page.locator('#chat-log article.msg.command:not(.is-pending)').last()
  const selectedOption = (page: Page) => page.locator('#command-menu [role="option"][aria-selected="true"]').getAttribute('data-command')
  const expectNoModelCall = () => expect(ui.app.provider.requests.length).toBe(requestsBefore)

  it('typing / shows a command menu driven by arrows, Enter and Escape', async () => {
    const menu = page.getByRole('listbox', { name: 'Commands' })
    await message(page).pressSequentially('/')
    await expect(menu.isVisible()).resolves.toBe(true)
    await expect(menu.getByRole('option').allTextContents()).resolves.toHaveLength(7)
    await expect(selectedOption(page)).resolves.toBe('ls')
    if (mode.randomUUID) await screenshot(page, 'desktop-command-menu')
    await message(page).press('ArrowDown')
    await expect(selectedOption(page)).resolves.toBe('read')
    await expect(message(page).getAttribute('aria-activedescendant')).resolves.toBe('command-option-read')
    await message(page).press('ArrowUp')
    await message(page).press('ArrowUp')
    await expect(selectedOption(page)).resolves.toBe('parse') // wraps around
    await message(page).press('Escape')
    await expect(menu.isVisible()).resolves.toBe(false)
    await expect(message(page).inputValue()).resolves.toBe('/')

    await message(page).pressSequentially('se')
    await expect(menu.getByRole('option').allTextContents()).resolves.toEqual([expect.stringContaining('/search')])
    await message(page).press('Enter')
    await expect(message(page).inputValue()).resolves.toBe('/search ')
    await expect(menu.isVisible()).resolves.toBe(false)
    await message(page).pressSequentially('forty')
    await message(page).press('Enter')
    await lastCard(page).locator('.search-hits').waitFor()
    await expect(lastCard(page).locator('.snippet').first().textContent()).resolves.toContain('forty-two')
    expectNoModelCall()
    expect(workspace.problems()).toEqual([])
  })

  it('/read, /search, /status and /ls <dir> render result cards with working follow-up buttons', async () => {
    await run(page, '/read a.md')
    await lastCard(page).locator('pre.read-text').waitFor()
    await expect(lastCard(page).locator('pre.read-text').textContent()).resolves.toContain('The answer is **forty-two**.')
    await expect(lastCard(page).getAttribute('id')).resolves.toMatch(keyPatternOf(mode))
    await expect(page.locator('#chat-log article.msg.user.is-command').last().textContent()).resolves.toBe('/read a.md')

    await run(page, '/status')
    await lastCard(page).locator('.status-files').waitFor() // a folder: each file below it with its own jobs
    await expect(lastCard(page).locator('.status-files thead').textContent()).resolves.toContain('Text body (parse)')
    await expect(lastCard(page).locator('.status-files tbody code').allTextContents()).resolves.toContain('a.md')
    await run(page, '/status a.md')
    await lastCard(page).locator('.status-jobs').waitFor()
    await expect(lastCard(page).locator('.status-jobs').textContent()).resolves.toContain('Text body (parse)')

    await run(page, '/ls deep')
    await lastCard(page).locator('.ls-entries').waitFor()
    await expect(lastCard(page).locator('.ls-entries .name').allTextContents()).resolves.toEqual(['c.md'])
    await lastCard(page).getByRole('button', { name: 'Read c.md' }).click()
    await lastCard(page).locator('pre.read-text', { hasText: 'Charlie' }).waitFor()

    await run(page, '/read missing.md')
    await lastCard(page).locator('.tool-error').waitFor()
    await expect(lastCard(page).locator('.tool-error').textContent()).resolves.toMatch(/not_found/)

    await run(page, '/frobnicate')
    await page.locator('#chat-log .msg.is-note', { hasText: 'Unknown command /frobnicate' }).waitFor()
    await expect(page.locator('#chat-history').inputValue()).resolves.toBe('[]')
    expectNoModelCall()
    expect(workspace.problems()).toEqual([])
  })

  it('/ls and the URI prefix open the directory dialog, which traps focus and closes on Escape', async () => {
    const dialog = page.getByRole('dialog', { name: 'Directory commands' })
    await run(page, '/ls')
    await dialog.locator('.ls-entries').waitFor()
    await expect(dialog.locator('.ls-entries .name').allTextContents()).resolves.toEqual(['deep/', 'a.md', 'b.txt'])
    if (mode.randomUUID) await screenshot(page, 'desktop-directory-dialog')
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press(i % 4 === 3 ? 'Shift+Tab' : 'Tab')
      await expect(page.evaluate(() => document.activeElement?.closest('dialog')?.id ?? null)).resolves.toBe('directory-dialog')
    }
    await page.keyboard.press('Escape')
    await expect(dialog.isVisible()).resolves.toBe(false)
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('chat-message')

    await page.locator('#uri-prefix').click()
    await dialog.getByRole('button', { name: 'Read b.txt' }).click()
    await expect(dialog.isVisible()).resolves.toBe(false)
    await lastCard(page).locator('pre.read-text', { hasText: 'Bravo notes' }).waitFor()

    await page.locator('#uri-prefix').click()
    await dialog.getByLabel('Search this directory').fill('Charlie')
    await dialog.getByLabel('Search this directory').press('Enter')
    await lastCard(page).locator('.search-hits').waitFor()
    await expect(lastCard(page).locator('.hit-uri').textContent()).resolves.toContain('kb://users/alice/docs/deep/c.md')
    expectNoModelCall()
    expect(workspace.problems()).toEqual([])
  })

  it.each(['/compile', '/compiler', '/parse'])('%s opens the compile form and never reaches the model', async (command) => {
    const dialog = page.getByRole('dialog', { name: 'Compile to wiki' })
    await run(page, command)
    await dialog.locator('.compile-form').waitFor()
    await expect(dialog.locator('.compile-files input[name="uris"]').evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value))).resolves.toEqual([
      'kb://users/alice/docs/a.md',
      'kb://users/alice/docs/b.txt',
    ])
    await expect(dialog.getByRole('button', { name: /Queue compile/ }).isEnabled()).resolves.toBe(true)
    if (mode.randomUUID && command === '/compile') await screenshot(page, 'desktop-compile-dialog')
    await page.keyboard.press('Escape')
    await expect(dialog.isVisible()).resolves.toBe(false)
    await expect(page.locator('#chat-log article.msg').count()).resolves.toBe(0)
    await expect(message(page).inputValue()).resolves.toBe('')
    expectNoModelCall()
    expect(workspace.problems()).toEqual([])
  })
})
