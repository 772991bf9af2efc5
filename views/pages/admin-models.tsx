// Admin → Model connections (issue 36): the models offered and the server's default, the config
// file's models (read-only), each stored connection (key status only — never the key, not even in
// the page source —, Test, its models to offer, edit, delete) and a form to add one. Plain forms
// that work without JavaScript (redirect after post); every form carries the CSRF token.
import type { ConnectionTestLine } from '../../src/effects/llm/connection-test.ts'
import type { ConnectionView } from '../../src/effects/llm/model-connections.ts'
import type { ModelInfo } from '../../src/effects/llm/model.ts'
import type { NavLink } from '../layout.tsx'
import { AdminFrame } from './admin-frame.tsx'
import { PageMessages } from './settings.tsx'

export const ADMIN_MODELS_PATH = '/admin/models'

export interface OfferedModel extends ModelInfo {
  readonly source: 'config' | 'connection' | 'built-in'
}

export interface AdminModelsProps {
  readonly login: string
  readonly csrfToken: string | undefined
  readonly nav: ReadonlyArray<NavLink>
  readonly offered: ReadonlyArray<OfferedModel>
  readonly defaultModelId: string
  /** The administrator's choice (undefined: the first model offered). */
  readonly chosenDefault: string | undefined
  readonly configModels: ReadonlyArray<ModelInfo>
  readonly connections: ReadonlyArray<ConnectionView>
  /** The Test just run, shown in its connection's card. */
  readonly testResult?: { readonly connectionId: string; readonly lines: ReadonlyArray<ConnectionTestLine> } | undefined
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

const KEY_STATUS = (connection: ConnectionView): string =>
  connection.apiKeyStatus === 'configured'
    ? 'configured'
    : connection.apiKeyStatus === 'environment'
      ? `from environment (${connection.apiKeyEnv ?? ''})`
      : connection.apiKeyEnv
        ? `not configured (${connection.apiKeyEnv} is not set)`
        : 'not configured'

function Csrf({ token }: { readonly token: string | undefined }) {
  return <input type="hidden" name="_csrf" value={token ?? ''} />
}

export function AdminModelsPage(props: AdminModelsProps) {
  return (
    <AdminFrame title="Model connections" current="models" csrfToken={props.csrfToken} login={props.login} nav={props.nav}>
      <link rel="stylesheet" href="/static/retrieval-settings.css" />
      <link rel="stylesheet" href="/static/admin-models.css" />
      <div class="settings-page admin-page">
        <h1>Model connections</h1>
        <p class="settings-lead">
          OpenAI-compatible providers the chat can use — a cloud API or a server on this machine or your network (Ollama, vLLM, llama.cpp). Changes apply to every
          user and every knowagent process at once; a running answer keeps the model it started with. Models from the config file are listed read-only and win
          when a stored model has the same id.
        </p>
        <PageMessages notice={props.notice} error={props.error} />
        <OfferedSection {...props} />
        {props.configModels.length > 0 ? <ConfigModelsSection models={props.configModels} /> : null}
        {props.connections.map((connection) => (
          <ConnectionCard connection={connection} csrfToken={props.csrfToken} testLines={props.testResult?.connectionId === connection.id ? props.testResult.lines : undefined} />
        ))}
        <AddConnectionSection csrfToken={props.csrfToken} />
      </div>
    </AdminFrame>
  )
}

function OfferedSection(props: AdminModelsProps) {
  return (
    <section class="settings-card" aria-labelledby="offered-heading">
      <h2 id="offered-heading">Models offered</h2>
      <div class="model-table-scroll">
        <table class="model-table" data-testid="offered-models">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">From</th>
              <th scope="col">Context window</th>
            </tr>
          </thead>
          <tbody>
            {props.offered.map((model) => (
              <tr>
                <td>
                  {model.name}
                  {model.id === props.defaultModelId ? <strong> (default)</strong> : null}
                </td>
                <td class="model-name">{model.id}</td>
                <td>{model.source === 'config' ? 'the config file' : model.source === 'built-in' ? 'built in' : model.profile}</td>
                <td>{model.contextWindow.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <form method="post" action={`${ADMIN_MODELS_PATH}/default`} class="settings-form" style="margin-top:.8rem">
        <Csrf token={props.csrfToken} />
        <div class="setting">
          <label for="default_model">Default model</label>
          <select id="default_model" name="default_model">
            <option value="" selected={props.chosenDefault === undefined}>
              The first model offered
            </option>
            {props.offered.map((model) => (
              <option value={model.id} selected={props.chosenDefault === model.id}>
                {model.name} ({model.id})
              </option>
            ))}
          </select>
          <p class="setting-source">What the chat and the API pick when nobody chose a model.</p>
        </div>
        <button type="submit">Save default</button>
      </form>
    </section>
  )
}

function ConfigModelsSection({ models }: { readonly models: ReadonlyArray<ModelInfo> }) {
  return (
    <section class="settings-card" aria-labelledby="config-heading">
      <h2 id="config-heading">From the config file</h2>
      <p class="setting-source">Read-only here: change them in knowagent.config.json (their keys come from the environment, apiKeyEnv).</p>
      <div class="model-table-scroll">
        <table class="model-table" data-testid="config-models">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Context window</th>
              <th scope="col">Output reserve</th>
              <th scope="col">Tool calling</th>
            </tr>
          </thead>
          <tbody>
            {models.map((model) => (
              <tr>
                <td>{model.name}</td>
                <td class="model-name">{model.id}</td>
                <td>{model.contextWindow.toLocaleString('en')}</td>
                <td>{model.maxOutputTokens.toLocaleString('en')}</td>
                <td>{model.supportsNativeToolCalling ? 'yes' : 'no'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}

function ConnectionCard({
  connection,
  csrfToken,
  testLines,
}: {
  readonly connection: ConnectionView
  readonly csrfToken: string | undefined
  readonly testLines: ReadonlyArray<ConnectionTestLine> | undefined
}) {
  const base = `${ADMIN_MODELS_PATH}/connections/${connection.id}`
  const headingId = `connection-${connection.id}-heading`
  return (
    <section class="settings-card" id={`connection-${connection.id}`} aria-labelledby={headingId} data-testid="connection">
      <h2 id={headingId}>{connection.name}</h2>
      <dl class="connection-facts">
        <dt>Base URL</dt>
        <dd>{connection.baseUrl}</dd>
        <dt>API key</dt>
        <dd data-testid="api-key-status">
          {KEY_STATUS(connection)}
          {connection.secretsUnreadable ? ' — a stored key or header can no longer be read (the server secret changed); enter it again.' : null}
        </dd>
        <dt>Extra headers</dt>
        <dd>{connection.headerCount === 0 ? 'none' : `${connection.headerCount} configured`}</dd>
      </dl>
      <div class="connection-actions">
        <form method="post" action={`${base}/test`}>
          <Csrf token={csrfToken} />
          <button type="submit">Test</button>
        </form>
        <form method="post" action={`${base}/delete`}>
          <Csrf token={csrfToken} />
          <button type="submit" class="ghost danger" aria-label={`Delete the connection ${connection.name}`}>
            Delete
          </button>
        </form>
      </div>
      {testLines ? (
        <ul class="test-result" data-testid="test-result" role="status" aria-label="Test result">
          {testLines.map((line) => (
            <li class={line.ok ? 'ok' : 'failed'}>
              {line.ok ? '✓ ' : '✗ '}
              {line.text}
            </li>
          ))}
        </ul>
      ) : null}
      <ModelsForm connection={connection} csrfToken={csrfToken} action={`${base}/models`} />
      <details class="edit-connection">
        <summary>Edit the connection</summary>
        <ConnectionForm action={base} csrfToken={csrfToken} connection={connection} idPrefix={`edit-${connection.id}`} submit="Save connection" />
      </details>
    </section>
  )
}

function ModelsForm({ connection, csrfToken, action }: { readonly connection: ConnectionView; readonly csrfToken: string | undefined; readonly action: string }) {
  const rowId = (index: number, field: string) => `m-${connection.id}-${index}-${field}`
  return (
    <form method="post" action={action} class="settings-form" aria-label={`Models of ${connection.name}`}>
      <Csrf token={csrfToken} />
      <input type="hidden" name="model_count" value={String(connection.models.length)} />
      {connection.models.length === 0 ? (
        <p class="setting-source">No models yet: press Test to list the provider's models, or add one by name.</p>
      ) : (
        <div class="model-table-scroll">
          <table class="model-table" data-testid="connection-models">
            <thead>
              <tr>
                <th scope="col">Offer</th>
                <th scope="col">Provider's model</th>
                <th scope="col">Display name</th>
                <th scope="col">Context window</th>
                <th scope="col">Output reserve</th>
                <th scope="col">Tool calling</th>
                <th scope="col">Remove</th>
              </tr>
            </thead>
            <tbody>
              {connection.models.map((model, index) => (
                <tr data-model={model.providerModel}>
                  <td>
                    <input type="hidden" name={`model_${index}_provider`} value={model.providerModel} />
                    <input type="checkbox" id={rowId(index, 'enabled')} name={`model_${index}_enabled`} value="on" checked={model.enabled} aria-label={`Offer ${model.providerModel}`} />
                  </td>
                  <td class="model-name">
                    {model.providerModel}
                    {model.modelId !== model.providerModel ? <span class="model-note">id {model.modelId}</span> : null}
                    {model.shadowedByConfig ? <span class="model-note">the config file has a model with this id: that one is used</span> : null}
                  </td>
                  <td>
                    <input type="text" name={`model_${index}_name`} value={model.displayName} aria-label={`Display name of ${model.providerModel}`} />
                  </td>
                  <td>
                    <input type="number" min="1" name={`model_${index}_window`} value={String(model.contextWindow)} aria-label={`Context window of ${model.providerModel}`} />
                  </td>
                  <td>
                    <input type="number" min="1" name={`model_${index}_reserve`} value={String(model.maxOutputTokens)} aria-label={`Output reserve of ${model.providerModel}`} />
                  </td>
                  <td>
                    <input type="checkbox" name={`model_${index}_tools`} value="on" checked={model.supportsNativeToolCalling} aria-label={`${model.providerModel} calls tools`} />
                  </td>
                  <td>
                    <input type="checkbox" name={`model_${index}_remove`} value="on" aria-label={`Remove ${model.providerModel}`} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="setting">
        <label for={`add-model-${connection.id}`}>Add a model by name</label>
        <input id={`add-model-${connection.id}`} name="add_model" type="text" value="" spellcheck={false} placeholder="e.g. llama3.1:8b" />
        <p class="setting-source">For a provider that does not list its models. Limits are prefilled from a table of well-known models; correct them above after saving.</p>
      </div>
      <button type="submit">Save models</button>
    </form>
  )
}

function ConnectionForm({
  action,
  csrfToken,
  connection,
  idPrefix,
  submit,
}: {
  readonly action: string
  readonly csrfToken: string | undefined
  readonly connection?: ConnectionView | undefined
  readonly idPrefix: string
  readonly submit: string
}) {
  const id = (field: string) => `${idPrefix}-${field}`
  return (
    <form method="post" action={action} class="settings-form" autocomplete="off">
      <Csrf token={csrfToken} />
      <div class="setting">
        <label for={id('name')}>Name</label>
        <input id={id('name')} name="name" type="text" required value={connection?.name ?? ''} maxlength={80} placeholder="e.g. OpenAI, Ollama on the GPU box" />
      </div>
      <div class="setting">
        <label for={id('base_url')}>Base URL</label>
        <input id={id('base_url')} name="base_url" type="text" required value={connection?.baseUrl ?? ''} spellcheck={false} placeholder="https://api.openai.com/v1 or http://127.0.0.1:11434/v1" />
      </div>
      <div class="setting">
        <label for={id('api_key')}>API key</label>
        <input id={id('api_key')} name="api_key" type="password" value="" autocomplete="new-password" spellcheck={false} placeholder={connection ? 'Enter a new key to replace it' : 'Leave empty for a local server without a key'} />
        {connection ? (
          <label class="inline">
            <input type="checkbox" name="remove_api_key" value="on" /> Remove the stored key
          </label>
        ) : null}
      </div>
      <div class="setting">
        <label for={id('api_key_env')}>Or: the environment variable holding the key</label>
        <input id={id('api_key_env')} name="api_key_env" type="text" value={connection?.apiKeyEnv ?? ''} spellcheck={false} placeholder="e.g. OPENAI_API_KEY (used when no key is stored)" />
      </div>
      <div class="setting">
        <label for={id('headers')}>Extra headers</label>
        <textarea id={id('headers')} name="headers" rows={2} spellcheck={false} placeholder={connection && connection.headerCount > 0 ? 'Enter headers to replace the stored ones' : 'One per line, Name: value'}></textarea>
        {connection ? (
          <label class="inline">
            <input type="checkbox" name="remove_headers" value="on" /> Remove the stored headers
          </label>
        ) : null}
        <p class="setting-source">Write-only, like the key: stored encrypted and never shown again.</p>
      </div>
      <button type="submit">{submit}</button>
    </form>
  )
}

function AddConnectionSection({ csrfToken }: { readonly csrfToken: string | undefined }) {
  return (
    <section class="settings-card" aria-labelledby="add-heading">
      <h2 id="add-heading">Add a connection</h2>
      <ConnectionForm action={`${ADMIN_MODELS_PATH}/connections`} csrfToken={csrfToken} idPrefix="add" submit="Add connection" />
    </section>
  )
}
