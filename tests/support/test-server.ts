// The real app on 127.0.0.1 port 0 over a fresh test database.
import type { Server } from 'node:http'
import { loadConfig, type AppConfig } from '../../src/effects/config/app-config.ts'
import { createApiTokenFor, createUser } from '../../src/effects/auth/users.ts'
import { createLogger, type Logger } from '../../src/effects/logging/logger.ts'
import { createApp } from '../../src/http/create-app.ts'
import { makeModelRegistry, type ModelRegistryOptions } from '../../src/effects/llm/model-registry.ts'
import type { AppContext } from '../../src/http/app-context.ts'
import { openTestDatabase, type DatabaseKind, type TestDatabase } from './test-database.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { type CliProfile, type QueueSettings, resolveCompileDefaults } from '../../src/effects/compile/compile-config.ts'
import { startQueue } from '../../src/effects/compile/compile-queue.ts'
import { makeCompileService } from '../../src/effects/compile/compile-service.ts'
import { type CompileWorker, startCompileWorker } from '../../src/effects/compile/compile-worker.ts'
import { makeJobEvents } from '../../src/effects/compile/job-events.ts'
import { loadBundledSkills } from '../../src/effects/compile/skills.ts'

/** Compile jobs on the test server: queue, LISTEN connection, service, and (optionally) a worker. */
export interface TestCompileOptions {
  readonly worker?: boolean
  readonly cliProfiles?: ReadonlyArray<CliProfile>
  readonly settings?: Partial<QueueSettings>
}
const TEST_COMPILE_SETTINGS: QueueSettings = { concurrency: 2, heartbeatSeconds: 10, retryDelaySeconds: 1, pollingIntervalSeconds: 0.5, inServe: true }

export interface TestServer {
  readonly url: string
  readonly database: TestDatabase
  readonly ctx: AppContext
  readonly logLines: string[]
  readonly shutdownController: AbortController
  /** Present with the `compile` option and `worker: true`. */
  readonly worker: CompileWorker | undefined
  readonly close: () => Promise<void>
}

export const TEST_SECRET = 'test-secret-0123456789abcdef'

export async function startTestServer({
  kind = 'pglite',
  env = {},
  configure,
  models,
  sseKeepAliveMs,
  compile,
  database: shared,
}: {
  kind?: DatabaseKind
  /** Compile jobs (needs kind 'postgres'). */
  compile?: TestCompileOptions
  /** Another server's database: two servers (two "processes") on one PostgreSQL. Not closed by this server. */
  database?: TestDatabase
  env?: Record<string, string>
  configure?: (config: AppConfig) => AppConfig
  models?: Partial<ModelRegistryOptions>
  sseKeepAliveMs?: number
} = {}): Promise<TestServer> {
  const database = shared ?? (await openTestDatabase(compile ? 'postgres' : kind))
  const logLines: string[] = []
  const logger: Logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) })
  let config = loadConfig({ env: { KNOWAGENT_DATA_DIR: '/nonexistent', KNOWAGENT_SECRET: TEST_SECRET, ...env }, cwd: '/' })
  if (configure) config = configure(config)
  const shutdownController = new AbortController()
  const registry = makeModelRegistry({ models: config.file.models ?? [], env: config.env, local: { deltaDelayMs: 0 }, ...models })
  const closers: Array<() => Promise<void>> = []
  let worker: CompileWorker | undefined
  let compileFeature: AppContext['compile']
  if (compile) {
    const url = database.url!
    const settings = { ...TEST_COMPILE_SETTINGS, ...compile.settings }
    const queue = await startQueue({ databaseUrl: url, settings, logger, supervise: false })
    const events = makeJobEvents({ databaseUrl: url, logger })
    await events.ready()
    const cliProfiles = compile.cliProfiles ?? []
    const service = makeCompileService({
      db: database.db,
      queue,
      models: registry,
      cliProfiles,
      defaults: resolveCompileDefaults({ settings: config.file.compile, firstModelId: registry.list()[0]?.id ?? 'local' }),
      bundledSkills: loadBundledSkills(),
    })
    if (compile.worker) {
      worker = await startCompileWorker({ db: database.db, databaseUrl: url, engines: { models: registry, cliProfiles, serverEnv: {} }, settings, events, logger })
      closers.push(() => worker!.stop())
    }
    closers.push(() => queue.stop({ graceful: false, timeoutMs: 1_000 }), () => events.close())
    compileFeature = { service, events }
  }
  const ctx: AppContext = { db: database.db, ping: database.ping, config, secret: TEST_SECRET, logger, models: registry, tools: makeToolRegistry(WORKSPACE_TOOLS), compile: compileFeature, sseKeepAliveMs, shutdownSignal: shutdownController.signal }
  const app = createApp(ctx)
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    database,
    ctx,
    logLines,
    shutdownController,
    worker,
    close: async () => {
      shutdownController.abort()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      for (const close of closers) await close()
      if (!shared) await database.close()
    },
  }
}

export async function addUserWithToken(server: TestServer, login: string, password = 'password-' + login) {
  const user = await createUser(server.database.db, { login, password })
  const token = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login })
  return { user, token, password }
}

/** Signs in through the real login form; returns the session cookie and the page's CSRF token. */
export async function signIn(server: TestServer, login: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const page = await fetch(`${server.url}/login`)
  const loginCookie = page.headers.getSetCookie().find((c) => c.startsWith('ka_login='))!.split(';')[0]!
  const html = await page.text()
  const loginCsrf = /name="_login_csrf" value="([^"]+)"/.exec(html)![1]!
  const res = await fetch(`${server.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
    body: new URLSearchParams({ login, password, _login_csrf: loginCsrf, next: '/workspace' }),
  })
  if (res.status !== 303) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`)
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('ka_session='))!.split(';')[0]!
  const workspace = await fetch(`${server.url}/workspace`, { headers: { cookie } })
  const csrf = /name="csrf-token" content="([^"]+)"/.exec(await workspace.text())![1]!
  return { cookie, csrf }
}
