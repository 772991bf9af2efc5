import { Router } from 'express'
import type { AppContext } from './app-context.ts'

export function healthRoutes(ctx: AppContext): Router {
  const router = Router()
  router.get('/healthz', (_req, res) => {
    res.json({ ok: true })
  })
  router.get('/readyz', async (_req, res) => {
    if (ctx.shutdownSignal.aborted) {
      res.status(503).json({ ok: false, reason: 'shutting down' })
      return
    }
    try {
      await ctx.ping()
      res.json({ ok: true, database: 'reachable' })
    } catch {
      res.status(503).json({ ok: false, reason: 'database unreachable' })
    }
  })
  return router
}
