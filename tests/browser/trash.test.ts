// Issue 37, the Trash in the browser: a file deleted from its preview (the dialog says it goes to
// the Trash and for how long) appears on the Trash page, reached from the tree, with where it came
// from; Restore puts it back in its folder with its content. At phone width the page fits and
// Delete forever asks before it deletes.
import { describe, expect, it } from 'vitest'
import { screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'
import { fileDialog, nodeAction, PHONE } from '../support/workspace-page.ts'

const ui = useBrowserFixture({ start: startChatWorkspace })

describe('the Trash', () => {
  const workspace = ui.workspace(SECURE_PAGE)

  it('delete a file, find it in the Trash, restore it: back in its folder with its content', async () => {
    await ui.app.putText(['trip', 'itinerary.md'], '# Itinerary\nDay one: the harbour at dawn.')
    const page = await workspace.open({ uri: 'kb://users/alice/trip/itinerary.md' })
    await page.locator('#content .markdown h1', { hasText: 'Itinerary' }).waitFor()
    await nodeAction(page, 'Delete').click()
    const note = fileDialog(page).locator('.trash-note')
    await note.waitFor()
    await expect(note.textContent()).resolves.toContain('It goes to the Trash for 30 days, with every version.')
    await fileDialog(page).getByRole('button', { name: 'Delete', exact: true }).click()
    await page.locator('#files-live', { hasText: /^Moved the file itinerary\.md to the Trash, until \d{4}-\d\d-\d\d\.$/ }).waitFor()
    await page.waitForURL((url) => url.searchParams.get('uri') === 'kb://users/alice/trip/')

    await page.locator('#tree a.trash-link').click()
    await page.waitForURL((url) => url.pathname === '/workspace/trash')
    const row = page.locator('table.trash-items tbody tr', { has: page.locator('strong', { hasText: /^itinerary\.md$/ }) })
    await expect(row.locator('.trash-from').textContent()).resolves.toContain('kb://users/alice/trip/')
    await screenshot(page, 'desktop-trash')

    await row.getByRole('button', { name: 'Restore itinerary.md to kb://users/alice/trip/' }).click()
    await page.waitForURL((url) => url.pathname === '/workspace' && url.searchParams.get('uri') === 'kb://users/alice/trip/itinerary.md')
    await page.locator('#content .notice', { hasText: 'Restored from the Trash, with its versions.' }).waitFor()
    await expect(page.locator('#content .markdown p').textContent()).resolves.toBe('Day one: the harbour at dawn.')
    await page.locator('#tree li.node[data-uri="kb://users/alice/trip/"] li.node[data-uri="kb://users/alice/trip/itinerary.md"]').waitFor()
    await screenshot(page, 'desktop-trash-restored')
    expect(workspace.problems()).toEqual([])
  })

  it('fits a phone; Delete forever asks first, then the item is gone', async () => {
    await ui.app.putText(['scraps', 'a note with a rather long name to wrap on a phone.md'], 'scrap')
    const page = await workspace.open({ uri: 'kb://users/alice/scraps/', viewport: PHONE })
    await nodeAction(page, 'Delete').click()
    await fileDialog(page).getByRole('button', { name: 'Delete 1 file' }).click()
    await page.locator('#files-live', { hasText: 'Moved the folder scraps (1 file) to the Trash' }).waitFor()
    await page.goto('/workspace/trash')
    const row = page.locator('table.trash-items tbody tr', { has: page.locator('strong', { hasText: /^scraps\/$/ }) })
    await expect(row.textContent()).resolves.toContain('folder, 1 file')
    await expect(page.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(PHONE.width)
    const forever = row.getByRole('button', { name: 'Delete forever' })
    await expect(forever.isVisible()).resolves.toBe(false) // behind "Delete forever…"
    await row.locator('summary', { hasText: 'Delete forever…' }).click()
    await expect(row.locator('.confirm-body p').textContent()).resolves.toBe('Delete scraps/ and every version of its files for good? This cannot be undone.')
    await screenshot(page, 'phone-trash-confirm')
    await forever.click()
    await page.locator('.trash-page .notice', { hasText: 'Deleted for good.' }).waitFor()
    await expect(page.locator('table.trash-items tbody tr', { has: page.locator('strong', { hasText: /^scraps\/$/ }) }).count()).resolves.toBe(0)
    expect(workspace.problems()).toEqual([])
  })
})
