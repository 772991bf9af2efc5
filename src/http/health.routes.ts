import { Router } from 'express'
import type { AppContext } from './app-context.ts'

// /healthz: the process is up (also while it drains). /readyz: it takes new work — the database
// answers and it is not draining or shutting down.
export function healthRoutes(ctx: AppContext): Router {
  const router = Router()
  router.get('/healthz', (_req, res) => {
    res.json({ ok: true })
  })
  router.get('/readyz', async (_req, res) => {
    if (ctx.shutdownSignal.aborted || ctx.turns.draining()) {
      // Draining: the load balancer stops sending new work here; running turns finish meanwhile.
      res.status(503).json({ ok: false, reason: ctx.shutdownSignal.aborted ? 'shutting down' : 'draining' })
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
