// Settings → Retrieval services (SPEC §9): the API key (write-only: only whether it is set and
// where from, never the key, not even in the page source), the workspace id and the default
// services (each showing the resolved value and where it comes from; service ids pickable from
// the cache), and the cache diagnostics with a force-refresh button. Works without JavaScript
// (plain forms, redirect after post); with htmx the refresh swaps only the diagnostics.
import { Layout, type NavLink } from '../layout.tsx'
import { PageMessages } from './settings.tsx'

export interface SettingField {
  /** The form field name. */
  readonly name: 'workspace_id' | 'default_retrieve_agent_id' | 'default_chat_agent_id'
  readonly label: string
  readonly value: string
  /** Where the value comes from, in words ("your settings", "from environment (…)", …). */
  readonly source: string
  readonly fromUser: boolean
  readonly hint: string
  /** Services from the cache, for a default-service field. */
  readonly options?: ReadonlyArray<{ readonly id: string; readonly name: string }> | undefined
}

export interface CacheView {
  readonly workspaceId: string | undefined
  /** Why there is nothing to show (not configured), when so. */
  readonly unavailable?: string | undefined
  readonly fetchedAt: Date | undefined
  readonly scenes: ReadonlyArray<{ readonly label: string; readonly count: number; readonly total: number; readonly truncated: boolean }>
  readonly lastError: string | undefined
  readonly lastErrorAt: Date | undefined
  /** A line about the last action (refreshed, or why not). */
  readonly message?: { readonly kind: 'ok' | 'error'; readonly text: string } | undefined
}

export interface RetrievalSettingsProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav: ReadonlyArray<NavLink>
  readonly apiKeyStatus: 'configured' | 'environment' | 'unset'
  /** A stored key that the current server secret cannot decrypt. */
  readonly apiKeyUnreadable: boolean
  readonly fields: ReadonlyArray<SettingField>
  readonly cache: CacheView
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

const API_KEY_STATUS: Record<RetrievalSettingsProps['apiKeyStatus'], string> = {
  configured: 'configured',
  environment: 'from environment (DASHSCOPE_API_KEY)',
  unset: 'not configured',
}

function formatTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

export function RetrievalSettingsPage(props: RetrievalSettingsProps) {
  return (
    <Layout title="Retrieval services" csrfToken={props.csrfToken} login={props.login} nav={props.nav}>
      <link rel="stylesheet" href="/static/retrieval-settings.css" />
      <div class="settings-page">
        <h1>Retrieval services</h1>
        <p class="settings-lead">
          Bailian knowledge bases (Alibaba Cloud Model Studio) that KnowAgent can search (<code>kb_search</code>) and ask (<code>kb_chat</code>). Each value
          comes from the first place that has it: your settings here, the server's config file, your stored credentials or the server environment.
        </p>
        <PageMessages notice={props.notice} error={props.error} />
        <section class="settings-card" aria-labelledby="connection-heading">
          <h2 id="connection-heading">Connection</h2>
          <form method="post" action="/settings/retrieval" class="settings-form" autocomplete="off">
            <input type="hidden" name="_csrf" value={props.csrfToken ?? ''} />
            <div class="setting">
              <label for="api_key">API key</label>
              <input id="api_key" name="api_key" type="password" value="" autocomplete="new-password" spellcheck={false} aria-describedby="api_key_status" placeholder="Enter a new key to replace it" />
              <p class="setting-source" id="api_key_status">
                Status: <strong data-testid="api-key-status">{API_KEY_STATUS[props.apiKeyStatus]}</strong>
                {props.apiKeyUnreadable ? ' — a stored key can no longer be read (the server secret changed); enter it again.' : null}
              </p>
              {props.apiKeyStatus === 'configured' ? (
                <label class="inline">
                  <input type="checkbox" name="remove_api_key" value="on" /> Remove my stored key
                </label>
              ) : null}
            </div>
            {props.fields.map((field) => (
              <div class="setting">
                <label for={field.name}>{field.label}</label>
                <input
                  id={field.name}
                  name={field.name}
                  value={field.value}
                  spellcheck={false}
                  aria-describedby={`${field.name}_source`}
                  {...(field.options ? { list: `${field.name}_options` } : {})}
                />
                {field.options ? (
                  <datalist id={`${field.name}_options`}>
                    {field.options.map((option) => (
                      <option value={option.id}>{option.name}</option>
                    ))}
                  </datalist>
                ) : null}
                <p class="setting-source" id={`${field.name}_source`}>
                  Source: <span data-testid={`${field.name}-source`}>{field.source}</span>. {field.hint}
                  {field.fromUser ? ' Clear the field and save to use the next source.' : ''}
                </p>
              </div>
            ))}
            <button type="submit">Save</button>
          </form>
        </section>
        <CacheSection cache={props.cache} csrfToken={props.csrfToken} />
      </div>
    </Layout>
  )
}

/** The cache diagnostics; also the fragment the refresh button swaps in (its own id is the target). */
export function CacheSection({ cache, csrfToken }: { readonly cache: CacheView; readonly csrfToken: string | undefined }) {
  return (
    <section class="settings-card" id="retrieval-cache" aria-labelledby="cache-heading">
      <h2 id="cache-heading">Service cache</h2>
      {cache.message ? (
        <p class={cache.message.kind === 'ok' ? 'notice' : 'error'} role="status" data-testid="cache-message">
          {cache.message.text}
        </p>
      ) : null}
      {cache.unavailable ? (
        <p>{cache.unavailable}</p>
      ) : (
        <dl class="cache-facts">
          <dt>Workspace</dt>
          <dd>{cache.workspaceId}</dd>
          <dt>Last fetch</dt>
          <dd data-testid="cache-fetched-at">
            {cache.fetchedAt ? <time datetime={cache.fetchedAt.toISOString()}>{formatTime(cache.fetchedAt)}</time> : 'never'}
          </dd>
          {cache.scenes.map((scene) => (
            <>
              <dt>{scene.label}</dt>
              <dd data-testid={`cache-${scene.label.toLowerCase().replace(/\W+/g, '-')}`}>
                {scene.count}
                {scene.truncated ? ` shown of ${scene.total} (truncated: only the first pages are fetched)` : ''}
              </dd>
            </>
          ))}
          <dt>Last error</dt>
          <dd data-testid="cache-last-error">{cache.lastError ? `${cache.lastError} (${cache.lastErrorAt ? formatTime(cache.lastErrorAt) : ''})` : 'none'}</dd>
        </dl>
      )}
      {cache.unavailable ? null : (
        <form method="post" action="/settings/retrieval/refresh" hx-post="/settings/retrieval/refresh" hx-target="#retrieval-cache" hx-swap="outerHTML">
          <input type="hidden" name="_csrf" value={csrfToken ?? ''} />
          <button type="submit">Refresh now</button>
        </form>
      )}
    </section>
  )
}
