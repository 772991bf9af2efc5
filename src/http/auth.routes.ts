import { Router } from 'express'
import { formBody } from './body-limit.ts'
import { AccountDisabled, authenticatePassword, createSession, deleteSession } from '../effects/auth/users.ts'
import { recordSignIn } from '../effects/auth/accounts.ts'
import { createConcurrencyGate, GateBusy } from '../effects/auth/concurrency-gate.ts'
import { beginSignInAttempt, clearLoginThrottle, DEFAULT_SIGN_IN_POLICY, type SignInPolicy } from '../effects/auth/sign-in-throttle.ts'
import { UNLOCK_PARAMETER, useUnlockToken } from '../effects/auth/sign-in-unlock.ts'
import { generateOpaqueToken, safeEqual } from '../effects/auth/tokens.ts'
import { LoginPage } from '../../views/pages/login.tsx'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { readCookie, requireCsrf, SESSION_COOKIE, setCookie } from './authenticate.ts'

const LOGIN_CSRF_COOKIE = 'ka_login'

/** The sign-in page after Settings → Sign out everywhere (`?notice=signed_out_everywhere`; the text is ours). */
export const SIGNED_OUT_EVERYWHERE = 'You are signed out everywhere: every session of your account ended, this one included. Your API tokens still work; revoke them under Settings if one may be lost.'

/** Only local paths: never redirect off-site after sign-in. */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : '/workspace'
}

/**
 * Where a person lands after signing in: `next` when it is one of their own pages. A page of
 * another person's tree (`?uri=kb://users/<other>/…`, left in the address by whoever signed out
 * before) would only say "Not yours to see": their own workspace instead.
 */
function nextAfterSignIn(next: unknown, login: string): string {
  const path = safeNext(next)
  const uri = new URL(path, 'http://knowagent.invalid').searchParams.get('uri')
  const owner = uri === null ? undefined : /^kb:\/\/users\/([^/]+)/.exec(uri)?.[1]
  return owner !== undefined && owner !== login ? '/workspace' : path
}

/** "45 s", "3 min", "1 h 5 min": how long a sign-in lock-out still lasts. */
export function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.ceil(seconds / 60)
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`
}

/** An unlock link's token as a request carries it (anything else is no link). */
function unlockOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{16,128}$/.test(value) ? value : undefined
}

export function signInPolicy(ctx: AppContext): SignInPolicy {
  return {
    ...DEFAULT_SIGN_IN_POLICY,
    freeFailuresPerLogin: ctx.config.signInFailuresPerLogin,
    freeFailuresPerAddress: ctx.config.signInFailuresPerAddress,
    maxLockoutMs: ctx.config.signInMaxLockoutSeconds * 1000,
  }
}

export function authRoutes(ctx: AppContext): Router {
  const router = Router()
  const form = formBody({ limit: '16kb' })
  const now = ctx.now ?? Date.now
  const policy = signInPolicy(ctx)
  // Few hashes at once, a short queue, then "busy": a burst of sign-ins cannot take libuv's pool.
  const passwordChecks = createConcurrencyGate({ concurrency: ctx.config.concurrentPasswordChecks, maxWaiting: 32 })

  router.get('/login', async (req, res) => {
    if (req.auth) return res.redirect(303, nextAfterSignIn(req.query.next, req.auth.user.login))
    const loginCsrf = generateOpaqueToken()
    setCookie(ctx, req, res, { name: LOGIN_CSRF_COOKIE, value: loginCsrf, maxAgeSeconds: 3600 })
    const notice = req.query.notice === 'signed_out_everywhere' ? SIGNED_OUT_EVERYWHERE : undefined
    res.type('html').send(await renderPage(LoginPage({ loginCsrf, next: safeNext(req.query.next), unlock: unlockOf(req.query[UNLOCK_PARAMETER]), notice })))
  })

  router.post('/login', form, async (req, res) => {
    const { login, password, next, _login_csrf: sent, [UNLOCK_PARAMETER]: unlockField } = (req.body ?? {}) as Record<string, unknown>
    const unlock = unlockOf(unlockField)
    const expected = readCookie(req, LOGIN_CSRF_COOKIE)
    const again = async (status: number, error: string) => {
      const loginCsrf = generateOpaqueToken()
      setCookie(ctx, req, res, { name: LOGIN_CSRF_COOKIE, value: loginCsrf, maxAgeSeconds: 3600 })
      res
        .status(status)
        .type('html')
        .send(await renderPage(LoginPage({ loginCsrf, next: safeNext(next), error, login: typeof login === 'string' ? login : undefined })))
      // an unlock link is used up by its one attempt: the form shown again does not carry it
    }
    if (typeof sent !== 'string' || !expected || !safeEqual(sent, expected)) {
      return again(403, 'Your sign-in form expired. Please try again.')
    }
    if (typeof login !== 'string' || typeof password !== 'string' || !login || !password) {
      return again(400, 'Enter your login and password.')
    }
    // Through an unlock link (`knowagent user unlock`), used up here: this one password check runs
    // whatever the lock-outs say. Otherwise throttled before any hash is computed; the attempt is
    // counted as failed until it succeeds.
    const unlocked = unlock !== undefined && (await useUnlockToken(ctx.db, { secret: ctx.secret, token: unlock, login: login.trim(), now: now() }))
    const attempt = unlocked
      ? { ok: true as const, succeeded: () => clearLoginThrottle(ctx.db, login.trim()), notChecked: async () => undefined }
      : await beginSignInAttempt(ctx.db, { login: login.trim(), address: req.ip, now: now(), policy })
    if (unlocked) ctx.logger.warn('sign-in through an unlock link', { login: login.slice(0, 64), address: req.ip })
    if (!attempt.ok) {
      const seconds = Math.ceil(attempt.retryAfterMs / 1000)
      ctx.logger.warn('sign-in throttled', { login: login.slice(0, 64), address: req.ip, scope: attempt.scope, retryAfterSeconds: seconds })
      res.set('Retry-After', String(seconds))
      const who = attempt.scope === 'login' ? 'for this login' : 'from your network address'
      return again(429, `Too many failed sign-ins ${who}. Try again in ${formatWait(seconds)}; until then the password is not checked, so even the right one is refused.`)
    }
    let user: Awaited<ReturnType<typeof authenticatePassword>>
    try {
      user = await passwordChecks.run(() => authenticatePassword(ctx.db, { login: login.trim(), password }))
    } catch (error) {
      if (error instanceof AccountDisabled) {
        await attempt.succeeded() // the password was right: not a guess to count
        ctx.logger.info('sign-in refused: account disabled', { login: login.slice(0, 64) })
        return again(403, 'This account is disabled. Ask an administrator to enable it.')
      }
      if (!(error instanceof GateBusy)) throw error
      await attempt.notChecked()
      ctx.logger.warn('sign-in refused: too many password checks at once', { login: login.slice(0, 64) })
      res.set('Retry-After', '1')
      return again(503, 'The server is busy checking other sign-ins. Try again in a moment.')
    }
    if (!user) {
      ctx.logger.info('sign-in failed', { login: login.slice(0, 64) })
      return again(401, 'Wrong login or password.')
    }
    await attempt.succeeded()
    await recordSignIn(ctx.db, user.id)
    const session = await createSession(ctx.db, { secret: ctx.secret, userId: user.id, ttlHours: ctx.config.sessionTtlHours, now: now() })
    setCookie(ctx, req, res, { name: SESSION_COOKIE, value: session.token, maxAgeSeconds: ctx.config.sessionTtlHours * 3600 })
    res.append('Set-Cookie', `${LOGIN_CSRF_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    ctx.logger.info('signed in', { login: user.login })
    res.redirect(303, nextAfterSignIn(next, user.login))
  })

  router.post('/logout', form, requireCsrf(), async (req, res) => {
    const token = readCookie(req, SESSION_COOKIE)
    if (token) await deleteSession(ctx.db, { secret: ctx.secret, token })
    res.append('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    res.redirect(303, '/login')
  })
  return router
}
