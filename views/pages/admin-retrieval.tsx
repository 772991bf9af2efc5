// Administration → Retrieval defaults (issue 36): the server-wide Bailian values every process on the
// database uses — the default workspace id, endpointHost, agentVersion, chatTimeoutMs. Each shows
// the value in force and where it comes from, a form to change it and, when one is stored, a form
// back to the config file's value. Plain forms with redirect after post: no JavaScript needed.
import type { NavLink } from '../layout.tsx'
import { AdminFrame } from './admin-frame.tsx'
import { PageMessages } from './settings.tsx'

export interface AdminRetrievalSetting {
  /** The setting's key: the form's `key` field, and the CLI's name for it. */
  readonly key: string
  readonly label: string
  readonly hint: string
  /** The value in force, as text ('' when none). */
  readonly value: string
  /** What "none" means for this setting (no default workspace id, the published version). */
  readonly noneText: string
  readonly source: 'stored' | 'config' | 'default'
  /** What "back to the config file's value" brings back, as text ('' when none). */
  readonly configValue: string
  readonly inputMode?: 'numeric' | undefined
  /** The refused value and why, when this setting's form was just refused. */
  readonly refused?: { readonly value: string; readonly message: string } | undefined
}

export interface AdminRetrievalProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav: ReadonlyArray<NavLink>
  readonly settings: ReadonlyArray<AdminRetrievalSetting>
  /** False when `retrieval.bailian.enabled` is false: the values are kept but nothing uses them. */
  readonly featureOn: boolean
  /** The stored document does not decode (edited by hand in SQL): why. */
  readonly storedProblem?: string | undefined
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

const SOURCE_TEXT: Record<AdminRetrievalSetting['source'], string> = {
  stored: 'stored here (for every server on this database)',
  config: 'the config file (retrieval.bailian)',
  default: 'built-in default',
}

export const ADMIN_RETRIEVAL_PATH = '/admin/retrieval'

export function AdminRetrievalPage(props: AdminRetrievalProps) {
  return (
    <AdminFrame title="Retrieval defaults" current="retrieval" csrfToken={props.csrfToken} login={props.login} nav={props.nav}>
      <link rel="stylesheet" href="/static/retrieval-settings.css" />
      <link rel="stylesheet" href="/static/admin-retrieval.css" />
      <div class="settings-page">
        <h1>Retrieval defaults</h1>
        <p class="settings-lead">
          Server-wide values for the Bailian knowledge services. A change here applies at once to every knowagent process on this database (the same as{' '}
          <code>knowagent retrieval set</code>); a value not stored here comes from the server's config file, else the built-in default.
        </p>
        {props.featureOn ? null : (
          <p class="notice" role="note">
            Retrieval services are switched off in the config file (<code>retrieval.bailian.enabled: false</code>): these values are kept, and used once it is on.
          </p>
        )}
        {props.storedProblem ? (
          <p class="error" role="alert">
            The stored values are invalid ({props.storedProblem}); every server keeps its last good values until one is saved here again.
          </p>
        ) : null}
        <PageMessages notice={props.notice} error={props.error} />
        {props.settings.map((setting) => (
          <SettingCard setting={setting} csrfToken={props.csrfToken} />
        ))}
      </div>
    </AdminFrame>
  )
}

function SettingCard({ setting, csrfToken }: { readonly setting: AdminRetrievalSetting; readonly csrfToken: string | undefined }) {
  const id = `setting-${setting.key}`
  const input = `${setting.key}-value`
  return (
    <section class="settings-card" id={id} aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>
        {setting.label} <code class="setting-key">{setting.key}</code>
      </h2>
      <dl class="cache-facts">
        <dt>In force</dt>
        <dd data-testid={`${setting.key}-in-force`}>{setting.value === '' ? setting.noneText : <code>{setting.value}</code>}</dd>
        <dt>From</dt>
        <dd data-testid={`${setting.key}-source`}>{SOURCE_TEXT[setting.source]}</dd>
        <dt>Config file's value</dt>
        <dd>{setting.configValue === '' ? setting.noneText : <code>{setting.configValue}</code>}</dd>
      </dl>
      <form method="post" action={ADMIN_RETRIEVAL_PATH} class="settings-form" autocomplete="off">
        <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
        <input type="hidden" name="key" value={setting.key} />
        <input type="hidden" name="action" value="set" />
        <div class="setting">
          <label for={input}>New {setting.label.toLowerCase()}</label>
          <input
            id={input}
            name="value"
            value={setting.refused ? setting.refused.value : setting.value}
            spellcheck={false}
            aria-describedby={setting.refused ? `${input}-hint ${input}-error` : `${input}-hint`}
            {...(setting.refused ? { 'aria-invalid': 'true' } : {})}
            {...(setting.inputMode ? { inputmode: setting.inputMode } : {})}
          />
          {setting.refused ? (
            <p class="error" id={`${input}-error`} data-testid={`${setting.key}-error`}>
              Not saved: {setting.refused.message}. The value in force is unchanged.
            </p>
          ) : null}
          <p class="setting-source" id={`${input}-hint`}>
            {setting.hint}
          </p>
        </div>
        <button type="submit" aria-label={`Save ${setting.label.toLowerCase()}`}>
          Save
        </button>
      </form>
      {setting.source === 'stored' ? (
        <form method="post" action={ADMIN_RETRIEVAL_PATH} class="setting-reset">
          <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
          <input type="hidden" name="key" value={setting.key} />
          <input type="hidden" name="action" value="unset" />
          <button type="submit" class="reset-button" aria-label={`Back to the config file's value for ${setting.label.toLowerCase()}`}>
            Back to the config file's value
          </button>
        </form>
      ) : null}
    </section>
  )
}
