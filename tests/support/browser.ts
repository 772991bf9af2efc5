// Browser tests drive Debian's Chromium through playwright-core (never a downloaded browser)
// against the real app from startTestServer. One browser per test file; one context per test.
//
//   const browser = await launchBrowser()
//   const session = await openWorkspace(browser, { server, login, password, mode, uri })
//   … session.page …, session.problems() lists dialogs, page errors and CSP violations
//
// Every scenario runs in both UUID_MODES: with crypto.randomUUID, and with it deleted before the
// page's scripts run (as on a plain-HTTP LAN page, where browsers do not offer it).
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { mkdirSync } from 'node:fs'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
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

export const ARTIFACTS_DIR = new URL('../../test-artifacts/', import.meta.url).pathname

/** playwright's launch() gives every browser a fresh temporary user-data directory. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true })
}

export interface UuidMode {
  readonly name: string
  readonly randomUUID: boolean
}

export const UUID_MODES: ReadonlyArray<UuidMode> = [
  { name: 'with crypto.randomUUID', randomUUID: true },
  { name: 'without crypto.randomUUID', randomUUID: false },
]

/** The display key of a message element (`a-<key>`, `u-<key>`, `c-<key>`) has the mode's shape. */
export function keyPatternOf(mode: UuidMode): RegExp {
  return mode.randomUUID ? /^[auc]-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/ : /^[auc]-m[0-9a-z]+-[0-9a-z]+$/
}

export interface WorkspaceSession {
  readonly context: BrowserContext
  readonly page: Page
  /** Dialogs (alert/confirm), uncaught page errors and console errors seen so far. */
  readonly problems: () => string[]
  readonly close: () => Promise<void>
}

export async function openWorkspace(
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

// ─────────────────────────────────────────────────────────────────────────────────────────────
// A reverse proxy in front of the test server that can reshape the chat's SSE body on its way
// to the browser: re-chunk it at chosen byte offsets (inside a UTF-8 code point, between CR and
// LF), turn LF into CRLF, deliver several events in one chunk, or end it before the terminal
// event. Everything else passes through, streaming, and a browser disconnect is passed on.

export type StreamReshaper = (body: Buffer) => ReadonlyArray<Buffer>

export interface StreamProxy {
  readonly url: string
  /** Applies to the next POST /workspace/chat/stream responses (undefined = pass through). */
  readonly reshape: (reshaper: StreamReshaper | undefined, options?: { delayMs?: number }) => void
  readonly close: () => Promise<void>
}

export async function startStreamProxy(targetUrl: string): Promise<StreamProxy> {
  const target = new URL(targetUrl)
  let reshaper: StreamReshaper | undefined
  let delayMs = 15
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => forward({ req, res, target, reshaper: req.url?.startsWith('/workspace/chat/stream') ? reshaper : undefined, delayMs }))
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reshape: (next, options = {}) => {
      reshaper = next
      delayMs = options.delayMs ?? 15
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function forward({ req, res, target, reshaper, delayMs }: { req: IncomingMessage; res: ServerResponse; target: URL; reshaper: StreamReshaper | undefined; delayMs: number }) {
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
    (answer) => {
      const headers = { ...answer.headers }
      if (reshaper) delete headers['content-length']
      res.writeHead(answer.statusCode ?? 502, headers)
      res.flushHeaders()
      if (!reshaper) {
        answer.pipe(res)
        return
      }
      const parts: Buffer[] = []
      answer.on('data', (part: Buffer) => parts.push(part))
      answer.on('end', () => void writeSlowly(res, reshaper(Buffer.concat(parts)), delayMs))
    },
  )
  upstream.on('error', () => res.destroy())
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy() // the browser went away: so does the proxy's request
  })
  req.pipe(upstream)
}

async function writeSlowly(res: ServerResponse, chunks: ReadonlyArray<Buffer>, delayMs: number): Promise<void> {
  res.socket?.setNoDelay(true)
  for (const chunk of chunks) {
    if (res.destroyed) return
    await new Promise<void>((resolve) => res.write(chunk, () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, delayMs))
  }
  res.end()
}

/** Cuts a body at byte offsets. */
export function cutAt(body: Buffer, offsets: ReadonlyArray<number>): Buffer[] {
  const cuts = [...new Set(offsets.filter((o) => o > 0 && o < body.length))].sort((a, b) => a - b)
  const parts: Buffer[] = []
  let start = 0
  for (const cut of [...cuts, body.length]) {
    parts.push(body.subarray(start, cut))
    start = cut
  }
  return parts.filter((part) => part.length > 0)
}

/** Byte offsets just after the first byte of every multi-byte UTF-8 sequence (a split inside each code point). */
export function insideCodePoints(body: Buffer): number[] {
  const offsets: number[] = []
  for (let i = 0; i < body.length; i++) if (body[i]! >= 0xc0) offsets.push(i + 1)
  return offsets
}

/** Byte offsets between each CR and its LF. */
export function betweenCrAndLf(body: Buffer): number[] {
  const offsets: number[] = []
  for (let i = 0; i + 1 < body.length; i++) if (body[i] === 0x0d && body[i + 1] === 0x0a) offsets.push(i + 1)
  return offsets
}

export const toCrlf = (body: Buffer) => Buffer.from(body.toString('utf8').replace(/\n/g, '\r\n'), 'utf8')

/** The body up to (not including) its terminal `event: done` / `event: error` frame. */
export function withoutTerminal(body: Buffer): Buffer {
  const text = body.toString('utf8')
  const at = Math.max(text.lastIndexOf('event: done\n'), text.lastIndexOf('event: error\n'))
  if (at < 0) throw new Error('the stream had no terminal event to cut')
  return Buffer.from(text.slice(0, at), 'utf8')
}
