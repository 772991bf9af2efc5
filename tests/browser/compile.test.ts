// Compile jobs in Chromium: queue from the form, watch the stage advance in the task center
// without reloading, cancel one, retry one, see a refusal reason — with a real worker running
// real child processes as the CLI "model".
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { putFile } from '../../src/effects/workspace/store.ts'
import { API_PREFIX } from '../../src/http/compile.routes.ts'
import { screenshot, useBrowserFixture, SECURE_PAGE, type WorkspaceApp } from '../support/browser.ts'
import { FAKE_CLI, fakeCliProfile } from '../support/compile-harness.ts'
import { addUserWithToken, startTestServer } from '../support/test-server.ts'

const DOCS = 'kb://users/alice/docs/'

interface CompileWorkspace extends WorkspaceApp {
  /** alice's API token, for queueing jobs without the form. */
  readonly token: string
}

async function startCompileWorkspace(): Promise<CompileWorkspace> {
  const server = await startTestServer({
    compile: {
      cliProfiles: [
        // each call takes 400 ms, so every stage is on screen for a moment
        fakeCliProfile({ id: 'slow', name: 'Slow CLI', command: [process.execPath, FAKE_CLI, '--mode', 'slow', '--delay', '400'], reasoningLevels: [] }),
        fakeCliProfile({ id: 'stuck', name: 'Stuck CLI', mode: 'tree', reasoningLevels: [] }),
      ],
    },
  })
  const alice = await addUserWithToken(server, 'alice')
  const files: ReadonlyArray<readonly [string, string]> = [
    ['a.md', '# Alpha\nThe answer is forty-two.'],
    ['b.md', '# Bravo\nStreaming ends with done.'],
    ['c.md', '# Charlie\nWorkers send heartbeats.'],
  ]
  for (const [name, text] of files) {
    await putFile(server.database.db, { owner: alice.user, segments: ['docs', name], bytes: new TextEncoder().encode(text), parsed: { ok: true, mime: 'text/markdown', text } })
  }
  return { server, login: 'alice', password: alice.password, token: alice.token, close: () => server.close() }
}

const ui = useBrowserFixture({ start: startCompileWorkspace })
const mode = SECURE_PAGE

async function openCompileForm(page: Page) {
  const message = page.getByRole('textbox', { name: 'Message' })
  await message.fill('/compile')
  await message.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Compile to wiki' })
  await dialog.locator('#compile-form').waitFor()
  return dialog
}

async function pickFiles(dialog: ReturnType<Page['getByRole']>, names: ReadonlyArray<string>) {
  for (const box of await dialog.locator('input[name="uris"]').all()) {
    const value = await box.getAttribute('value')
    await box.setChecked(names.some((name) => value === `${DOCS}${name}`))
  }
}

const row = (page: Page, status?: string) => page.locator(`#job-rows tr.job${status ? `[data-status="${status}"]` : ''}`)

/**
 * Records every state a page's live-table caption passes through, however briefly (each change's
 * old value, then the current one); `liveStates` reads them, repeats folded.
 */
async function recordLiveStates(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const before: string[] = []
    new MutationObserver((records) => {
      for (const record of records) if (record.oldValue !== null && (record.target as Element).matches('.live-status')) before.push(record.oldValue)
    }).observe(document, { subtree: true, attributeFilter: ['data-state'], attributeOldValue: true })
    ;(window as unknown as { liveStates: () => string[] }).liveStates = () =>
      [...before, document.querySelector<HTMLElement>('.live-status')?.dataset.state ?? ''].filter((state, index, all) => state !== all[index - 1])
  })
}

const liveStates = (page: Page): Promise<string[]> => page.evaluate(() => (window as unknown as { liveStates: () => string[] }).liveStates())

/** Queues a compile of one of alice's files through the API (the slow CLI profile): the answer's status and jobs. */
async function queueCompile(name: string): Promise<{ status: number; jobs: ReadonlyArray<{ id: string }> }> {
  const response = await fetch(`${ui.app.server.url}${API_PREFIX}/compile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ui.app.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ uris: [`${DOCS}${name}`], channel: 'cli', profile_id: 'slow', model_id: 'fake-model' }),
  })
  const { jobs } = (await response.json()) as { jobs: ReadonlyArray<{ id: string }> }
  return { status: response.status, jobs }
}

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

  it("says the table is live only while its stream is open: reconnecting after the stream ends or fails, live again once it reopens", async () => {
    const page = await workspace.open({ uri: DOCS })
    const tasks = await page.context().newPage()
    // As served, before any stream, the caption claims nothing.
    const served = await (await tasks.request.get('/tasks')).text()
    expect(served).toContain('<span class="live-status" aria-live="polite"></span>')
    // The first stream opens and ends at once; the second request fails; the third reaches the server.
    let requests = 0
    await tasks.route(/\/tasks\/stream(\?|$)/, async (route) => {
      requests += 1
      if (requests === 1) await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: ': opened\n\n' })
      else if (requests === 2) await route.abort('connectionreset')
      else await route.continue()
    })
    await recordLiveStates(tasks)
    await tasks.goto('/tasks')
    await tasks.locator('body[data-tasks-ready="true"]').waitFor()
    const status = tasks.locator('caption .live-status')
    await expect.poll(() => requests, { timeout: 15_000 }).toBeGreaterThanOrEqual(3)
    await status.and(tasks.locator('[data-state="live"]')).waitFor()
    await expect(status.textContent()).resolves.toBe('(updated live)')
    await expect(liveStates(tasks)).resolves.toEqual(['live', 'reconnecting', 'live'])
    // and the reopened stream carries updates: a job queued now appears without a reload
    const response = await queueCompile('a.md')
    expect(response.status).toBe(201)
    const { jobs } = response
    await tasks.locator(`#job-rows tr.job[data-job-id="${jobs[0]!.id}"][data-status="succeeded"]`).waitFor()
    expect(workspace.problems()).toEqual([])
  })

  it('says the table is not live when its stream cannot be opened, and keeps the rows as served', async () => {
    const page = await workspace.open({ uri: DOCS })
    const queued = await queueCompile('b.md')
    expect([200, 201]).toContain(queued.status)
    const tasks = await page.context().newPage()
    // what the stream's URL answers when the server refuses it (an error status, not a stream)
    await tasks.route(/\/tasks\/stream(\?|$)/, (route) => route.fulfill({ status: 503, contentType: 'text/html', body: '<p class="refused">unavailable</p>' }))
    await tasks.goto('/tasks')
    await tasks.locator('body[data-tasks-ready="true"]').waitFor()
    const status = tasks.locator('caption .live-status')
    await status.and(tasks.locator('[data-state="down"]')).waitFor()
    await expect(status.textContent()).resolves.toBe('(not live: reload the page to see changes)')
    await expect(tasks.locator('#job-rows tr.job').count()).resolves.toBeGreaterThan(0)
    await expect(tasks.locator('#job-rows .refused').count()).resolves.toBe(0)
    await screenshot(tasks, 'desktop-task-center-not-live')
  })

  it('says why the server refused the stream: too many pages follow the jobs', async () => {
    const page = await workspace.open({ uri: DOCS })
    const before = compile().events.subscribers()
    // alice's programs hold every live job stream a user may have open (the cap is shared with the task center's)
    const programs = new AbortController()
    const held: Response[] = []
    try {
      for (;;) {
        const response = await fetch(`${ui.app.server.url}${API_PREFIX}/jobs/stream`, { headers: { authorization: `Bearer ${ui.app.token}` }, signal: programs.signal })
        if (response.status !== 200) {
          expect(response.status).toBe(429)
          await response.body?.cancel()
          break
        }
        held.push(response)
      }
      expect(held.length).toBeGreaterThan(0)
      const crowded = await page.context().newPage()
      await crowded.goto('/tasks')
      const status = crowded.locator('caption .live-status')
      await status.and(crowded.locator('[data-state="crowded"]')).waitFor()
      await expect(status.textContent()).resolves.toBe('(not live: too many open pages follow your jobs; close one, then reload this one)')
    } finally {
      programs.abort()
    }
    await expect.poll(() => compile().events.subscribers()).toBe(before) // every slot given back before the next test
  })

  it('says the table is not live once the person signs out in another tab, and stops following', async () => {
    const page = await workspace.open({ uri: DOCS })
    const tasks = await page.context().newPage()
    await tasks.goto('/tasks')
    const status = tasks.locator('caption .live-status')
    await status.and(tasks.locator('[data-state="live"]')).waitFor()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/login/)
    await status.and(tasks.locator('[data-state="signed-out"]')).waitFor()
    await expect(status.textContent()).resolves.toBe('(not live: you were signed out; reload the page to sign in again)')
    expect(new URL(tasks.url()).pathname).toBe('/tasks') // told, not navigated away from what it shows
    await screenshot(tasks, 'desktop-task-center-signed-out')
  })

  it('a hidden tab: coming back is not announced as an interruption, and a sign-out meanwhile is told, not retried', async () => {
    const page = await workspace.open({ uri: DOCS })
    const tasks = await page.context().newPage()
    await recordLiveStates(tasks)
    const streamRequests: string[] = []
    tasks.on('request', (request) => {
      if (new URL(request.url()).pathname === '/tasks/stream') streamRequests.push(request.url())
    })
    // what a browser does when the tab goes to the background and back (the SSE extension pauses its stream)
    const setHidden = (hidden: boolean) =>
      tasks.evaluate((value) => {
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => value })
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (value ? 'hidden' : 'visible') })
        document.dispatchEvent(new Event('visibilitychange'))
      }, hidden)
    const before = compile().events.subscribers()
    await tasks.goto('/tasks')
    const status = tasks.locator('caption .live-status')
    await status.and(tasks.locator('[data-state="live"]')).waitFor()
    await expect.poll(() => compile().events.subscribers()).toBe(before + 1)

    await setHidden(true)
    await expect.poll(() => compile().events.subscribers()).toBe(before) // paused: the server let go of it
    await setHidden(false)
    await expect.poll(() => compile().events.subscribers()).toBe(before + 1) // reopened
    await expect(liveStates(tasks)).resolves.toEqual(['live'])

    await setHidden(true)
    await expect.poll(() => compile().events.subscribers()).toBe(before)
    await page.getByRole('button', { name: 'Sign out' }).click() // while no stream is open for it to end
    await page.waitForURL(/\/login/)
    const requestsBeforeReturn = streamRequests.length
    await setHidden(false)
    await status.and(tasks.locator('[data-state="signed-out"]')).waitFor()
    await expect(status.textContent()).resolves.toBe('(not live: you were signed out; reload the page to sign in again)')
    expect(streamRequests.length).toBeGreaterThan(requestsBeforeReturn) // it did try to reopen, and was refused
    // and it stops there: the extension drops the table's connection instead of retrying for ever
    await expect.poll(() => tasks.evaluate(() => (document.getElementById('job-rows') as unknown as { _htmx?: { sse?: unknown } })._htmx?.sse === undefined)).toBe(true)
    await expect(liveStates(tasks)).resolves.toEqual(['live', 'signed-out'])
  })

  it('fits a phone-width screen', async () => {
    const page = await workspace.open({ uri: DOCS, viewport: { width: 390, height: 844 } })
    await page.goto('/tasks')
    await row(page).first().waitFor()
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    await screenshot(page, 'phone-task-center')
  })

  it('goes live however late its scripts arrive: each one later than the one before', async () => {
    const page = await workspace.open({ uri: DOCS })
    const tasks = await page.context().newPage()
    // The worst order for deferred scripts: every script the page loads is held back 300 ms more
    // than the one requested before it. (Two scripts for htmx and its SSE extension lost this
    // race: htmx started before the extension arrived and the table never connected.)
    let scripts = 0
    await tasks.route(/\/static\/.*\.js(\?|$)/, async (route) => {
      const delay = 300 * scripts++
      await new Promise((resolve) => setTimeout(resolve, delay))
      await route.continue()
    })
    await tasks.goto('/tasks')
    await tasks.locator('body[data-tasks-ready="true"]').waitFor()
    expect(scripts).toBeGreaterThan(0)
    const response = await queueCompile('c.md')
    expect(response.status).toBe(201)
    const { jobs } = response
    // not in the page as served: only the live stream can bring the row, then its end
    const job = tasks.locator(`#job-rows tr.job[data-job-id="${jobs[0]!.id}"]`)
    await job.waitFor()
    await job.and(tasks.locator('[data-status="succeeded"]')).waitFor()
    // the stream opened before the caption's script ran: the caption still says so
    await expect(tasks.locator('caption .live-status').textContent()).resolves.toBe('(updated live)')
    expect(workspace.problems()).toEqual([])
  })
})
