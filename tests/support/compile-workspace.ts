// The compile workspace of the browser tests (tests/browser/compile*.test.ts): the real app with a
// compile worker whose CLI profiles run the fake CLI as real child processes, alice with three
// files under docs/, and the page helpers those tests share.
import type { Page } from 'playwright-core'
import { putFile } from '../../src/effects/workspace/store.ts'
import { API_PREFIX } from '../../src/http/compile.routes.ts'
import type { WorkspaceApp } from './browser.ts'
import { FAKE_CLI, fakeCliProfile } from './compile-harness.ts'
import { addUserWithToken, startTestServer } from './test-server.ts'

export const DOCS = 'kb://users/alice/docs/'

export interface CompileWorkspace extends WorkspaceApp {
  /** alice's API token, for queueing jobs without the form. */
  readonly token: string
}

export async function startCompileWorkspace(): Promise<CompileWorkspace> {
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

export async function openCompileForm(page: Page) {
  const message = page.getByRole('textbox', { name: 'Message' })
  await message.fill('/compile')
  await message.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Compile to wiki' })
  await dialog.locator('#compile-form').waitFor()
  return dialog
}

export async function pickFiles(dialog: ReturnType<Page['getByRole']>, names: ReadonlyArray<string>) {
  for (const box of await dialog.locator('input[name="uris"]').all()) {
    const value = await box.getAttribute('value')
    await box.setChecked(names.some((name) => value === `${DOCS}${name}`))
  }
}

export const row = (page: Page, status?: string) => page.locator(`#job-rows tr.job${status ? `[data-status="${status}"]` : ''}`)

/**
 * Records every state a page's live-table caption passes through, however briefly (each change's
 * old value, then the current one); `liveStates` reads them, repeats folded.
 */
export async function recordLiveStates(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const before: string[] = []
    new MutationObserver((records) => {
      for (const record of records) if (record.oldValue !== null && (record.target as Element).matches('.live-status')) before.push(record.oldValue)
    }).observe(document, { subtree: true, attributeFilter: ['data-state'], attributeOldValue: true })
    ;(window as unknown as { liveStates: () => string[] }).liveStates = () =>
      [...before, document.querySelector<HTMLElement>('.live-status')?.dataset.state ?? ''].filter((state, index, all) => state !== all[index - 1])
  })
}

export const liveStates = (page: Page): Promise<string[]> => page.evaluate(() => (window as unknown as { liveStates: () => string[] }).liveStates())

/** Queues a compile of one of alice's files through the API (the slow CLI profile): the answer's status and jobs. */
export async function queueCompile(app: CompileWorkspace, name: string): Promise<{ status: number; jobs: ReadonlyArray<{ id: string }> }> {
  const response = await fetch(`${app.server.url}${API_PREFIX}/compile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${app.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ uris: [`${DOCS}${name}`], channel: 'cli', profile_id: 'slow', model_id: 'fake-model' }),
  })
  const { jobs } = (await response.json()) as { jobs: ReadonlyArray<{ id: string }> }
  return { status: response.status, jobs }
}
