// The task center's live table in Chromium: it says whether it is live — while its stream is open,
// when it cannot be opened or the server refuses it, after a sign-out in another tab, in a hidden
// tab, however late its scripts arrive. (Queueing, refusals, cancel and retry: compile.test.ts.)
import { describe, expect, it } from 'vitest'
import { API_PREFIX } from '../../src/http/compile.routes.ts'
import { screenshot, useBrowserFixture, SECURE_PAGE } from '../support/browser.ts'
import { DOCS, liveStates, queueCompile, recordLiveStates, row, startCompileWorkspace } from '../support/compile-workspace.ts'

const ui = useBrowserFixture({ start: startCompileWorkspace })
const mode = SECURE_PAGE

describe('the task center says whether it is live', () => {
  const workspace = ui.workspace(mode)
  const compile = () => ui.app.server.compile!.feature
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
    const response = await queueCompile(ui.app, 'a.md')
    expect(response.status).toBe(201)
    const { jobs } = response
    await tasks.locator(`#job-rows tr.job[data-job-id="${jobs[0]!.id}"][data-status="succeeded"]`).waitFor()
    expect(workspace.problems()).toEqual([])
  })

  it('says the table is not live when its stream cannot be opened, and keeps the rows as served', async () => {
    const page = await workspace.open({ uri: DOCS })
    const queued = await queueCompile(ui.app, 'b.md')
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
    await expect.poll(() => compile().events.subscribers(), { timeout: 10_000 }).toBe(before) // every slot given back before the next test
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
    await expect.poll(() => compile().events.subscribers(), { timeout: 10_000 }).toBe(before + 1)

    await setHidden(true)
    await expect.poll(() => compile().events.subscribers(), { timeout: 10_000 }).toBe(before) // paused: the server let go of it
    await setHidden(false)
    await expect.poll(() => compile().events.subscribers(), { timeout: 10_000 }).toBe(before + 1) // reopened
    await expect(liveStates(tasks)).resolves.toEqual(['live'])
    // and the page reads it: hidden while its reopening fetch is still under way, htmx's SSE extension
    // (hx-sse.js) has no reader to cancel yet and keeps the stream, a race of the library's own
    await expect.poll(() => tasks.evaluate(() => Boolean((document.getElementById('job-rows') as unknown as { _htmx?: { sse?: { reader?: unknown } } })._htmx?.sse?.reader))).toBe(true)

    await setHidden(true)
    await expect.poll(() => compile().events.subscribers(), { timeout: 10_000 }).toBe(before)
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
    const response = await queueCompile(ui.app, 'c.md')
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
