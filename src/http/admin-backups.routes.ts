// Administration → Backups, for administrators only:
//   GET /admin/backups   the schedule from the config file, the next run, the last 20 runs (backup_runs)
// Read-only: backups are configured in the config file and taken by the queue (scheduled-backups.ts)
// or by `knowagent backup` on the host.
import { Router } from 'express'
import { nextRun } from '../effects/backup/scheduled-backups.ts'
import { siteNav } from '../../views/layout.tsx'
import { ADMIN_BACKUPS_PATH, AdminBackupsPage } from '../../views/pages/admin-backups.tsx'
import { renderPage } from '../../views/render.ts'
import { adminGuard } from './admin-guard.ts'
import type { AppContext } from './app-context.ts'
import { redirectHtmxToSignIn } from './fragment-errors.ts'

export function adminBackupsRoutes(ctx: AppContext): Router {
  const router = Router()
  router.get(ADMIN_BACKUPS_PATH, redirectHtmxToSignIn(), ...adminGuard(), async (req, res) => {
    const runs = await ctx.db
      .selectFrom('backup_runs')
      .select(['started_at', 'status', 'file', 'bytes', 'duration_ms', 'error'])
      .orderBy('started_at', 'desc')
      .limit(20)
      .execute()
    const { schedule, dir, keep } = ctx.config.backup
    res
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(
        await renderPage(
          AdminBackupsPage({
            login: req.auth!.user.login,
            csrfToken: req.auth!.csrfToken,
            nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: true }),
            schedule,
            dir,
            keep,
            nextRun: schedule ? nextRun(schedule) : undefined,
            runs: runs.map((run) => ({
              startedAt: run.started_at,
              status: run.status,
              file: run.file,
              bytes: run.bytes === null ? null : Number(run.bytes),
              durationMs: run.duration_ms,
              error: run.error,
            })),
          }),
        ),
      )
  })
  return router
}
