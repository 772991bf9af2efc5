// The real app on 127.0.0.1 port 0, built from the composition root (src/effects/app-layer.ts)
// over a fresh database on the test PostgreSQL — the services the server itself would have.
import type { Server } from 'node:http'
import { startCoreRuntime } from '../../src/effects/app-layer.ts'
import { loadConfig, type AppConfig } from '../../src/effects/config/app-config.ts'
import { createApiTokenFor, createUser } from '../../src/effects/auth/users.ts'
import type { DatabaseHandle } from '../../src/effects/db/database.ts'
import { createLogger, type Logger } from '../../src/effects/logging/logger.ts'
import type { ModelRegistryOptions } from '../../src/effects/llm/model-registry.ts'
import type { PreStepHook } from '../../src/effects/turn/pre-step-hooks.ts'
import type { AppContext } from '../../src/http/app-context.ts'
import type { DocumentParser } from '../../src/effects/workspace/parse/document-parser.ts'
import { createApp } from '../../src/http/create-app.ts'
import { appContextOf } from '../../src/server.ts'
import { createPostgresDatabase, TEST_PASSWORD_COST } from './test-database.ts'
import type { CliProfile, QueueSettings } from '../../src/effects/compile/compile-config.ts'
import type { RunningCompileFeature } from '../../src/effects/compile/compile-feature.ts'

/** Compile jobs on the test server (queue, LISTEN connection, service), with a worker unless `worker: false`. */
export interface TestCompileOptions {
  readonly worker?: boolean
  readonly cliProfiles?: ReadonlyArray<CliProfile>
  readonly settings?: Partial<QueueSettings>
}

export interface TestServer {
  readonly url: string
  readonly database: DatabaseHandle & { readonly url: string }
  readonly ctx: AppContext
  readonly logLines: string[]
  readonly shutdownController: AbortController
  /** The server's open connections (to wait until it has seen a client go). */
  readonly connections: () => Promise<number>
  /** Present with the `compile` option. */
  readonly compile: RunningCompileFeature | undefined
  readonly close: () => Promise<void>
}

export const TEST_SECRET = 'test-secret-0123456789abcdef'

export interface TestServerOptions {
  /** Wraps the app's document parser (tests that act while an upload is being parsed). */
  readonly wrapParser?: (parser: DocumentParser) => DocumentParser
  /** Compile jobs (the queue, live updates and, unless `worker: false`, a worker). */
  readonly compile?: TestCompileOptions
  /** Another server's database: two servers (two "processes") on one PostgreSQL; not dropped by this one. */
  readonly databaseUrl?: string
  /** Registers a pre-step hook in the app's slot (as a feature would in the composition root). */
  readonly preStep?: PreStepHook
  /**
   * Runs the retrieval feature in the app's runtime, as serve does (its tools, pre-step hook and
   * settings page; nothing when `retrieval.bailian.enabled` is false). The `bl` login import is off.
   */
  readonly retrieval?: boolean
  readonly env?: Record<string, string>
  readonly configure?: (config: AppConfig) => AppConfig
  /** The model registry's options besides the configured models (the local model, retry timing); `local.deltaDelayMs` is 0 unless set. */
  readonly modelRegistry?: Partial<ModelRegistryOptions>
  readonly sseKeepAliveMs?: number
  /** How often job streams re-check their credential (AppContext.credentialRecheckMs). */
  readonly credentialRecheckMs?: number
  /** The app's clock (sessions, throttling, rate limits), for tests that move time. */
  readonly now?: () => number
}

export async function startTestServer({
  env = {},
  configure,
  modelRegistry,
  sseKeepAliveMs,
  credentialRecheckMs,
  now,
  preStep,
  compile,
  databaseUrl: sharedUrl,
  retrieval = false,
  wrapParser,
}: TestServerOptions = {}): Promise<TestServer> {
  const created = sharedUrl ? { url: sharedUrl, drop: async () => {} } : await createPostgresDatabase()
  const logLines: string[] = []
  const logger: Logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) })
  let config = loadConfig({ env: { KNOWAGENT_DATA_DIR: '/nonexistent', KNOWAGENT_SECRET: TEST_SECRET, DATABASE_URL: created.url, ...env }, cwd: '/' })
  if (compile) {
    config = {
      ...config,
      file: {
        ...config.file,
        cliProfiles: compile.cliProfiles ?? config.file.cliProfiles,
        compile: {
          ...config.file.compile,
          queue: { heartbeatSeconds: 10, retryDelaySeconds: 1, pollingIntervalSeconds: 0.5, ...config.file.compile?.queue, ...compile.settings, inServe: compile.worker !== false },
        },
      },
    }
  }
  if (configure) config = configure(config)
  const runtime = await startCoreRuntime({
    config,
    logger,
    models: { local: { deltaDelayMs: 0 }, ...modelRegistry },
    features: { retrieval: retrieval ? { blConfigPath: null } : false, compile: compile !== undefined, modelConnections: true, backups: true },
  })
  const shutdownController = new AbortController()
  const { database } = runtime.services
  const running = runtime.services.compile
  const base = appContextOf(runtime.services, shutdownController.signal)
  const ctx: AppContext = { ...base, sseKeepAliveMs, credentialRecheckMs, now, ...(preStep ? { preStep } : {}), ...(wrapParser ? { parser: wrapParser(base.parser) } : {}) }
  const app = createApp(ctx)
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    database: { ...runtime.services.database, url: created.url },
    ctx,
    logLines,
    shutdownController,
    connections: () => new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count)))),
    compile: running,
    close: async () => {
      shutdownController.abort()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await runtime.dispose()
      await created.drop()
    },
  }
}

export async function addUserWithToken(server: TestServer, login: string, password = 'password-' + login) {
  const user = await createUser(server.database.db, { login, password, hashCost: TEST_PASSWORD_COST })
  const token = await createApiTokenFor(server.database.db, { secret: TEST_SECRET, login })
  return { user, token, password }
}

/** Signs in through the real login form; returns the session cookie and the page's CSRF token. */
export async function signIn(server: Pick<TestServer, 'url'>, login: string, password: string): Promise<{ cookie: string; csrf: string }> {
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
