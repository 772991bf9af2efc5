import express, { type Express } from 'express'
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { projectPath } from '../project-root.ts'
import type { AppContext } from './app-context.ts'
import { authRoutes } from './auth.routes.ts'
import { resolveAuth } from './authenticate.ts'
import { createErrorHandler } from './error-handler.ts'
import { healthRoutes } from './health.routes.ts'
import { HttpError } from './http-errors.ts'
import { workspaceRoutes } from './workspace.routes.ts'
import { workspaceFilesRoutes } from './workspace-files.routes.ts'
import { knowledgeAgentRoutes } from './knowledge-agent.routes.ts'
import { chatRoutes } from './chat.routes.ts'
import { settingsRoutes } from './settings.routes.ts'
import { compileRoutes } from './compile.routes.ts'
import { openAiRoutes } from './openai.routes.ts'
import { retrievalRoutes } from './retrieval.routes.ts'

const require = createRequire(import.meta.url)
const STATIC_DIR = projectPath('views/static/')
const HTMX_DIST = join(dirname(require.resolve('htmx.org/package.json')), 'dist')

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

export function createApp(ctx: AppContext): Express {
  const app = express()
  app.disable('x-powered-by')
  if (ctx.config.trustProxy) app.set('trust proxy', true)

  app.use((req, res, next) => {
    req.requestId = randomUUID()
    res.set({
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
    })
    const started = performance.now()
    res.on('finish', () => {
      ctx.logger.debug('request', {
        id: req.requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms: Math.round(performance.now() - started),
      })
    })
    next()
  })

  app.use(healthRoutes(ctx))
  app.use('/static', express.static(STATIC_DIR, { maxAge: '1h', fallthrough: true }))
  app.get('/static/htmx.min.js', (_req, res) => res.sendFile(join(HTMX_DIST, 'htmx.min.js'), { maxAge: '1h' }))
  app.get('/static/hx-sse.js', (_req, res) => res.sendFile(join(HTMX_DIST, 'ext', 'hx-sse.js'), { maxAge: '1h' }))

  app.use(resolveAuth(ctx))
  app.get('/', (req, res) => res.redirect(303, req.auth ? '/workspace' : '/login'))
  app.use(authRoutes(ctx))
  app.use(workspaceRoutes(ctx))
  app.use(workspaceFilesRoutes(ctx)) // file management and the workspace-wide search
  app.use(knowledgeAgentRoutes(ctx))
  app.use(chatRoutes(ctx))
  if (ctx.compile) app.use(compileRoutes(ctx, ctx.compile))
  if (ctx.retrieval) app.use(retrievalRoutes(ctx, ctx.retrieval))
  app.use(settingsRoutes(ctx))
  app.use(openAiRoutes(ctx)) // /v1: the OpenAI-compatible face, with its own error shape

  app.use((req, _res, next) => next(new HttpError(404, 'not_found', `no route for ${req.method} ${req.path}`)))
  app.use(createErrorHandler(ctx.logger))
  return app
}
