// An uploaded JavaScript file is never the app's script (issue 34, item 10). The raw download route
// served an uploaded `.js` as text/javascript from the app's origin, whose policy allows
// `script-src 'self'`: one HTML injection anywhere would have been enough to run it. Here the
// injection is made on purpose, in a signed-in page of the app: a <script> element pointing at the
// uploaded file's raw URL. Chromium must refuse to run it (its `error` event, not `load`).
import { describe, expect, it } from 'vitest'
import { findUserByLogin } from '../../src/effects/auth/users.ts'
import { mimeFromName } from '../../src/effects/workspace/mime.ts'
import { SECURE_PAGE, useBrowserFixture } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'
import { putText } from '../support/text-file.ts'

const ui = useBrowserFixture({
  start: async () => {
    const app = await startChatWorkspace()
    const alice = (await findUserByLogin(app.server.database.db, 'alice'))!
    for (const name of ['evil.js', 'evil.mjs']) {
      await putText(app.server.database.db, { owner: alice, segments: ['uploads', name], text: 'window.__uploadedScriptRan = true', mime: mimeFromName(name) })
    }
    return app
  },
})

describe('an uploaded script in a page of the app', () => {
  const workspace = ui.workspace(SECURE_PAGE)

  it.each([
    ['a classic script', 'evil.js', 'text/javascript'],
    ['a module script', 'evil.mjs', 'module'],
  ])('is refused as %s', async (_, name, type) => {
    const page = await workspace.open({ uri: 'kb://users/alice/uploads/', allowConsoleErrors: [/Refused to execute script|MIME type/] })
    const src = `/api/v1/workspace/raw?uri=${encodeURIComponent(`kb://users/alice/uploads/${name}`)}`
    const outcome = await page.evaluate(
      ({ src, type }) =>
        new Promise<string>((resolve) => {
          const script = document.createElement('script')
          script.type = type
          script.src = src
          script.addEventListener('load', () => resolve('ran'))
          script.addEventListener('error', () => resolve('refused'))
          document.body.append(script)
        }),
      { src, type },
    )
    expect(outcome).toBe('refused')
    expect(await page.evaluate(() => (window as unknown as { __uploadedScriptRan?: boolean }).__uploadedScriptRan)).toBeUndefined()
  })
})
