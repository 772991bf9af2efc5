// Pages and fragments that do not dead-end (issue 14): a node that is missing, not the caller's,
// or failed on the server is answered inside the app — the content pane in place, or a page in
// the layout — with what was asked for, what happened and a link to the nearest existing folder.
import type { ErrorRequestHandler, Request } from 'express'
import type { Owner } from '../effects/db/schema.ts'
import { findNode } from '../effects/workspace/store.ts'
import { formatKbUri, parseKbUri } from '../effects/workspace/uri.ts'
import { ErrorPage } from '../../views/pages/error-page.tsx'
import { ContentError, type NodeProblem } from '../../views/partials/content-pane.tsx'
import { renderFragment, renderPage } from '../../views/render.ts'
import type { AppContext } from './app-context.ts'
import { siteNav } from '../../views/layout.tsx'
import { describeError } from './error-handler.ts'

/** The deepest existing folder on the way to `uri` (the caller's root when none is, or the URI is not theirs). */
export async function nearestFolder(ctx: Pick<AppContext, 'db'>, caller: Owner, uri: string | undefined): Promise<string> {
  const root = formatKbUri({ login: caller.login, segments: [], directory: true })
  if (uri === undefined) return root
  let segments: ReadonlyArray<string>
  try {
    segments = parseKbUri({ uri, callerLogin: caller.login }).segments
  } catch {
    return root
  }
  for (let depth = segments.length; depth > 0; depth--) {
    const node = await findNode(ctx.db, caller, segments.slice(0, depth))
    if (node?.kind === 'directory') return node.uri
  }
  return root
}

function requestedUri(req: Request): string | undefined {
  const fromQuery = req.query.uri
  const fromBody = (req.body as Record<string, unknown> | undefined)?.uri
  const uri = typeof fromQuery === 'string' ? fromQuery : typeof fromBody === 'string' ? fromBody : undefined
  return uri?.slice(0, 4096)
}

export async function nodeProblemOf(ctx: AppContext, req: Request, error: unknown): Promise<{ problem: NodeProblem; headers: Record<string, string> }> {
  const described = describeError(error)
  if (described.status >= 500) {
    ctx.logger.error('request failed', {
      method: req.method,
      path: req.path,
      error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
    })
  }
  const requested = requestedUri(req)
  const user = req.auth?.user
  const nearest = user ? await nearestFolder(ctx, user, requested).catch(() => formatKbUri({ login: user.login, segments: [], directory: true })) : 'kb://me/'
  return {
    problem: { status: described.status, code: described.code, message: described.message, requested, nearestFolder: nearest },
    headers: described.headers,
  }
}

/** GET /workspace/content: the problem in the content pane's place (htmx swaps 4xx and 5xx answers too). */
export function contentProblemHandler(ctx: AppContext): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error)
    void nodeProblemOf(ctx, req, error)
      .then(async ({ problem, headers }) => res.status(problem.status).set(headers).type('html').send(await renderFragment(ContentError({ problem }))))
      .catch(next)
  }
}

/** A full page under /workspace (the workspace itself, a form posted without scripts): the problem in the layout. */
export function pageProblemHandler(ctx: AppContext): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent || req.get('hx-request') === 'true' || (req.get('accept') ?? '').includes('application/json')) return next(error)
    void nodeProblemOf(ctx, req, error)
      .then(async ({ problem, headers }) =>
        res
          .status(problem.status)
          .set(headers)
          .type('html')
          .send(await renderPage(ErrorPage({ login: req.auth?.user.login, csrfToken: req.auth?.csrfToken, nav: siteNav({ retrieval: ctx.retrieval !== undefined, admin: req.auth?.user.role === 'admin' }), problem }))),
      )
      .catch(next)
  }
}
