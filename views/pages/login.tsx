import { Layout } from '../layout.tsx'

export function LoginPage({
  loginCsrf,
  next,
  error,
  login,
  unlock,
  notice,
}: {
  loginCsrf: string
  next: string
  error?: string | undefined
  login?: string | undefined
  /** A one-time unlock link's token (`knowagent user unlock`): sent with the form. */
  unlock?: string | undefined
  /** What ended the last session (signed out everywhere). */
  notice?: string | undefined
}) {
  return (
    // signed-out.js: the tab's stored conversations are forgotten on the page every sign-out lands on.
    <Layout title="Sign in" interactive moduleScript="/static/js/signed-out.js">
      <section class="login-card">
        <h1>Sign in</h1>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        {unlock ? <p class="notice">This page came from a one-time unlock link: your next sign-in is checked even if your login is locked out.</p> : null}
        <form method="post" action="/login">
          <input type="hidden" name="_login_csrf" value={loginCsrf} />
          <input type="hidden" name="next" value={next} />
          {unlock ? <input type="hidden" name="unlock" value={unlock} /> : null}
          <label>
            Login
            <input name="login" autocomplete="username" required value={login ?? ''} autofocus />
          </label>
          <label>
            Password
            <input name="password" type="password" autocomplete="current-password" required />
          </label>
          <button type="submit">Sign in</button>
        </form>
      </section>
    </Layout>
  )
}
