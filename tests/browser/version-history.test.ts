// Issue 37, version history: a file's preview lists its versions; one is shown in place, marked as
// not the current one, downloaded (its own bytes, not the current ones) and restored as the newest
// version, after which the preview shows its text again.
import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'
import { documentKept, markDocument, PHONE } from '../support/workspace-page.ts'

const ui = useBrowserFixture({ start: startChatWorkspace })
const uri = 'kb://users/alice/history/plan.txt'

describe('a file\'s version history', () => {
  const workspace = ui.workspace(SECURE_PAGE)

  it('opens the history, shows an old version, downloads it and restores it', async () => {
    for (const text of ['Plan A: walk to the lake.', 'Plan B: take the bus.', 'Plan C: stay home.']) await ui.app.putText(['history', 'plan.txt'], text)
    const page = await workspace.open({ uri })
    const history = page.locator('#content details.version-history')
    await history.locator('summary', { hasText: 'History: 3 versions' }).click()
    const rows = history.locator('tbody tr')
    await expect(rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-version')))).resolves.toEqual(['3', '2', '1'])
    await expect(rows.first().locator('td').nth(3).textContent()).resolves.toBe('—') // written before origins were recorded
    await screenshot(page, 'desktop-version-history')

    await markDocument(page)
    await rows.nth(2).getByRole('link', { name: '1', exact: true }).click()
    const banner = page.locator('#content .old-version')
    await banner.waitFor()
    await expect(banner.locator('strong').textContent()).resolves.toBe('Version 1 of 3, not the current one')
    await expect(page.locator('#content pre.text').textContent()).resolves.toBe('Plan A: walk to the lake.')
    expect(await documentKept(page)).toBe(true) // shown in place
    expect(new URL(page.url()).searchParams.get('version')).toBe('1')
    await screenshot(page, 'desktop-old-version')

    const [download] = await Promise.all([page.waitForEvent('download'), banner.getByRole('link', { name: 'Download version 1' }).click()])
    expect(download.suggestedFilename()).toBe('plan.txt')
    await expect(readFile((await download.path())!, 'utf8')).resolves.toBe('Plan A: walk to the lake.')

    await banner.getByRole('button', { name: 'Restore version 1 as the newest version' }).click()
    await page.locator('#content .notice', { hasText: 'Version 1 restored: it is now version 4, the current one.' }).waitFor()
    await expect(page.locator('#content pre.text').textContent()).resolves.toBe('Plan A: walk to the lake.')
    await expect(page.locator('#content .old-version').count()).resolves.toBe(0)
    await page.locator('#content details.version-history summary', { hasText: 'History: 4 versions' }).click()
    const newest = page.locator('#content details.version-history tbody tr').first()
    await expect(newest.getAttribute('data-version')).resolves.toBe('4')
    await expect(newest.locator('td').nth(3).textContent()).resolves.toBe('restore')
    await screenshot(page, 'desktop-restored')
    expect(workspace.problems()).toEqual([])
  })

  it('fits a phone, the old version\'s note and the versions table alike', async () => {
    await ui.app.putText(['history', 'phone.txt'], 'one')
    await ui.app.putText(['history', 'phone.txt'], 'two')
    const page = await workspace.open({ uri: 'kb://users/alice/history/phone.txt', viewport: PHONE })
    await page.goto(`/workspace?uri=${encodeURIComponent('kb://users/alice/history/phone.txt')}&version=1`)
    await page.locator('#content .old-version').waitFor()
    await expect(page.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(PHONE.width)
    // the versions table fits too: its Download and Restore are on screen, not scrolled away
    await expect(page.locator('#content .version-history .table-scroll').evaluate((element) => element.scrollWidth <= element.clientWidth)).resolves.toBe(true)
    await screenshot(page, 'phone-old-version')
  })
})
