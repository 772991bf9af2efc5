// Errors of routes that answer htmx with HTML fragments. htmx parses any response body as HTML
// (and swaps 4xx answers too), so an error message that echoes input (a URI, a file name) must
// reach it escaped: rendered by hono/jsx, never as the error handler's plain text.
import type { ErrorRequestHandler, Request, RequestHandler } from 'express'
import type { JSX } from 'hono/jsx/jsx-runtime'
import type { Logger } from '../effects/logging/logger.ts'
import { renderFragment } from '../../views/render.ts'
import { describeError } from './error-handler.ts'

export interface DescribedError {
  readonly status: number
  readonly code: string
  readonly message: string
}

export function fragmentErrorHandler(logger: Logger, render: (error: DescribedError, req: Request) => JSX.Element): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error)
    const described = describeError(error)
    if (described.status >= 500) {
      logger.error('request failed', { method: req.method, path: req.path, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
    }
    void renderFragment(render(described, req)).then(
      (html) => res.status(described.status).set(described.headers).type('html').send(html),
      (renderError: unknown) => next(renderError),
    )
  }
}

/**
 * An htmx request from a page whose session has ended: a redirect would be followed by fetch and
 * the sign-in page swapped into a fragment's place, so answer 401 with `HX-Redirect` instead
 * (htmx then loads the sign-in page, which returns to the page the person was on).
 */
export function redirectHtmxToSignIn(): RequestHandler {
  return (req, res, next) => {
    if (req.auth || req.get('hx-request') !== 'true') return next()
    const current = safeLocalPath(req.get('hx-current-url'))
    res.status(401).set('HX-Redirect', `/login?next=${encodeURIComponent(current)}`).type('text/plain').send('sign in again')
  }
}

function safeLocalPath(url: string | undefined): string {
  try {
    const parsed = new URL(url ?? '', 'http://local.invalid')
    return parsed.pathname.startsWith('/') && !parsed.pathname.startsWith('//') ? parsed.pathname + parsed.search : '/workspace'
  } catch {
    return '/workspace'
  }
}
