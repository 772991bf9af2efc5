// The administration pages' guard (docs/security.md): after `requireAuth`, only an account whose
// role is `admin` passes — a member's session or token gets 403 `admin_required`, whatever the
// route. A bearer token passes only when its owner is an admin (the role is read with the token, on
// every request: a demotion applies to the next one).
import type { RequestHandler } from 'express'
import { HttpError } from './http-errors.ts'

export function requireAdmin(): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.user.role !== 'admin') return next(new HttpError(403, 'admin_required', 'this needs an administrator account'))
    next()
  }
}
