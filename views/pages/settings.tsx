// Settings pages share one frame: a section nav (Account and API tokens; Retrieval services when
// that feature is on) beside the section.
import type { Child } from 'hono/jsx'
import { Layout, type NavLink, TRASH_PATH } from '../layout.tsx'
import { randomUUID } from 'node:crypto'
import { MIN_PASSWORD_LENGTH } from '../../src/effects/auth/passwords.ts'

export interface SettingsSection {
  readonly id: string
  readonly href: string
  readonly label: string
}

/** What the last action did (`role=status`) or why it failed (`role=alert`), above a settings section. */
export function PageMessages({ notice, error }: { readonly notice?: string | undefined; readonly error?: string | undefined }) {
  return (
    <>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </>
  )
}

export const SETTINGS_SECTIONS: ReadonlyArray<SettingsSection> = [{ id: 'account', href: '/settings', label: 'Account and API tokens' }]

export function SettingsFrame({
  title,
  current,
  login,
  csrfToken,
  nav,
  sections = SETTINGS_SECTIONS,
  sectionsLabel = 'Settings sections',
  bodyClass = 'page-settings',
  children,
}: {
  title: string
  current: string
  login: string
  csrfToken: string | undefined
  /** The top bar's links (as on every page). */
  nav?: ReadonlyArray<NavLink> | undefined
  sections?: ReadonlyArray<SettingsSection> | undefined
  /** The section list's accessible name. */
  sectionsLabel?: string | undefined
  bodyClass?: string | undefined
  children?: Child
}) {
  return (
    <Layout title={title} login={login} csrfToken={csrfToken} nav={nav} bodyClass={bodyClass}>
      <div class="settings">
        <nav class="settings-nav" aria-label={sectionsLabel}>
          <ul>
            {sections.map((section) => (
              <li>
                <a href={section.href} aria-current={section.id === current ? 'page' : undefined}>
                  {section.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="settings-body">{children}</div>
      </div>
    </Layout>
  )
}

export interface TokenRow {
  readonly id: string
  readonly label: string | null
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

export interface AccountSettingsProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly tokens: ReadonlyArray<TokenRow>
  /** What the person's files take with every version, against `limits.userStorageMb`. */
  /** `trashBytes`: the part of `usedBytes` that is in the Trash (emptying it frees that). */
  readonly storage?: { readonly usedBytes: number; readonly limitMb: number; readonly trashBytes?: number | undefined } | undefined
  /** A token just created: shown this once, never again. */
  readonly newToken?: { readonly label: string | null; readonly token: string } | undefined
  readonly notice?: string | undefined
  readonly error?: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  readonly sections?: ReadonlyArray<SettingsSection> | undefined
}

/** "2026-12-01 14:05 UTC" */
export function formatTime(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

const nameOf = (token: { label: string | null }) => token.label ?? '(no name)'

export function AccountSettingsPage(props: AccountSettingsProps) {
  return (
    <SettingsFrame title="Settings" current="account" login={props.login} csrfToken={props.csrfToken} nav={props.nav} sections={props.sections}>
      <h1>Account and API tokens</h1>
      <PageMessages notice={props.notice} error={props.error} />
      <section class="settings-card" aria-labelledby="account-heading">
        <h2 id="account-heading">Account</h2>
        <p>
          Signed in as <strong>{props.login}</strong>.
        </p>
        {props.storage ? (
          <p class="storage-usage">
            Storage: {(props.storage.usedBytes / 1024 / 1024).toFixed(1)} MiB of {props.storage.limitMb} MiB used, every version of every file counted.
            {props.storage.trashBytes ? (
              <>
                {' '}
                {(props.storage.trashBytes / 1024 / 1024).toFixed(1)} MiB of it is in <a href={TRASH_PATH}>the Trash</a>: emptying it frees that.
              </>
            ) : null}
          </p>
        ) : null}
      </section>
      <section class="settings-card" aria-labelledby="password-heading">
        <h2 id="password-heading">Password</h2>
        <p class="muted">Changing it signs you out on every other browser and device; this one stays signed in. Your API tokens keep working.</p>
        <form class="password-form" method="post" action="/settings/password">
          <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
          {/* a username field for password managers, which pair the new password with the account */}
          <input type="text" name="username" value={props.login} autocomplete="username" hidden readonly />
          <label>
            Current password
            <input type="password" name="current" autocomplete="current-password" required />
          </label>
          <label>
            New password
            <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} maxlength={1024} required />
          </label>
          <label>
            New password again
            <input type="password" name="repeat" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} maxlength={1024} required />
          </label>
          <button type="submit">Change password</button>
        </form>
      </section>
      <section class="settings-card" aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        <p class="muted">Lost a device, or signed in somewhere you should not have? This ends every session of your account, this one included; API tokens are not affected.</p>
        <form method="post" action="/settings/sign-out-everywhere">
          <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
          <button type="submit" class="danger">
            Sign out everywhere
          </button>
        </form>
      </section>
      <section class="settings-card" aria-labelledby="tokens-heading">
        <h2 id="tokens-heading">Your API tokens</h2>
        <p class="muted">
          Programs send a token as <code>Authorization: Bearer &lt;token&gt;</code>. A token acts as you: revoke any you no longer use.
        </p>
        {props.newToken ? (
          <div class="new-token" role="status">
            <p>
              New token <strong>{nameOf(props.newToken)}</strong>. Copy it now: it is shown only this once.
            </p>
            <code class="token-value" aria-label="The new API token">
              {props.newToken.token}
            </code>
          </div>
        ) : null}
        {props.tokens.length === 0 ? (
          <p class="muted">You have no active API tokens.</p>
        ) : (
          <table class="tokens">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Revoke</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.tokens.map((token) => (
                <tr>
                  <td>{nameOf(token)}</td>
                  <td>{formatTime(token.createdAt)}</td>
                  <td>{token.lastUsedAt ? formatTime(token.lastUsedAt) : 'never'}</td>
                  <td>
                    <form method="post" action={`/settings/tokens/${token.id}/revoke`}>
                      <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
                      <button type="submit" class="danger small" aria-label={`Revoke token ${nameOf(token)}`}>
                        Revoke
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <form class="create-token" method="post" action="/settings/tokens">
          <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
          {/* One-time: the same form sent twice (a reload re-POSTs it) makes one token. */}
          <input type="hidden" name="_once" value={randomUUID()} />
          <label>
            Token name
            <input name="label" maxlength={100} placeholder="e.g. laptop script" />
          </label>
          <button type="submit">Create token</button>
        </form>
      </section>
    </SettingsFrame>
  )
}
