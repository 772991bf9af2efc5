// GET /metrics: the Prometheus text format (src/effects/observability/metrics.ts), for a scraper —
// never for signed-in users. Off unless `metrics.enabled`; with `metrics.token` a scraper sends
// `Authorization: Bearer <token>`; without one only this machine may scrape (a loopback peer with
// no proxy headers, so a reverse proxy on the same host does not open it to the world).
import { createHash, timingSafeEqual } from 'node:crypto'
import { Router } from 'express'
import type { AppContext } from './app-context.ts'
import { HttpError } from './http-errors.ts'

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])
const digest = (text: string) => createHash('sha256').update(text).digest()

export function metricsRoutes(ctx: AppContext): Router {
  const router = Router()
  const metrics = ctx.metrics
  if (metrics === undefined || !metrics.enabled) return router // /metrics is then an ordinary 404
  const expected = ctx.config.metrics.token === undefined ? undefined : digest(ctx.config.metrics.token)
  router.get('/metrics', async (req, res) => {
    if (expected !== undefined) {
      const header = req.get('authorization') ?? ''
      const presented = /^Bearer\s+(.+)$/i.exec(header)?.[1]
      if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
        res.set('WWW-Authenticate', 'Bearer realm="metrics"')
        throw new HttpError(401, 'unauthorized', 'send the metrics token as Authorization: Bearer <metrics.token>')
      }
    } else if (!LOOPBACK.has(req.socket.remoteAddress ?? '') || req.get('x-forwarded-for') !== undefined || req.get('forwarded') !== undefined) {
      throw new HttpError(403, 'metrics_forbidden', 'metrics are served only to this machine; set metrics.token to scrape from elsewhere')
    }
    res.type('text/plain; version=0.0.4; charset=utf-8').set('Cache-Control', 'no-store').send(await metrics.render())
  })
  return router
}
