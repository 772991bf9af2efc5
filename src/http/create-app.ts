import express, { type Express } from 'express'
import { createHash, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { projectPath } from '../project-root.ts'
import { HTMX_SCRIPT_PATH } from '../../views/layout.tsx'
import type { AppContext } from './app-context.ts'
import { authRoutes } from './auth.routes.ts'
import { checkRequestToken, resolveAuth } from './authenticate.ts'
import { createErrorHandler } from './error-handler.ts'
import { healthRoutes } from './health.routes.ts'
import { metricsRoutes } from './metrics.routes.ts'
import { logContext } from '../effects/logging/log-context.ts'
import { endSpan, SpanKind, startSpan, withSpan } from '../effects/observability/tracing.ts'
import { HttpError } from './http-errors.ts'
import { workspaceRoutes } from './workspace.routes.ts'
import { workspaceFilesRoutes } from './workspace-files.routes.ts'
import { workspaceVersionsRoutes } from './workspace-versions.routes.ts'
import { workspaceTrashRoutes } from './workspace-trash.routes.ts'
import { knowledgeAgentRoutes } from './knowledge-agent.routes.ts'
import { chatRoutes } from './chat.routes.ts'
import { settingsRoutes } from './settings.routes.ts'
import { adminUsersRoutes } from './admin-users.routes.ts'
import { compileRoutes } from './compile.routes.ts'
import { openAiRoutes } from './openai.routes.ts'
import { mcpRoutes } from './mcp.routes.ts'
import { retrievalRoutes } from './retrieval.routes.ts'
import { adminRetrievalRoutes } from './admin-retrieval.routes.ts'
import { adminModelsRoutes } from './admin-models.routes.ts'
import { adminStatusRoutes } from './admin-status.routes.ts'
import { adminBackupsRoutes } from './admin-backups.routes.ts'

const require = createRequire(import.meta.url)
const STATIC_DIR = projectPath('views/static/')
const HTMX_DIST = join(dirname(require.resolve('htmx.org/package.json')), 'dist')

/**
 * htmx followed by its SSE extension (and our listeners on its SSE events), as one script. Loaded
 * as two deferred scripts, htmx starts itself with a timer once it has run; if the extension's
 * file arrived later than that timer fired, htmx had already processed the page without it and the
 * task center's live table never connected. In one script the extension registers before htmx's
 * timer can fire.
 * Read once per process, with its ETag (express would otherwise hash the 44 KB on every request).
 */
interface StaticScript {
  readonly body: Buffer
  readonly etag: string
}
let htmxScript: StaticScript | undefined
function htmxWithSse(): StaticScript {
  return (htmxScript ??= (() => {
    // and the live tables' status (views/static/js/live-status.js), whose listeners must be in place before htmx's first request
    const files = [join(HTMX_DIST, 'htmx.min.js'), join(HTMX_DIST, 'ext', 'hx-sse.min.js'), join(STATIC_DIR, 'js', 'live-status.js')]
    const body = Buffer.from(files.map((file) => readFileSync(file, 'utf8').trimEnd()).join('\n;\n') + '\n')
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
  })())
}

const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:", // never a remote image: a URL can carry data out (docs/security.md)
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ')

/**
 * The route a request matched, as its template (`/api/v1/workspace/node`, `/tasks/:id`): a bounded
 * metric label, never the path itself (which holds ids and URIs).
 */
function routeTemplateOf(req: express.Request): string {
  const route = (req as { route?: { path?: unknown } }).route
  if (route !== undefined && typeof route.path === 'string') return `${req.baseUrl}${route.path}`
  if (req.path.startsWith('/static/')) return '/static'
  return 'unmatched'
}

export function createApp(ctx: AppContext): Express {
  const app = express()
  app.disable('x-powered-by')
  if (ctx.config.trustProxy) app.set('trust proxy', true)

  const metrics = ctx.metrics
  app.use((req, res, next) => {
    req.requestId = randomUUID()
    res.locals.metrics = metrics
    res.set({
      'X-Request-Id': req.requestId,
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
    })
    const started = performance.now()
    const span = startSpan(req.method, { 'http.request.method': req.method, 'knowagent.request_id': req.requestId }, SpanKind.SERVER)
    res.on('finish', () => {
      const ms = performance.now() - started
      ctx.logger.debug('request', { id: req.requestId, method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms) })
      if (metrics?.enabled) metrics.httpRequest(req.method, routeTemplateOf(req), res.statusCode, ms / 1000)
    })
    if (span !== undefined) {
      // ended when the response closes (a stream ends long after its headers)
      res.once('close', () => {
        const route = routeTemplateOf(req)
        span.updateName(`${req.method} ${route}`)
        span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode })
        endSpan(span, res.statusCode >= 500 ? `HTTP ${res.statusCode}` : undefined)
      })
    }
    withSpan(span, () => logContext.run({ request_id: req.requestId }, next))
  })

  app.use(healthRoutes(ctx))
  app.use(metricsRoutes(ctx)) // before sign-in: a scraper has a token of its own, never a session
  app.use('/static', express.static(STATIC_DIR, { maxAge: '1h', fallthrough: true }))
  const htmx = htmxWithSse()
  app.get(HTMX_SCRIPT_PATH, (_req, res) => void res.type('text/javascript').set({ 'Cache-Control': 'public, max-age=3600', ETag: htmx.etag }).send(htmx.body))

  app.use(resolveAuth(ctx))
  app.get('/', (req, res) => res.redirect(303, req.auth ? '/workspace' : '/login'))
  app.use(authRoutes(ctx))
  app.use(workspaceRoutes(ctx))
  app.use(workspaceFilesRoutes(ctx)) // file management and the workspace-wide search
  app.use(workspaceVersionsRoutes(ctx)) // a file's versions: list, restore
  app.use(workspaceTrashRoutes(ctx)) // the Trash: list, restore, delete for good, empty
  app.use(knowledgeAgentRoutes(ctx))
  app.use(chatRoutes(ctx))
  if (ctx.compile) app.use(compileRoutes(ctx, ctx.compile))
  if (ctx.retrieval) app.use(retrievalRoutes(ctx, ctx.retrieval))
  app.use(settingsRoutes(ctx))
  app.use(adminUsersRoutes(ctx)) // /admin, /admin/users
  app.use(adminRetrievalRoutes(ctx)) // Administration → Retrieval defaults
  app.use(adminStatusRoutes(ctx)) // Administration → Status
  app.use(adminBackupsRoutes(ctx)) // Administration → Backups
  if (ctx.modelConnections) app.use(adminModelsRoutes(ctx, ctx.modelConnections)) // Administration → Model connections
  app.use(openAiRoutes(ctx)) // /v1: the OpenAI-compatible face, with its own error shape
  app.use(mcpRoutes(ctx)) // /mcp: the MCP face (docs/mcp.md), JSON-RPC errors

  app.use((req, _res, next) => next(new HttpError(404, 'not_found', `no route for ${req.method} ${req.path}`)))
  app.use(createErrorHandler(ctx.logger, { checkToken: (req) => checkRequestToken(ctx, req) }))
  return app
}
