// The administration pages' guard (docs/security.md): only an account whose role is `admin` passes
// — a member's session or token gets 403 `admin_required`, whatever the route — and only with a
// browser session: an admin's API token gets 403 `session_required`. A token that could reset
// passwords, point every user's retrieval key at another host or add a model connection would be a
// stolen token's way to everything; scripts use the CLI on the host. The role is read with the
// session on every request: a demotion applies to the next one.
import type { RequestHandler } from 'express'
import { requireAuth, requireSession } from './authenticate.ts'
import { HttpError } from './http-errors.ts'

/** Signed in, an admin, with a browser session: the guard of every administration route (CSRF comes after, with the body parser). */
export function adminGuard(): RequestHandler[] {
  return [requireAuth(), requireAdmin(), requireSession('the administration pages need a browser session; scripts use the knowagent CLI')]
}

export function requireAdmin(): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.user.role !== 'admin') return next(new HttpError(403, 'admin_required', 'this needs an administrator account'))
    next()
  }
}
