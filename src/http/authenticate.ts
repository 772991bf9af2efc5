// Session cookie (browser, CSRF-protected) or bearer API token (programs).
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { parseCookie, stringifySetCookie } from 'cookie'
import { findSession, findUserByTokenHash } from '../effects/auth/users.ts'
import { hashToken, safeEqual } from '../effects/auth/tokens.ts'
import type { AppContext } from './app-context.ts'
import { forbidden, REVOKED_TOKEN_MESSAGE, unauthorized, type HttpError } from './http-errors.ts'
import { wantsJson } from './error-handler.ts'

export const SESSION_COOKIE = 'ka_session'
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie')
  return header ? parseCookie(header)[name] : undefined
}

export function secureCookies(ctx: AppContext, req: Request): boolean {
  return ctx.config.secureCookies || req.secure
}

export function setCookie(
  ctx: AppContext,
  req: Request,
  res: Response,
  { name, value, maxAgeSeconds }: { name: string; value: string; maxAgeSeconds: number },
): void {
  res.append(
    'Set-Cookie',
    stringifySetCookie({ name, value, httpOnly: true, sameSite: 'lax', path: '/', secure: secureCookies(ctx, req), maxAge: maxAgeSeconds }),
  )
}

/**
 * Resolves `req.auth` from a bearer token or a session cookie; never rejects by itself, except for
 * a Bearer credential that is malformed or not a live token. Other `Authorization` schemes (Basic
 * from a proxy, an empty header) are not ours: they are ignored and the cookie still counts.
 */
export function resolveAuth(ctx: AppContext): RequestHandler {
  return async (req, _res, next) => {
    const header = req.get('authorization')
    if (header !== undefined && /^\s*Bearer(\s|$)/i.test(header)) {
      const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header)
      // A wrong bearer token is an error even if a cookie is present.
      if (!match) return next(unauthorized('malformed Authorization header: expected "Bearer <token>"'))
      const tokenHash = hashToken({ secret: ctx.secret, token: match[1]! })
      const remembered = ctx.tokenMemo !== undefined && TOKEN_CHECKED_AT_ADMISSION.has(`${req.method} ${req.path}`) ? ctx.tokenMemo.get(tokenHash) : undefined
      if (remembered) {
        req.auth = { user: remembered, via: 'token', csrfToken: undefined, tokenHash, uncheckedTokenHash: tokenHash }
        return next()
      }
      const load = () => findUserByTokenHash(ctx.db, tokenHash)
      const user = await (ctx.tokenMemo ? ctx.tokenMemo.lookup(tokenHash, load) : load())
      if (!user) return next(unauthorized(REVOKED_TOKEN_MESSAGE))
      req.auth = { user, via: 'token', csrfToken: undefined, tokenHash }
      return next()
    }
    const token = readCookie(req, SESSION_COOKIE)
    if (token) {
      const session = await findSession(ctx.db, { secret: ctx.secret, token, now: (ctx.now ?? Date.now)() })
      if (session) req.auth = { user: session.user, via: 'session', csrfToken: session.csrfToken }
    }
    next()
  }
}

/**
 * The requests whose turn admission checks the bearer token in its own statement
 * (src/effects/turn/turn-admission.ts): for them a token verified a moment ago is taken from the
 * memo unchecked (`uncheckedTokenHash`), saving a round trip per turn.
 */
export const TOKEN_CHECKED_AT_ADMISSION: ReadonlySet<string> = new Set(['POST /api/v1/knowledge-agent/stream', 'POST /v1/chat/completions'])

/** The 401 of a token that the memo knew but the database no longer accepts (it forgets it). */
export function revokedToken(ctx: AppContext, tokenHash: string): HttpError {
  ctx.tokenMemo?.forget(tokenHash)
  return unauthorized(REVOKED_TOKEN_MESSAGE)
}

/** Whether `tokenHash` is still `userId`'s live token (the full lookup; the memo forgets it if not). */
export async function tokenStillLive(ctx: AppContext, tokenHash: string, userId: string): Promise<boolean> {
  if ((await findUserByTokenHash(ctx.db, tokenHash))?.id === userId) return true
  ctx.tokenMemo?.forget(tokenHash)
  return false
}

/**
 * Whether the credential a request was authenticated with still holds for the same user: its
 * bearer token is still live (not revoked), or its session still exists (not signed out, not
 * expired). Long-lived responses (the job streams) ask this while they run: a revoked token or a
 * signed-out session stops receiving from the next check on.
 */
export async function credentialStillLive(ctx: AppContext, req: Request): Promise<boolean> {
  const auth = req.auth
  if (!auth) return false
  if (auth.via === 'token') return auth.tokenHash !== undefined && (await tokenStillLive(ctx, auth.tokenHash, auth.user.id))
  const token = readCookie(req, SESSION_COOKIE)
  if (!token) return false
  const session = await findSession(ctx.db, { secret: ctx.secret, token, now: (ctx.now ?? Date.now)() })
  return session?.user.id === auth.user.id
}

/**
 * A request's token taken unchecked from the memo, for the turn admission that checks it: its
 * hash, and `checked()` to call once the admission has found out either way (an error after that
 * needs no second check). Undefined when the request's auth was checked already.
 */
export interface UncheckedToken {
  readonly hash: string
  readonly checked: () => void
}

export function uncheckedTokenOf(req: Request): UncheckedToken | undefined {
  const hash = req.auth?.uncheckedTokenHash
  if (hash === undefined) return undefined
  return { hash, checked: () => void (req.auth &&= { ...req.auth, uncheckedTokenHash: undefined }) }
}

/**
 * Checks a token taken unchecked from the memo (a no-op otherwise): true when it is still live
 * for the same user, and the request then counts as checked. Every error response of such a
 * request runs this first, so a revoked token gets 401 and never a more telling error.
 */
export async function checkRequestToken(ctx: AppContext, req: Request): Promise<boolean> {
  const auth = req.auth
  if (auth?.uncheckedTokenHash === undefined) return true
  const live = await tokenStillLive(ctx, auth.uncheckedTokenHash, auth.user.id)
  req.auth = live ? { ...auth, uncheckedTokenHash: undefined } : undefined
  return live
}

/**
 * Requires a browser session (after `requireAuth`): a bearer token gets 403 session_required. For
 * the settings a stolen token must not reach: its own kind (tokens) and the account's secrets.
 */
export function requireSession(message: string): RequestHandler {
  return (req, _res, next) => (req.auth?.via === 'session' ? next() : next(forbidden(message, 'session_required')))
}

/** Requires a signed-in caller: 401 JSON for API paths, a redirect to the login page otherwise. */
export function requireAuth(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.auth) {
      // A person's files, chats and jobs are never kept by a browser or proxy cache: after
      // signing out, Back must not show them (a route may still set its own, e.g. SSE's no-cache).
      res.set('Cache-Control', 'no-store')
      return next()
    }
    if (wantsJson(req) || req.method !== 'GET') return next(unauthorized())
    res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`)
  }
}

/** The CSRF token a request carries: the `X-CSRF-Token` header or the `_csrf` form field — never the query string (URLs leak). */
export function sentCsrfToken(req: Request): string | undefined {
  const header = req.get('x-csrf-token')
  if (header !== undefined) return header
  const field = (req.body as Record<string, unknown> | undefined)?._csrf
  return typeof field === 'string' ? field : undefined
}

/** Every cookie-authenticated state-changing request carries the session's CSRF token. */
export function requireCsrf(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method) || req.auth?.via !== 'session') return next()
    const sent = sentCsrfToken(req)
    if (!sent || !req.auth.csrfToken || !safeEqual(sent, req.auth.csrfToken)) {
      return next(forbidden('missing or invalid CSRF token (send the X-CSRF-Token header or the _csrf form field)', 'csrf'))
    }
    next()
  }
}
