// Administration → Status (issue 40), for administrators only:
//   GET /admin/status         the page
//   GET /admin/status/panel   its panel (htmx polls it every 5 s)
import { Router } from 'express'
import { siteNav } from '../../views/layout.tsx'
import { ADMIN_STATUS_PANEL_PATH, ADMIN_STATUS_PATH, AdminStatusPage, StatusPanel } from '../../views/pages/admin-status.tsx'
import { renderFragment, renderPage } from '../../views/render.ts'
import { NO_METRICS } from '../effects/observability/metrics.ts'
import { readServiceStatus } from '../effects/observability/service-status.ts'
import { adminGuard } from './admin-guard.ts'
import type { AppContext } from './app-context.ts'
import { redirectHtmxToSignIn } from './fragment-errors.ts'

export function adminStatusRoutes(ctx: AppContext): Router {
  const router = Router()
  const metrics = ctx.metrics ?? NO_METRICS
  router.use(ADMIN_STATUS_PATH, redirectHtmxToSignIn(), ...adminGuard())
  router.get(ADMIN_STATUS_PATH, async (req, res) => {
    const status = await readServiceStatus(ctx.db, metrics)
    const nav = siteNav({ retrieval: ctx.retrieval !== undefined, admin: true })
    res.type('html').set('Cache-Control', 'no-store').send(await renderPage(AdminStatusPage({ login: req.auth!.user.login, csrfToken: req.auth!.csrfToken, nav, status })))
  })
  router.get(ADMIN_STATUS_PANEL_PATH, async (_req, res) => {
    const status = await readServiceStatus(ctx.db, metrics)
    res.type('html').set('Cache-Control', 'no-store').send(await renderFragment(StatusPanel({ status })))
  })
  return router
}
