import { Router, urlencoded } from 'express'
import { authenticatePassword, createSession, deleteSession } from '../effects/auth/users.ts'
import { generateOpaqueToken, safeEqual } from '../effects/auth/tokens.ts'
import { LoginPage } from '../../views/pages/login.tsx'
import { renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { readCookie, requireCsrf, SESSION_COOKIE, setCookie } from './authenticate.ts'

const LOGIN_CSRF_COOKIE = 'ka_login'

/** Only local paths: never redirect off-site after sign-in. */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : '/workspace'
}

export function authRoutes(ctx: AppContext): Router {
  const router = Router()
  const form = urlencoded({ extended: false, limit: '16kb' })

  router.get('/login', async (req, res) => {
    if (req.auth) return res.redirect(303, safeNext(req.query.next))
    const loginCsrf = generateOpaqueToken()
    setCookie(ctx, req, res, { name: LOGIN_CSRF_COOKIE, value: loginCsrf, maxAgeSeconds: 3600 })
    res.type('html').send(await renderPage(LoginPage({ loginCsrf, next: safeNext(req.query.next) })))
  })

  router.post('/login', form, async (req, res) => {
    const { login, password, next, _login_csrf: sent } = (req.body ?? {}) as Record<string, unknown>
    const expected = readCookie(req, LOGIN_CSRF_COOKIE)
    const again = async (status: number, error: string) => {
      const loginCsrf = generateOpaqueToken()
      setCookie(ctx, req, res, { name: LOGIN_CSRF_COOKIE, value: loginCsrf, maxAgeSeconds: 3600 })
      res
        .status(status)
        .type('html')
        .send(await renderPage(LoginPage({ loginCsrf, next: safeNext(next), error, login: typeof login === 'string' ? login : undefined })))
    }
    if (typeof sent !== 'string' || !expected || !safeEqual(sent, expected)) {
      return again(403, 'Your sign-in form expired. Please try again.')
    }
    if (typeof login !== 'string' || typeof password !== 'string' || !login || !password) {
      return again(400, 'Enter your login and password.')
    }
    const user = await authenticatePassword(ctx.db, { login: login.trim(), password })
    if (!user) {
      ctx.logger.info('sign-in failed', { login: login.slice(0, 64) })
      return again(401, 'Wrong login or password.')
    }
    const session = await createSession(ctx.db, { secret: ctx.secret, userId: user.id, ttlHours: ctx.config.sessionTtlHours })
    setCookie(ctx, req, res, { name: SESSION_COOKIE, value: session.token, maxAgeSeconds: ctx.config.sessionTtlHours * 3600 })
    res.append('Set-Cookie', `${LOGIN_CSRF_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    ctx.logger.info('signed in', { login: user.login })
    res.redirect(303, safeNext(next))
  })

  router.post('/logout', form, requireCsrf(), async (req, res) => {
    const token = readCookie(req, SESSION_COOKIE)
    if (token) await deleteSession(ctx.db, { secret: ctx.secret, token })
    res.append('Set-Cookie', `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`)
    res.redirect(303, '/login')
  })
  return router
}
