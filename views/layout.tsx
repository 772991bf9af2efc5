import type { Child } from 'hono/jsx'

/** A link in the top bar (e.g. Settings → Retrieval services, present only when the feature is on). */
export interface NavLink {
  readonly href: string
  readonly label: string
}

export const RETRIEVAL_SETTINGS_PATH = '/settings/retrieval'
/** The Trash page (deleted files and folders until they are deleted for good), linked from the tree and the delete dialog. */
export const TRASH_PATH = '/workspace/trash'

/** The top bar's links to the optional areas the server runs (the retrieval settings when that feature runs). */
/** The top bar's links: retrieval services when that feature runs; Administration for an admin. */
export function siteNav({ retrieval, admin = false }: { readonly retrieval: boolean; readonly admin?: boolean | undefined }): NavLink[] {
  return [...(retrieval ? [{ href: RETRIEVAL_SETTINGS_PATH, label: 'Retrieval services' }] : []), ...(admin ? [{ href: ADMIN_HOME_PATH, label: 'Administration' }] : [])]
}

/** The administration pages (src/http/admin-guard.ts guards them), in the order their section list shows them. */
export const ADMIN_SECTIONS: ReadonlyArray<{ readonly id: 'users' | 'models' | 'retrieval' | 'status' | 'backups'; readonly href: string; readonly label: string }> = [
  { id: 'users', href: '/admin/users', label: 'Users' },
  { id: 'status', href: '/admin/status', label: 'Status' },
  { id: 'models', href: '/admin/models', label: 'Model connections' },
  { id: 'retrieval', href: '/admin/retrieval', label: 'Retrieval defaults' },
  { id: 'backups', href: '/admin/backups', label: 'Backups' },
]
export const ADMIN_HOME_PATH = '/admin/users'

/** htmx and its SSE extension, served as one script (src/http/create-app.ts says why). */
export const HTMX_SCRIPT_PATH = '/static/htmx-sse.min.js'

export interface LayoutProps {
  readonly title: string
  readonly csrfToken?: string | undefined
  readonly login?: string | undefined
  /** e.g. "page-workspace": a full-height app page whose panes scroll on their own. */
  readonly bodyClass?: string | undefined
  /** Load the page's own script (/static/js/main.js or `moduleScript`). */
  readonly interactive?: boolean | undefined
  /** The page's module instead of /static/js/main.js (the workspace page's). */
  readonly moduleScript?: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  /** In the top bar between the brand and the links: a page's status line (the workspace's file changes). */
  readonly status?: Child
  readonly children?: Child
}

// htmx 4: back/forward reloads the page (the chat's state lives in the page, a body swap would
// orphan it); no inline indicator CSS is needed (app.css styles .htmx-request).
const HTMX_CONFIG = JSON.stringify({ history: 'reload', includeIndicatorCSS: false })

export function Layout({ title, csrfToken, login, bodyClass, interactive, moduleScript, nav, status, children }: LayoutProps) {
  // htmx 4 does not inherit attributes implicitly: `:inherited` makes every request send the token.
  const csrfHeaders = csrfToken ? { 'hx-headers:inherited': JSON.stringify({ 'X-CSRF-Token': csrfToken }) } : {}
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{title} · knowagent</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/static/app.css" />
        {csrfToken ? <meta name="csrf-token" content={csrfToken} /> : null}
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <script src={HTMX_SCRIPT_PATH} defer></script>
        {/* first: the tab's kept conversations become the signed-in person's before a page's module reads them */}
        {login ? <script type="module" src="/static/js/session-owner.js"></script> : null}
        {interactive ? <script type="module" src={moduleScript ?? '/static/js/main.js'}></script> : null}
      </head>
      {/* data-login: whose page this is (session-owner.js) */}
      <body class={bodyClass} data-login={login} {...csrfHeaders}>
        <header class="topbar">
          <a class="brand" href="/workspace">
            <span class="brand-mark" aria-hidden="true">◆</span> knowagent
          </a>
          {status ? <div class="topbar-status">{status}</div> : null}
          {nav && nav.length > 0 ? (
            <nav class="topnav" aria-label="Settings">
              {nav.map((link) => (
                <a href={link.href}>{link.label}</a>
              ))}
            </nav>
          ) : null}
          {login ? (
            <div class="topbar-links">
              <a href="/settings">Settings</a>
              <form class="signout" method="post" action="/logout">
                <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
                <span class="who">{login}</span>
                <button type="submit" class="ghost">Sign out</button>
              </form>
            </div>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  )
}
