// The one fixture for browser tests: real Chromium (Debian's, through playwright-core; never a
// downloaded browser) driving the real app. A test file declares what it needs once:
//
//   const ui = useBrowserFixture({ start: startChatWorkspace })   // Chromium + the app, per file
//   describe('chat', () => {
//     const workspace = ui.workspace(SECURE_PAGE)     // a fresh signed-in browser context per test
//     it('…', async () => {
//       const page = await workspace.open({ uri: 'kb://users/alice/docs/' })
//       ui.app.provider.enqueue(…)
//       expect(workspace.problems()).toEqual([])   // dialogs, page errors, console/CSP errors
//     })
//   })
//
// Scenarios run on a SECURE_PAGE (crypto.randomUUID present); the LAN_PAGE mode deletes it before
// the page's scripts run, as on a plain-HTTP LAN page where browsers do not offer it
// (tests/browser/lan-page.test.ts runs the chat end to end so). Screenshots go
// to test-artifacts/browser/ (git-ignored); a failing test leaves one of its page there.
import { existsSync, mkdirSync } from 'node:fs'
import { basename } from 'node:path'
import { afterAll, afterEach, beforeAll, type TestContext } from 'vitest'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { startStreamProxy, type StreamProxy } from './stream-proxy.ts'
import { signIn, type TestServer } from './test-server.ts'

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export const ARTIFACTS_DIR = new URL('../../test-artifacts/browser/', import.meta.url).pathname

/**
 * Debian's browser itself: /usr/bin/chromium is a shell script that sources /etc/chromium.d and
 * adds flags (extensions, API keys) a test has no use for; playwright passes its own.
 */
export const CHROMIUM_PATH = existsSync('/usr/lib/chromium/chromium') ? '/usr/lib/chromium/chromium' : '/usr/bin/chromium'

/** playwright's launch() gives every browser a fresh temporary user-data directory. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true })
}

let shared: Promise<Browser> | undefined

/**
 * The worker's one Chromium, launched by the first browser file it runs and used by the next ones
 * (vitest keeps a worker's modules between files, `isolate: false`): each test gets its own
 * context — its own cookies, storage and cache — so files share the process, not any state. A
 * browser that crashed or was closed is launched again. Playwright closes it when the worker exits.
 */
export async function sharedBrowser(): Promise<Browser> {
  const running = shared === undefined ? undefined : await shared.catch(() => undefined)
  if (running?.isConnected()) return running
  shared = launchBrowser()
  return shared
}

/** Closes the contexts a file left open in the shared browser, so that the next file starts with none. */
export async function releaseSharedBrowser(browser: Browser | undefined): Promise<void> {
  if (browser === undefined || !browser.isConnected()) return
  await Promise.all(browser.contexts().map((context) => context.close()))
}

export interface UuidMode {
  readonly name: string
  readonly randomUUID: boolean
}

export const SECURE_PAGE: UuidMode = { name: 'with crypto.randomUUID', randomUUID: true }
export const LAN_PAGE: UuidMode = { name: 'without crypto.randomUUID', randomUUID: false }

/** The display key of a message element (`a-<key>`, `u-<key>`, `c-<key>`) has the mode's shape. */
export function keyPatternOf(mode: UuidMode): RegExp {
  return mode.randomUUID ? /^[auc]-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/ : /^[auc]-m[0-9a-z]+-[0-9a-z]+$/
}

/** What the fixture needs from the app it drives: where it runs and whom to sign in as. */
export interface WorkspaceApp {
  readonly server: TestServer
  readonly login: string
  readonly password: string
  readonly close: () => Promise<void>
}

export interface OpenOptions {
  readonly uri?: string
  readonly viewport?: { readonly width: number; readonly height: number }
  /** Load the page through the stream proxy (`useBrowserFixture({ proxy: true })`). */
  readonly viaProxy?: boolean
  /** Console errors a scenario expects (e.g. the aborted request of Stop). */
  readonly allowConsoleErrors?: ReadonlyArray<RegExp>
}

/** The browser sessions of one describe block: at most one open at a time, closed after each test. */
export interface WorkspaceSessions {
  /** Signs in as the app's user in a fresh browser context and opens the workspace page. */
  readonly open: (options?: OpenOptions) => Promise<Page>
  /** Dialogs (alert/confirm), uncaught page errors and console errors of the open session so far. */
  readonly problems: () => string[]
}

export interface BrowserFixture<App extends WorkspaceApp> {
  readonly app: App
  readonly browser: Browser
  readonly proxy: StreamProxy
  /** Call inside a describe block: registers the per-test session handling there. */
  readonly workspace: (mode: UuidMode) => WorkspaceSessions
}

/**
 * Starts the app (`start`, e.g. startChatWorkspace) once for the test file, in beforeAll, and
 * stops it in afterAll, with the worker's shared Chromium (sharedBrowser); with `proxy`, a stream proxy in front of the app too.
 */
export function useBrowserFixture<App extends WorkspaceApp>({
  start,
  proxy: wantsProxy = false,
}: {
  readonly start: () => Promise<App>
  readonly proxy?: boolean
}): BrowserFixture<App> {
  let app: App | undefined
  let browser: Browser | undefined
  let proxy: StreamProxy | undefined
  beforeAll(async () => {
    ;[app, browser] = await Promise.all([start(), sharedBrowser()])
    if (wantsProxy) proxy = await startStreamProxy(app.server.url)
  })
  afterAll(async () => {
    await proxy?.close()
    await releaseSharedBrowser(browser)
    await app?.close()
  })
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`browser fixture: ${what} is not running (use it inside a test, after beforeAll)`)
    return value
  }
  const fixture: BrowserFixture<App> = {
    get app() {
      return started(app, 'the app')
    },
    get browser() {
      return started(browser, 'Chromium')
    },
    get proxy() {
      return started(proxy, wantsProxy ? 'the stream proxy' : 'the stream proxy (ask for it: useBrowserFixture({ proxy: true }))')
    },
    workspace: (mode) => {
      let session: WorkspaceSession | undefined
      afterEach(async (context) => {
        const closing = session
        session = undefined
        if (closing === undefined) return
        if (context.task.result?.state === 'fail') await keepFailureScreenshot({ context, mode, page: closing.page })
        await closing.close()
      })
      return {
        open: async ({ viaProxy = false, ...options } = {}) => {
          await session?.close()
          const { server, login, password } = fixture.app
          session = await openWorkspace(fixture.browser, {
            server,
            baseUrl: viaProxy ? fixture.proxy.url : server.url,
            login,
            password,
            mode,
            ...options,
          })
          return session.page
        },
        problems: () => started(session, 'a workspace session').problems(),
      }
    },
  }
  return fixture
}

async function keepFailureScreenshot({ context, mode, page }: { context: TestContext; mode: UuidMode; page: Page }): Promise<void> {
  const name = `failed-${basename(context.task.file.name, '.test.ts')}-${context.task.name}-${mode.name}`.replace(/[^\p{L}\p{N}]+/gu, '-').slice(0, 160)
  const path = await screenshot(page, name).catch(() => undefined)
  if (path !== undefined) console.log(`screenshot of the failing page: ${path}`) // shown with the test's output
}

interface WorkspaceSession {
  readonly context: BrowserContext
  readonly page: Page
  /** Dialogs (alert/confirm), uncaught page errors and console errors seen so far. */
  readonly problems: () => string[]
  readonly close: () => Promise<void>
}

async function openWorkspace(
  browser: Browser,
  {
    server,
    baseUrl = server.url,
    login,
    password,
    mode,
    uri,
    viewport = { width: 1360, height: 860 },
    allowConsoleErrors = [],
  }: {
    server: TestServer
    baseUrl?: string
    login: string
    password: string
    mode: UuidMode
    uri?: string
    viewport?: { width: number; height: number }
    /** Console errors a scenario expects (e.g. the aborted request of Stop). */
    allowConsoleErrors?: ReadonlyArray<RegExp>
  },
): Promise<WorkspaceSession> {
  const { cookie } = await signIn(server, login, password)
  const [name, value] = cookie.split('=') as [string, string]
  const context = await browser.newContext({ viewport, baseURL: baseUrl })
  context.setDefaultTimeout(10_000) // fail fast: every wait here is for a local server
  await context.addCookies([{ name, value, url: baseUrl }])
  if (!mode.randomUUID) {
    await context.addInitScript(() => {
      delete (Crypto.prototype as { randomUUID?: unknown }).randomUUID
    })
  }
  const page = await context.newPage()
  const problems: string[] = []
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() !== 'error' && !/Content Security Policy/i.test(message.text())) return
    if (allowConsoleErrors.some((pattern) => pattern.test(message.text()))) return
    problems.push(`console.${message.type()}: ${message.text()}`)
  })
  await page.goto(uri ? `/workspace?uri=${encodeURIComponent(uri)}` : '/workspace')
  await page.locator('#chat-form[data-htmx-powered]').waitFor({ state: 'attached' }) // htmx has processed the page
  const hasRandomUuid = await page.evaluate(() => typeof crypto.randomUUID === 'function')
  if (hasRandomUuid !== mode.randomUUID) throw new Error(`expected crypto.randomUUID ${mode.randomUUID ? 'present' : 'absent'}`)
  return { context, page, problems: () => [...problems], close: () => context.close() }
}

/** Saves a PNG of the page under test-artifacts/browser/ and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true })
  const path = `${ARTIFACTS_DIR}${name}.png`
  await page.screenshot({ path })
  return path
}

/** Sends a question through the composer the way a person does: type, Enter. */
export async function ask(page: Page, question: string): Promise<void> {
  const box = page.getByRole('textbox', { name: 'Message' })
  await box.fill(question)
  await box.press('Enter')
}

/** The assistant message of the n-th question (1-based) in the chat log. */
export const assistantMessage = (page: Page, n = 1) => page.locator('#chat-log article.msg.assistant').nth(n - 1)

/** Waits until the n-th answer has settled in `state` (the page set it; Send is back). */
export async function waitForAnswer(page: Page, { n = 1, state = 'done' }: { n?: number; state?: 'done' | 'failed' | 'stopped' } = {}): Promise<void> {
  await assistantMessage(page, n).and(page.locator(`article.is-${state}`)).waitFor()
}
