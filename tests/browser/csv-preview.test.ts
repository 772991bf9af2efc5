// Issue 33, item 12: a CSV or TSV file previews as a table of its first rows, with a note of how
// many there are; its cells are text, never markup; a malformed or huge file still previews, as
// text. (Before, every CSV and TSV file previewed as raw text.)
import { describe, expect, it } from 'vitest'
import { screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { startChatWorkspace } from '../support/chat-workspace.ts'
import { PHONE } from '../support/workspace-page.ts'

const ui = useBrowserFixture({ start: startChatWorkspace })
const root = 'kb://users/alice/tables/'

describe('the preview of CSV and TSV files', () => {
  const workspace = ui.workspace(SECURE_PAGE)

  it('shows the first 200 rows as a table with escaped cells and "Showing 200 of N rows"', async () => {
    const rows = Array.from({ length: 250 }, (_, i) => `row ${i},plain ${i}`)
    rows[0] = '"Smith, J","said ""hi""\nthen left"'
    rows[1] = `<img src=x onerror="window.__xss=1">,<b>bold</b>`
    await ui.app.putText(['tables', 'people.csv'], `name,notes\n${rows.join('\n')}\n`)
    const page = await workspace.open({ uri: `${root}people.csv` })
    const table = page.locator('#content table.data-table')
    await table.waitFor()
    await expect(table.locator('thead th').allTextContents()).resolves.toEqual(['name', 'notes'])
    await expect(table.locator('tbody tr').count()).resolves.toBe(200)
    await expect(table.locator('tbody tr').nth(0).locator('td').allTextContents()).resolves.toEqual(['Smith, J', 'said "hi"\nthen left'])
    await expect(table.locator('tbody tr').nth(1).locator('td').allTextContents()).resolves.toEqual(['<img src=x onerror="window.__xss=1">', '<b>bold</b>'])
    await expect(table.locator('tbody tr').last().locator('td').first().textContent()).resolves.toBe('row 199')
    await expect(page.locator('#content .table-note').textContent()).resolves.toBe('Showing 200 of 250 rows. Download the file for all of them.')
    await expect(page.locator('#content img, #content b').count()).resolves.toBe(0)
    await expect(page.evaluate(() => (window as { __xss?: number }).__xss)).resolves.toBeUndefined()
    await expect(page.locator('#content pre.text').count()).resolves.toBe(0)
    await screenshot(page, 'desktop-csv-table')
    expect(workspace.problems()).toEqual([])
  })

  it('never cuts a column name inside a word: a wide table scrolls sideways in the preview', async () => {
    const columns = ['provider', 'base_url', 'api_key_env', 'native_tool_calls', 'streams_usage', 'reasoning_field', 'quirks']
    await ui.app.putText(['tables', 'wide-columns.csv'], `${columns.join(',')}\n${columns.map((name) => `a value of ${name}`).join(',')}\n`)
    const page = await workspace.open({ uri: `${root}wide-columns.csv` })
    const table = page.locator('#content table.data-table')
    await table.waitFor()
    // one line each: a header cell as tall as the shortest one, and none wider inside than it shows
    const heights = await table.locator('thead th').evaluateAll((cells) => cells.map((cell) => (cell as HTMLElement).getBoundingClientRect().height))
    expect(Math.max(...heights)).toBe(Math.min(...heights))
    const scroller = page.locator('#content .table-scroll', { has: page.locator('table.data-table') })
    expect(await scroller.evaluate((element) => element.scrollWidth > element.clientWidth)).toBe(true)
    expect(workspace.problems()).toEqual([])
  })

  it('shows a TSV file as a table too, in place from the folder listing', async () => {
    await ui.app.putText(['tables', 'sizes.tsv'], 'model\twindow\nqwen\t131072\n')
    const page = await workspace.open({ uri: root })
    await page.locator('#content .entry-link', { hasText: /^sizes\.tsv$/ }).click()
    const table = page.locator('#content table.data-table')
    await table.waitFor()
    await expect(table.locator('thead th').allTextContents()).resolves.toEqual(['model', 'window'])
    await expect(table.locator('tbody td').allTextContents()).resolves.toEqual(['qwen', '131072'])
    await expect(page.locator('#content .table-note').textContent()).resolves.toBe('Showing 1 of 1 row.')
    expect(workspace.problems()).toEqual([])
  })

  it('falls back to the text for a malformed file and for a million columns, and fits a phone', async () => {
    await ui.app.putText(['tables', 'broken.csv'], 'a,b\n"never closed,1\n2,3\n')
    await ui.app.putText(['tables', 'wide.csv'], `${'c,'.repeat(1_000_000)}c\n1,2\n`)
    await ui.app.putText(['tables', 'narrow.csv'], `id,description\n1,${'long words '.repeat(40)}\n`)
    const page = await workspace.open({ uri: `${root}broken.csv` })
    await page.locator('#content pre.text', { hasText: '"never closed,1' }).waitFor()
    await expect(page.locator('#content table.data-table').count()).resolves.toBe(0)

    await page.goto(`/workspace?uri=${encodeURIComponent(`${root}wide.csv`)}`)
    await page.locator('#content pre.text').waitFor()
    await expect(page.locator('#content table.data-table').count()).resolves.toBe(0)
    await expect(page.locator('#content', { hasText: 'Preview truncated.' }).count()).resolves.toBe(1)
    expect(workspace.problems()).toEqual([])

    const phone = await workspace.open({ uri: `${root}narrow.csv`, viewport: PHONE })
    await phone.locator('#content table.data-table').waitFor()
    await expect(phone.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(PHONE.width)
  })
})
