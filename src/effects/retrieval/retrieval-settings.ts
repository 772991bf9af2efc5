// The settings chain of SPEC §9, pure: four values, each from the first layer that has it —
//   user settings layer → (the workspace id only) the server default an administrator stored →
//   entry config (config file) → credential (per-user store, then the
//   environment) → fallback (the API key and workspace id: none; a default service: the only
//   deployed service of its scene, decided by `withSoleServiceFallback`).
// The API key has no user-settings or config face: it lives only in the credential layer.
// Blank strings count as absent, so clearing a layer lets the next one show through.

export type SettingKey = 'apiKey' | 'workspaceId' | 'defaultRetrieveAgentId' | 'defaultChatAgentId'
export const SETTING_KEYS: ReadonlyArray<SettingKey> = ['apiKey', 'workspaceId', 'defaultRetrieveAgentId', 'defaultChatAgentId']

/** The credential-store names, which are also the environment variable names. */
export const CREDENTIAL_NAMES = {
  apiKey: 'DASHSCOPE_API_KEY',
  workspaceId: 'BAILIAN_WORKSPACE_ID',
  defaultRetrieveAgentId: 'BAILIAN_DEFAULT_RETRIEVE_AGENT_ID',
  defaultChatAgentId: 'BAILIAN_DEFAULT_CHAT_AGENT_ID',
} as const satisfies Record<SettingKey, string>
export type CredentialName = (typeof CREDENTIAL_NAMES)[SettingKey]

/** Where a resolved value came from (what the settings page says). */
export type SettingSource = 'user' | 'server' | 'config' | 'credential-store' | 'environment' | 'sole-service' | 'unset'

export interface ResolvedSetting {
  readonly value: string | undefined
  readonly source: SettingSource
}

export type EditableKey = Exclude<SettingKey, 'apiKey'>
export type SettingValues = Partial<Record<EditableKey, string | null | undefined>>

export interface SettingLayers {
  /** The caller's own settings (the settings page); null or blank = not set. */
  readonly user: SettingValues
  /** The server-wide default workspace id (Administration → Retrieval defaults, `knowagent retrieval set workspaceId`). */
  readonly server?: { readonly workspaceId?: string | undefined } | undefined
  /** `retrieval.bailian` in the config file. */
  readonly entry: SettingValues
  /** The caller's credential store, decrypted, by credential name. */
  readonly credentials: Partial<Record<CredentialName, string>>
  /** The server environment, read at call time. */
  readonly env: Readonly<Record<string, string | undefined>>
}

export type ResolvedRetrievalSettings = Readonly<Record<SettingKey, ResolvedSetting>>

const present = (value: string | null | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === '' ? undefined : trimmed
}

export function resolveSetting(key: SettingKey, layers: SettingLayers): ResolvedSetting {
  if (key !== 'apiKey') {
    const user = present(layers.user[key])
    if (user !== undefined) return { value: user, source: 'user' }
    const server = key === 'workspaceId' ? present(layers.server?.workspaceId) : undefined
    if (server !== undefined) return { value: server, source: 'server' }
    const entry = present(layers.entry[key])
    if (entry !== undefined) return { value: entry, source: 'config' }
  }
  const name = CREDENTIAL_NAMES[key]
  const stored = present(layers.credentials[name])
  if (stored !== undefined) return { value: stored, source: 'credential-store' }
  const fromEnv = present(layers.env[name])
  if (fromEnv !== undefined) return { value: fromEnv, source: 'environment' }
  return { value: undefined, source: 'unset' }
}

export function resolveRetrievalSettings(layers: SettingLayers): ResolvedRetrievalSettings {
  return {
    apiKey: resolveSetting('apiKey', layers),
    workspaceId: resolveSetting('workspaceId', layers),
    defaultRetrieveAgentId: resolveSetting('defaultRetrieveAgentId', layers),
    defaultChatAgentId: resolveSetting('defaultChatAgentId', layers),
  }
}

/** The last layer of a default service id: the only deployed service of its scene, if exactly one. */
export function withSoleServiceFallback(
  configured: ResolvedSetting,
  deployedIds: ReadonlyArray<string> | undefined,
): ResolvedSetting {
  if (configured.value !== undefined) return configured
  if (deployedIds !== undefined && deployedIds.length === 1) return { value: deployedIds[0], source: 'sole-service' }
  return configured
}

/** How the settings page names a source. */
export function describeSource(source: SettingSource, key: SettingKey): string {
  switch (source) {
    case 'user':
      return 'your settings'
    case 'server':
      return 'the server default (Administration → Retrieval defaults)'
    case 'config':
      return 'the server config file (retrieval.bailian)'
    case 'credential-store':
      return key === 'apiKey' ? 'configured (stored encrypted for your account)' : 'your credential store'
    case 'environment':
      return `from environment (${CREDENTIAL_NAMES[key]})`
    case 'sole-service':
      return 'the only deployed service of this kind'
    case 'unset':
      return 'not configured'
  }
}

/**
 * What a submitted settings form changes in the user layer. An empty field removes the user value
 * (the next layer shows through). A field equal to the value the page showed from another layer
 * is left alone, so saving the form never copies config or environment values into the user layer.
 */
export function planSettingsUpdate({
  submitted,
  current,
}: {
  readonly submitted: Partial<Record<EditableKey, string | undefined>>
  readonly current: Readonly<Record<EditableKey, ResolvedSetting>>
}): SettingValues {
  const patch: Record<string, string | null> = {}
  for (const key of ['workspaceId', 'defaultRetrieveAgentId', 'defaultChatAgentId'] as const) {
    if (!(key in submitted)) continue
    const value = present(submitted[key])
    const shown = current[key]
    if (value === undefined) {
      if (shown.source === 'user') patch[key] = null
      continue
    }
    if (shown.source !== 'user' && value === shown.value) continue
    if (shown.source === 'user' && value === shown.value) continue
    patch[key] = value
  }
  return patch
}
