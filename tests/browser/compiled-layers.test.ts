// Issue 35 in Chromium: after a compile, a source renamed and another deleted. The overview's
// preview is marked out of date with what changed, and its "Compile docs/ again" opens the compile
// form for that folder; the task center's succeeded row links the pages the job produced where
// they are now (the renamed file's summary followed it) and says which one was deleted.
import { describe, expect, it } from 'vitest'
import { findCompileJob } from '../../src/effects/compile/compile-jobs-store.ts'
import { API_PREFIX } from '../../src/http/compile.routes.ts'
import { SECURE_PAGE, screenshot, useBrowserFixture } from '../support/browser.ts'
import { DOCS, row, startCompileWorkspace } from '../support/compile-workspace.ts'

const ui = useBrowserFixture({ start: startCompileWorkspace })

describe('compiled layers in the browser', () => {
  const workspace = ui.workspace(SECURE_PAGE)
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${ui.app.server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ui.app.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  it('marks a stale overview with what changed and opens the compile form for its folder; the task center links what the job produced', async () => {
    const queued = await api('POST', `${API_PREFIX}/compile`, { uris: ['a.md', 'b.md', 'c.md'].map((name) => `${DOCS}${name}`), channel: 'llm', model_id: 'local' })
    const jobId = ((await queued.json()) as { jobs: Array<{ id: string }> }).jobs[0]!.id
    await expect.poll(async () => (await findCompileJob(ui.app.server.database.db, { id: jobId }))?.view.status, { timeout: 30_000, interval: 100 }).toBe('succeeded')
    expect((await api('POST', '/api/v1/workspace/move', { uri: `${DOCS}b.md`, name: 'bravo.md' })).status).toBe(200)
    expect((await api('DELETE', `/api/v1/workspace/node?uri=${encodeURIComponent(`${DOCS}a.md`)}`)).status).toBe(200)

    // the overview's preview: out of date, what changed, and a way to compile the folder again
    const page = await workspace.open({ uri: `${DOCS}.overview.md` })
    const mark = page.locator('#content .layer-mark')
    await expect(mark.getAttribute('data-stale')).resolves.toBe('true')
    await expect(mark.locator('p').first().textContent()).resolves.toMatch(/^Overview \(L1\) of docs\/, written by a compile job on /)
    await expect(mark.getByRole('status').textContent()).resolves.toBe('Out of date: its sources changed since it was written.')
    await expect(mark.getByRole('list', { name: 'What changed since' }).locator('li').allTextContents()).resolves.toEqual([
      `deleted: ${DOCS}a.md`,
      `moved: ${DOCS}b.md → ${DOCS}bravo.md`,
    ])
    await screenshot(page, 'desktop-stale-overview')
    await mark.getByRole('button', { name: 'Compile docs/ again' }).click()
    const dialog = page.getByRole('dialog', { name: 'Compile to wiki' })
    await dialog.locator('#compile-form').waitFor()
    await expect(dialog.locator('input[name="directory_uri"]').inputValue()).resolves.toBe(DOCS)
    await expect(dialog.locator('input[name="uris"]').evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value))).resolves.toEqual([`${DOCS}bravo.md`, `${DOCS}c.md`])
    await page.keyboard.press('Escape')

    // the task center: the succeeded row links each page where it is now
    await page.goto('/tasks')
    const succeeded = row(page, 'succeeded')
    await succeeded.waitFor()
    const pages = succeeded.locator('.job-pages li')
    await expect(pages.evaluateAll((items) => items.map((item) => `${item.getAttribute('data-kind')} ${item.getAttribute('data-state')}: ${item.textContent}`))).resolves.toEqual([
      'summary deleted: summary a.md: deleted',
      `summary moved: summary bravo.md (renamed from b.md)`,
      'summary here: summary c.md',
      'overview here: overview (L1)',
      'abstract here: abstract (L0)',
    ])
    // the page, not the row: the table's stream may replace the row in place (the same row) at any moment
    await screenshot(page, 'desktop-task-center-produced')
    await succeeded.getByRole('link', { name: 'summary bravo.md' }).click()
    await page.waitForURL(/\/workspace\?uri=/)
    const summaryMark = page.locator('#content .layer-mark')
    await expect(summaryMark.getAttribute('data-stale')).resolves.toBe('false')
    await expect(summaryMark.locator('p').first().textContent()).resolves.toMatch(/^Summary of bravo\.md, written by a compile job on .* Up to date with its sources\.$/)
    await expect(page.locator('#content .markdown').textContent()).resolves.toContain(`Source: ${DOCS}bravo.md`)
    expect(workspace.problems()).toEqual([])
  })
})
