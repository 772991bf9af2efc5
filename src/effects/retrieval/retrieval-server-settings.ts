// The server-wide Bailian settings (SPEC §9, issue 33 item 6, issue 36): the default `workspaceId`
// and the connection settings `endpointHost`, `agentVersion` and `chatTimeoutMs`, changed by an
// operator while the servers run (`knowagent retrieval set|unset|show`, Administration → Retrieval
// defaults: `changeServerSetting` is their one use case). They are stored once in PostgreSQL — every process
// sharing the database sees the same values — and each write NOTIFYs SETTINGS_CHANNEL in its
// transaction, so every process drops its copy and the next call uses the new value. A key left
// out means the config file's `retrieval.bailian` value (the layer below, read at start-up). The
// workspace id is a default: a user's own workspace id wins over it (retrieval-settings.ts).
//
// Every value is validated when it is written (a bad one is refused with a message naming it) and
// again when it is read (a document edited by hand in SQL may hold anything): a stored document
// that does not decode is logged and the last good one stays in force (bailian-settings.ts).
import * as Result from 'effect/Result'
import * as Schema from 'effect/Schema'
import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
import { describeDecodeError } from '../describe-decode-error.ts'
import { type BailianConfig, DEFAULT_CHAT_TIMEOUT_MS } from './bailian-config.ts'
import { bailianUrl, DEFAULT_ENDPOINT_HOST, isValidWorkspaceId } from './bailian-endpoint.ts'
import { notifySettingsChanged } from './retrieval-settings-store.ts'

type Db = Kysely<DB> | Transaction<DB>

export const SERVER_SETTING_KEYS = ['workspaceId', 'endpointHost', 'agentVersion', 'chatTimeoutMs'] as const
export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number]
/** The keys that say how every call connects (the workspace id is a default in the settings chain instead). */
export type ConnectionSettingKey = Exclude<ServerSettingKey, 'workspaceId'>

/** The NOTIFY payload of a change of these settings (a user's change carries the user id, a UUID). */
export const SERVER_SETTINGS_KEY = '*server'

export const MIN_CHAT_TIMEOUT_MS = 1_000
export const MAX_CHAT_TIMEOUT_MS = 3_600_000

const CONTROL = /[\u0000-\u001f\u007f\s]/

/** A template whose every URL (with a sample workspace id) is an absolute http(s) URL. */
const EndpointHost = Schema.String.check(
  Schema.makeFilter((value: string) => {
    if (value.length === 0 || value.length > 512) return 'endpointHost must be 1–512 characters'
    if (CONTROL.test(value)) return 'endpointHost must not contain spaces or control characters'
    // Without a scheme it means https; any scheme but http(s) is refused (bailianUrl would prefix it).
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !/^https?:\/\//i.test(value)) return 'endpointHost must be an http(s) address'
    try {
      const url = new URL(bailianUrl({ endpointHost: value, workspaceId: 'ws-sample', path: '/' }))
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'endpointHost must be an http(s) address'
      if (url.username !== '' || url.password !== '') return 'endpointHost must not carry credentials'
      return undefined
    } catch {
      return 'endpointHost must be a host name or an http(s) URL, with {workspaceId} where the workspace id goes'
    }
  }),
)

const WorkspaceId = Schema.String.check(
  Schema.makeFilter((value: string) =>
    isValidWorkspaceId(value) ? undefined : 'workspaceId must be 1–128 letters, digits, "-" and "_", starting with a letter or digit',
  ),
)

const AgentVersion = Schema.String.check(
  Schema.makeFilter((value: string) =>
    value.length === 0 || value.length > 64 || CONTROL.test(value) ? 'agentVersion must be 1–64 characters without spaces or control characters' : undefined,
  ),
)

const CHAT_TIMEOUT_RANGE = `chatTimeoutMs must be a whole number of milliseconds from ${MIN_CHAT_TIMEOUT_MS} to ${MAX_CHAT_TIMEOUT_MS}`
const ChatTimeoutMs = Schema.Int.check(
  Schema.makeFilter((value: number) => (value >= MIN_CHAT_TIMEOUT_MS && value <= MAX_CHAT_TIMEOUT_MS ? undefined : CHAT_TIMEOUT_RANGE)),
)

/** The stored document: each key optional (absent: the config file's value); nothing else. */
export const ServerSettingsDocument = Schema.Struct({
  workspaceId: Schema.optionalKey(WorkspaceId),
  endpointHost: Schema.optionalKey(EndpointHost),
  agentVersion: Schema.optionalKey(AgentVersion),
  chatTimeoutMs: Schema.optionalKey(ChatTimeoutMs),
})
export type ServerSettingsDocument = typeof ServerSettingsDocument.Type

export type Decoded<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly message: string }

export function decodeServerSettings(input: unknown): Decoded<ServerSettingsDocument> {
  const result = Schema.decodeUnknownResult(ServerSettingsDocument)(input, { errors: 'all', onExcessProperty: 'error' })
  return Result.isSuccess(result) ? { ok: true, value: result.success } : { ok: false, message: describeDecodeError(result.failure) }
}

/** One value as an operator types it (`chatTimeoutMs` is a number), decoded. */
export function parseServerSetting(key: string, text: string): Decoded<Partial<ServerSettingsDocument>> {
  if (!(SERVER_SETTING_KEYS as ReadonlyArray<string>).includes(key)) return { ok: false, message: unknownSetting(key) }
  if (key !== 'chatTimeoutMs') return decodeServerSettings({ [key]: text })
  return /^\d{1,10}$/.test(text.trim()) ? decodeServerSettings({ chatTimeoutMs: Number(text.trim()) }) : { ok: false, message: CHAT_TIMEOUT_RANGE }
}

/** The connection values in force: the stored document over the config file. */
export function applyServerSettings(config: BailianConfig, document: ServerSettingsDocument): Pick<BailianConfig, ConnectionSettingKey> {
  return {
    endpointHost: document.endpointHost ?? config.endpointHost,
    agentVersion: document.agentVersion ?? config.agentVersion,
    chatTimeoutMs: document.chatTimeoutMs ?? config.chatTimeoutMs,
  }
}

/** The stored document as it is (undecoded: `{}` when no row). */
export async function readServerSettingsDocument(db: Db): Promise<unknown> {
  const row = await db.selectFrom('retrieval_server_settings').select('document').where('id', '=', 1).executeTakeFirst()
  return row?.document ?? {}
}

/**
 * Sets (`patch` values) or removes (`unset` keys) stored values in one transaction, with the NOTIFY
 * that every process hears; the merged document is decoded before it is written. Returns it, or why
 * not (nothing is written then).
 */
export async function writeServerSettings(
  db: Kysely<DB>,
  { patch = {}, unset = [] }: { readonly patch?: Partial<ServerSettingsDocument>; readonly unset?: ReadonlyArray<ServerSettingKey> },
): Promise<Decoded<ServerSettingsDocument>> {
  return db.transaction().execute(async (trx) => {
    await trx.insertInto('retrieval_server_settings').values({ id: 1 }).onConflict((conflict) => conflict.column('id').doNothing()).execute()
    const row = await trx.selectFrom('retrieval_server_settings').select('document').where('id', '=', 1).forUpdate().executeTakeFirstOrThrow()
    // A stored document that no longer decodes keeps only its valid keys: the operator's write repairs it.
    const stored = decodeServerSettings(row.document)
    const base: Record<string, unknown> = stored.ok ? { ...stored.value } : keepValidKeys(row.document)
    for (const key of unset) delete base[key]
    const merged = decodeServerSettings({ ...base, ...patch })
    if (!merged.ok) return merged
    await trx.updateTable('retrieval_server_settings').set({ document: JSON.stringify(merged.value), updated_at: new Date() }).where('id', '=', 1).execute()
    await notifySettingsChanged(trx, SERVER_SETTINGS_KEY)
    return merged
  })
}

function keepValidKeys(document: unknown): Record<string, unknown> {
  if (typeof document !== 'object' || document === null) return {}
  const kept: Record<string, unknown> = {}
  for (const key of SERVER_SETTING_KEYS) {
    const value = (document as Record<string, unknown>)[key]
    if (value !== undefined && decodeServerSettings({ [key]: value }).ok) kept[key] = value
  }
  return kept
}

/**
 * Changes one setting — `set` a value as an operator types it, or `unset` it (back to the config
 * file's value) — for every process on this database: the one use case of the CLI and the
 * administration page. Returns the stored document after the change, or why not (nothing written).
 */
export async function changeServerSetting(
  db: Kysely<DB>,
  change: { readonly key: string } & ({ readonly action: 'set'; readonly value: string } | { readonly action: 'unset' }),
): Promise<Decoded<ServerSettingsDocument>> {
  if (change.action === 'set') {
    const parsed = parseServerSetting(change.key, change.value)
    return parsed.ok ? writeServerSettings(db, { patch: parsed.value }) : parsed
  }
  const known = SERVER_SETTING_KEYS.find((name) => name === change.key)
  if (known === undefined) return { ok: false, message: unknownSetting(change.key) }
  return writeServerSettings(db, { unset: [known] })
}

function unknownSetting(key: string): string {
  return `unknown setting "${key.slice(0, 40)}"; the settings are ${SERVER_SETTING_KEYS.join(', ')}`
}

/** Where a server-wide value in force comes from. */
export type ServerSettingSource = 'stored' | 'config' | 'default'

export interface ServerSettingView {
  readonly key: ServerSettingKey
  /** The value in force (undefined: none — no default workspace id, the published agent version). */
  readonly value: string | number | undefined
  readonly source: ServerSettingSource
  /** What `unset` brings back: the config file's value, else the built-in default. */
  readonly configValue: string | number | undefined
}

/** Each setting, its value in force and where it comes from (a config value equal to the built-in default counts as the default). */
export function viewServerSettings(config: BailianConfig, document: ServerSettingsDocument): ServerSettingView[] {
  const configValues: Record<ServerSettingKey, string | number | undefined> = {
    workspaceId: config.workspaceId,
    endpointHost: config.endpointHost,
    agentVersion: config.agentVersion,
    chatTimeoutMs: config.chatTimeoutMs,
  }
  const builtIn: Record<ServerSettingKey, string | number | undefined> = {
    workspaceId: undefined,
    endpointHost: DEFAULT_ENDPOINT_HOST,
    agentVersion: undefined,
    chatTimeoutMs: DEFAULT_CHAT_TIMEOUT_MS,
  }
  return SERVER_SETTING_KEYS.map((key) => {
    const stored = document[key]
    const configValue = configValues[key]
    if (stored !== undefined) return { key, value: stored, source: 'stored', configValue }
    return { key, value: configValue, source: configValue === builtIn[key] ? 'default' : 'config', configValue }
  })
}

const SOURCE_WORDS: Record<ServerSettingSource, string> = {
  stored: 'stored in the database',
  config: 'config file',
  default: 'built-in default',
}

/** For `knowagent retrieval show`: each setting, its value in force and where it comes from. */
export function describeServerSettings(config: BailianConfig, document: ServerSettingsDocument): string[] {
  return viewServerSettings(config, document).map(
    ({ key, value, source }) => `${key} = ${value === undefined ? '(unset)' : JSON.stringify(value)}  [${SOURCE_WORDS[source]}]`,
  )
}
