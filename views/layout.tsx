import type { Child } from 'hono/jsx'

export interface LayoutProps {
  readonly title: string
  readonly csrfToken?: string | undefined
  readonly login?: string | undefined
  readonly children?: Child
}

export function Layout({ title, csrfToken, login, children }: LayoutProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{title} · knowagent</title>
        <link rel="stylesheet" href="/static/app.css" />
        {csrfToken ? <meta name="csrf-token" content={csrfToken} /> : null}
        <script src="/static/htmx.min.js" defer></script>
      </head>
      <body hx-headers={csrfToken ? JSON.stringify({ 'X-CSRF-Token': csrfToken }) : undefined}>
        <header class="topbar">
          <a class="brand" href="/workspace">knowagent</a>
          {login ? (
            <form class="signout" method="post" action="/logout">
              <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
              <span class="who">{login}</span>
              <button type="submit">Sign out</button>
            </form>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  )
}
