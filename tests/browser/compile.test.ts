// Compile jobs in Chromium: queue from the form, watch the stage advance in the task center
// without reloading, cancel one, retry one, see a refusal reason — with a real worker running
// real child processes as the CLI "model".
import { describe, expect, it } from 'vitest'
import { screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { DOCS, openCompileForm, pickFiles, row, startCompileWorkspace } from '../support/compile-workspace.ts'

const ui = useBrowserFixture({ start: startCompileWorkspace })
const mode = SECURE_PAGE

describe('compile jobs in the browser', () => {
  const workspace = ui.workspace(mode)
  const compile = () => ui.app.server.compile!.feature
  it('queues from the form; the task center shows the stages advance live, no reload', async () => {
    const page = await workspace.open({ uri: DOCS })
    const tasks = await page.context().newPage()
    const subscribers = compile().events.subscribers()
    await tasks.goto('/tasks')
    await tasks.locator('body[data-tasks-ready="true"]').waitFor()
    // the task center's live stream is open before the job is queued, so it sees every stage
    await expect.poll(() => compile().events.subscribers()).toBe(subscribers + 1)
    await tasks.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true))
    const stages = tasks.evaluate(
      () =>
        new Promise<string[]>((resolve) => {
          const seen: string[] = []
          const record = () => {
            const current = document.querySelector('#job-rows tr.job')
            if (!current) return
            const label = `${current.getAttribute('data-status')}${current.getAttribute('data-stage') ? `:${current.getAttribute('data-stage')}` : ''}`
            if (seen.at(-1) !== label) seen.push(label)
            if (['succeeded', 'failed', 'cancelled'].includes(current.getAttribute('data-status') ?? '')) resolve(seen)
          }
          new MutationObserver(record).observe(document.getElementById('job-rows')!, { childList: true, subtree: true, attributes: true })
          record()
        }),
    )

    const dialog = await openCompileForm(page)
    await expect(dialog.locator('.compile-count').textContent()).resolves.toBe('3 of at most 32 files picked')
    await pickFiles(dialog, ['a.md', 'b.md'])
    await dialog.getByLabel('Engine and model').selectOption({ label: 'Slow CLI · fake-model' })
    await expect(dialog.getByLabel('Reasoning level').inputValue()).resolves.toBe('') // this profile takes none
    await dialog.getByRole('button', { name: 'Queue compile' }).click()
    await dialog.locator('.compile-queued').waitFor()
    await expect(dialog.locator('.compile-queued').textContent()).resolves.toMatch(/^Queued job [0-9a-f]{8} for 2 files/)
    // the dialog's own job list is live too
    await dialog.locator('#job-rows tr.job').first().waitFor()
    if (mode.randomUUID) await screenshot(page, 'desktop-compile-queued')

    const seen = await stages
    expect(seen.at(-1)).toBe('succeeded')
    expect(seen).toEqual(expect.arrayContaining(['running:summarising', 'running:overview', 'running:abstract']))
    expect(seen.indexOf('running:summarising')).toBeLessThan(seen.indexOf('running:overview'))
    await expect(tasks.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).resolves.toBe(true)
    await expect(row(tasks, 'succeeded').locator('.job-progress, .muted').first().textContent()).resolves.toContain('2 files')
    await screenshot(tasks, 'desktop-task-center')
    expect(workspace.problems()).toEqual([])
  })

  it('refuses a file another job is compiling differently, with the reason; cancels that job; retries it', async () => {
    const page = await workspace.open({ uri: DOCS })
    let dialog = await openCompileForm(page)
    await pickFiles(dialog, ['c.md'])
    await dialog.getByLabel('Engine and model').selectOption({ label: 'Stuck CLI · fake-model' })
    await dialog.getByRole('button', { name: 'Queue compile' }).click()
    await dialog.locator('.compile-queued').waitFor()

    // the same file with another engine is refused, and the form says why
    await dialog.getByLabel('Engine and model').selectOption({ label: 'Local extractive (no LLM)' })
    await dialog.getByRole('button', { name: 'Queue compile' }).click()
    const refusal = dialog.locator('.compile-refusals li[data-code="conflicting_active_job"]')
    await refusal.waitFor()
    await expect(refusal.textContent()).resolves.toMatch(/c\.md: already being compiled differently — job [0-9a-f-]{36} is already compiling .*with a different configuration.*\(that job uses CLI stuck · fake-model, budget 40\)/)
    await page.keyboard.press('Escape')

    // the task center, only running jobs: the stuck one is there
    await page.goto('/tasks?status=running')
    await row(page, 'running').waitFor()
    await expect(row(page).count()).resolves.toBe(1)
    // all jobs: cancel it
    await page.goto('/tasks')
    await row(page, 'running').waitFor()
    await row(page, 'running').getByRole('button', { name: /^Cancel job/ }).click()
    await row(page, 'cancelled').waitFor()
    // retry it from the unfiltered list: queued again with its snapshot, then running
    await page.goto('/tasks')
    const cancelled = row(page, 'cancelled')
    await cancelled.getByRole('button', { name: /^Retry job/ }).click()
    await page.locator('#job-rows tr.job[data-status="queued"], #job-rows tr.job[data-status="running"]').first().waitFor()
    await expect(page.locator('#job-rows tr.job[data-status="running"] .job-config, #job-rows tr.job[data-status="queued"] .job-config').first().textContent()).resolves.toContain('CLI stuck')
    // clean up: cancel it again
    await page.locator('#job-rows tr.job[data-status="running"]').waitFor()
    await page.locator('#job-rows tr.job[data-status="running"]').getByRole('button', { name: /^Cancel job/ }).click()
    await row(page, 'cancelled').first().waitFor()
    expect(workspace.problems()).toEqual([])

    // the compile dialog's stream is closed with the dialog
    await page.goto(`/workspace?uri=${encodeURIComponent(DOCS)}`)
    await page.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' })
    const before = compile().events.subscribers()
    dialog = await openCompileForm(page)
    await expect.poll(() => compile().events.subscribers()).toBe(before + 1)
    await page.keyboard.press('Escape')
    await expect.poll(() => compile().events.subscribers()).toBe(before)
  })

  it('fits a phone-width screen', async () => {
    const page = await workspace.open({ uri: DOCS, viewport: { width: 390, height: 844 } })
    await page.goto('/tasks')
    await row(page).first().waitFor()
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    await screenshot(page, 'phone-task-center')
  })
})
