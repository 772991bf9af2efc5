// Administration → Users (src/http/admin-users.routes.ts): every account with its role, dates,
// state and live tokens; add a user, reset a password (the new one shown once), promote or demote,
// disable or enable, delete after a confirmation page that says what goes.
import { randomUUID } from 'node:crypto'
import type { NavLink } from '../layout.tsx'
import { AdminFrame } from './admin-frame.tsx'
import { formatTime, PageMessages } from './settings.tsx'

export interface AccountRow {
  readonly login: string
  readonly role: 'admin' | 'member'
  readonly createdAt: Date
  readonly lastSignInAt: Date | null
  readonly disabled: boolean
  readonly tokens: number
}

/** A password just made (a new account's, or a reset one): shown in this answer only, never again. */
export interface ShownPassword {
  readonly login: string
  readonly password: string
  /** What the answer says around it. */
  readonly lines: ReadonlyArray<string>
}

export interface AdminUsersProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  readonly accounts: ReadonlyArray<AccountRow>
  readonly shownPassword?: ShownPassword | undefined
  readonly notice?: string | undefined
  readonly error?: string | undefined
  /** What the add form had (shown again when it was refused). */
  readonly draft?: { readonly login: string; readonly role: 'admin' | 'member' } | undefined
}

const userPath = (login: string, action: string) => `/admin/users/${encodeURIComponent(login)}/${action}`

function Csrf({ token }: { token: string | undefined }) {
  return <input type="hidden" name="_csrf" value={token ?? ''} />
}

/** One button in its own POST form. */
function ActionForm({ action, csrfToken, label, text, danger, fields = {} }: { action: string; csrfToken: string | undefined; label: string; text: string; danger?: boolean; fields?: Record<string, string> }) {
  return (
    <form method="post" action={action}>
      <Csrf token={csrfToken} />
      {Object.entries(fields).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <button type="submit" class={danger ? 'danger-ghost small' : 'ghost-outline small'} aria-label={label}>
        {text}
      </button>
    </form>
  )
}

export function AdminUsersPage(props: AdminUsersProps) {
  const { csrfToken } = props
  return (
    <AdminFrame title="Users" current="users" login={props.login} csrfToken={csrfToken} nav={props.nav}>
      <h1>Users</h1>
      <PageMessages notice={props.notice} error={props.error} />
      {props.shownPassword ? (
        <div class="new-token" role="status">
          {props.shownPassword.lines.map((line) => (
            <p>{line}</p>
          ))}
          <code class="token-value" aria-label={`The new password for ${props.shownPassword.login}`}>
            {props.shownPassword.password}
          </code>
        </div>
      ) : null}
      <section class="settings-card" aria-labelledby="accounts-heading">
        <h2 id="accounts-heading">Accounts</h2>
        <p class="muted">
          Admins reach these pages; members do not. At least one enabled admin always remains. Disabling ends the account's sessions and revokes its API tokens.
        </p>
        <div class="table-scroll">
          <table class="accounts">
            <thead>
              <tr>
                <th scope="col">Login</th>
                <th scope="col">Role</th>
                <th scope="col">Created</th>
                <th scope="col">Last sign-in</th>
                <th scope="col">State</th>
                <th scope="col">API tokens</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {props.accounts.map((account) => (
                <tr data-login={account.login}>
                  <td>
                    <strong>{account.login}</strong>
                    {account.login === props.login ? <span class="muted"> (you)</span> : null}
                  </td>
                  <td data-label="Role">{account.role}</td>
                  <td data-label="Created">{formatTime(account.createdAt)}</td>
                  <td data-label="Last sign-in">{account.lastSignInAt ? formatTime(account.lastSignInAt) : 'never'}</td>
                  <td data-label="State">{account.disabled ? 'disabled' : 'enabled'}</td>
                  <td data-label="API tokens">{account.tokens}</td>
                  <td>
                    <div class="row-actions">
                      {account.role === 'member' ? (
                        <ActionForm action={userPath(account.login, 'role')} csrfToken={csrfToken} fields={{ role: 'admin' }} label={`Make ${account.login} an admin`} text="Make admin" />
                      ) : (
                        <ActionForm action={userPath(account.login, 'role')} csrfToken={csrfToken} fields={{ role: 'member' }} label={`Make ${account.login} a member`} text="Make member" />
                      )}
                      {/* One-time: the same form sent twice (a reload re-POSTs it) resets once. */}
                      <ActionForm action={userPath(account.login, 'password')} csrfToken={csrfToken} fields={{ _once: randomUUID() }} label={`Reset the password of ${account.login}`} text="Reset password" />
                      {account.disabled ? (
                        <ActionForm action={userPath(account.login, 'enable')} csrfToken={csrfToken} label={`Enable ${account.login}`} text="Enable" />
                      ) : (
                        <ActionForm action={userPath(account.login, 'disable')} csrfToken={csrfToken} label={`Disable ${account.login}`} text="Disable" danger />
                      )}
                      <a class="button-link small danger-link" href={userPath(account.login, 'delete')} aria-label={`Delete ${account.login}…`}>
                        Delete…
                      </a>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section class="settings-card" aria-labelledby="add-user-heading">
        <h2 id="add-user-heading">Add a user</h2>
        <p class="muted">A password is generated and shown once, here; give it to the person, who can change it under Settings.</p>
        <form class="create-token" method="post" action="/admin/users">
          <Csrf token={csrfToken} />
          {/* One-time: the same form sent twice (a reload re-POSTs it) creates one user. */}
          <input type="hidden" name="_once" value={randomUUID()} />
          <label>
            Login
            <input name="login" required maxlength={63} autocomplete="off" value={props.draft?.login ?? ''} placeholder="e.g. dana" />
          </label>
          <label>
            Role
            <select name="role">
              <option value="member" selected={props.draft?.role !== 'admin'}>
                member
              </option>
              <option value="admin" selected={props.draft?.role === 'admin'}>
                admin
              </option>
            </select>
          </label>
          <button type="submit">Add user</button>
        </form>
      </section>
    </AdminFrame>
  )
}

export interface DeleteAccountProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav?: ReadonlyArray<NavLink> | undefined
  /** The account to delete. */
  readonly target: string
  /** What goes with it (describeAccountContents). */
  readonly contents: ReadonlyArray<string>
  readonly noExport: string
  readonly error?: string | undefined
}

export function DeleteAccountPage(props: DeleteAccountProps) {
  return (
    <AdminFrame title={`Delete ${props.target}`} current="users" login={props.login} csrfToken={props.csrfToken} nav={props.nav}>
      <h1>Delete {props.target}</h1>
      <PageMessages error={props.error} />
      <section class="settings-card" aria-labelledby="delete-heading">
        <h2 id="delete-heading">This removes, for good</h2>
        <ul>
          {props.contents.map((line) => (
            <li>{line}</li>
          ))}
        </ul>
        <p>
          <strong>{props.noExport}</strong>
        </p>
        <form class="create-token" method="post" action={userPath(props.target, 'delete')}>
          <Csrf token={props.csrfToken} />
          <label>
            Type the login to confirm
            <input name="confirm" required autocomplete="off" />
          </label>
          <button type="submit" class="danger">
            Delete {props.target}
          </button>
          <a href="/admin/users">Cancel</a>
        </form>
      </section>
    </AdminFrame>
  )
}
