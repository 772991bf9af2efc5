// The Bailian settings of a user, resolved on every call (so changes apply without restart): the
// user layer and the credential store from PostgreSQL, the entry layer from the config file, the
// environment as it is now. The two stored layers are read at every model step's pre-step, so they
// are kept in memory while the feature's change feed is connected: every write NOTIFYs
// SETTINGS_CHANNEL in its transaction, which drops that user's entry in
// every process; a reset of the feed drops them all, and an entry lives at most `cacheTtlMs`.
// Writes re-read the database, never the memory. Writes come from the settings page; each is
// announced to subscribers (the catalog refresher refreshes after a key or workspace change).
// The server-wide settings (the default workspace id, endpointHost, agentVersion, chatTimeoutMs) are
// one more stored document (retrieval-server-settings.ts), kept the same way under
// SERVER_SETTINGS_KEY; its workspace id is a layer of every user's chain, below their own.
import * as Context from 'effect/Context'
import * as Data from 'effect/Data'
import * as Effect from 'effect/Effect'
import * as Layer from 'effect/Layer'
import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { BailianConnection } from './bailian-client.ts'
import type { BailianConfig } from './bailian-config.ts'
import { isValidWorkspaceId } from './bailian-endpoint.ts'
import { BailianMissingCredentials, type MissingCredential } from './bailian-errors.ts'
import { planBlImport, readBlCliConfig, type SeedField } from './bl-config-import.ts'
import { type ChangeFeed, makeFeedCache } from '../db/change-feed.ts'
import { makeCredentialCipher } from './credential-cipher.ts'
import {
  CREDENTIAL_NAMES,
  type EditableKey,
  planSettingsUpdate,
  type ResolvedRetrievalSettings,
  resolveRetrievalSettings,
  type SettingKey,
  type SettingLayers,
} from './retrieval-settings.ts'
import { applyServerSettings, decodeServerSettings, readServerSettingsDocument, SERVER_SETTINGS_KEY, type ServerSettingsDocument } from './retrieval-server-settings.ts'
import {
  deleteCredential,
  ensureUserLayerRow,
  notifySettingsChanged,
  readCredentials,
  readUserLayer,
  SETTINGS_CHANNEL,
  type StoredCredentials,
  type UserLayer,
  updateUserLayer,
  writeCredential,
} from './retrieval-settings-store.ts'

export interface BailianSettingsSnapshot {
  /** Resolved values with their sources. `apiKey.value` is the secret: server-side use only. */
  readonly settings: ResolvedRetrievalSettings
  readonly endpointHost: string
  readonly agentVersion: string | undefined
  readonly chatTimeoutMs: number
  /** Credential-store entries that could not be decrypted (the server secret changed). */
  readonly unreadableCredentials: ReadonlyArray<string>
}

export interface SettingsChange {
  readonly userId: string
  readonly keys: ReadonlyArray<SettingKey>
}

/** A submitted settings value is refused (shown on the settings page; 400 over HTTP). */
export class InvalidSettings extends Data.TaggedError('InvalidSettings')<{ readonly message: string }> {
  readonly status = 400
  get code(): string {
    return 'retrieval.invalid_settings'
  }
}

export interface BailianSettings {
  readonly resolve: (userId: string) => Promise<BailianSettingsSnapshot>
  /** Applies a submitted settings form (see `planSettingsUpdate`); returns the keys changed. */
  readonly saveSettings: (userId: string, submitted: Partial<Record<EditableKey, string | undefined>>) => Promise<ReadonlyArray<EditableKey>>
  readonly setApiKey: (userId: string, apiKey: string) => Promise<void>
  /** Removes the stored key (the environment's, if any, shows through); false when none was stored. */
  readonly removeApiKey: (userId: string) => Promise<boolean>
  readonly subscribe: (listener: (change: SettingsChange) => void) => () => void
  /** Stops following the change feed (the feed itself is its owner's to close). */
  readonly close: () => void
}

export interface BailianSettingsOptions {
  readonly db: Kysely<DB>
  readonly secret: string
  readonly config: BailianConfig
  /** Read at call time (usually `process.env`). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The `bl` CLI's login file (default ~/.bailian/config.json); null turns the one-time import off. */
  readonly blConfigPath: string | null
  readonly logger: Logger
  /** The feature's change feed, listening on SETTINGS_CHANNEL (its owner closes it); without one every call reads the database. */
  readonly feed?: ChangeFeed | undefined
  /** How long a user's stored layers may be served from memory at most (default 60 s). */
  readonly cacheTtlMs?: number | undefined
  readonly now?: (() => number) | undefined
}

const MAX_ID_LENGTH = 256
const MAX_KEY_LENGTH = 512

export function makeBailianSettings(options: BailianSettingsOptions): BailianSettings {
  const { db, config, env, logger } = options
  const cipher = makeCredentialCipher(options.secret)
  const listeners = new Set<(change: SettingsChange) => void>()
  const importChecked = new Set<string>()
  const entry = {
    workspaceId: config.workspaceId,
    defaultRetrieveAgentId: config.defaultRetrieveAgentId,
    defaultChatAgentId: config.defaultChatAgentId,
  }

  const announce = (change: SettingsChange): void => {
    if (change.keys.length === 0) return
    for (const listener of [...listeners]) {
      try {
        listener(change)
      } catch (error) {
        logger.error('retrieval settings listener failed', { error })
      }
    }
  }

  type StoredLayers = { readonly user: UserLayer; readonly credentials: StoredCredentials }
  const memory = makeFeedCache<StoredLayers>({ feed: options.feed, channel: SETTINGS_CHANNEL, ttlMs: options.cacheTtlMs ?? 60_000, now: options.now })
  const readStored = async (userId: string): Promise<StoredLayers> => {
    const [user, credentials] = await Promise.all([readUserLayer(db, userId), readCredentials(db, cipher, userId)])
    return { user, credentials }
  }
  /**
   * A write of a user's settings, with the NOTIFY that drops them from every process's memory, in
   * one transaction: a stop half-way leaves neither. Then gone from this process's memory at once.
   */
  const write = async <T>(userId: string, run: (trx: Transaction<DB>) => Promise<T>): Promise<T> => {
    const result = await db.transaction().execute(async (trx) => {
      const value = await run(trx)
      await notifySettingsChanged(trx, userId)
      return value
    })
    memory.forget(userId)
    return result
  }

  // The server-wide document: a stored one that does not decode (edited by hand) is logged once
  // and the last good one stays in force — at start, the config file's values.
  const serverMemory = makeFeedCache<ServerSettingsDocument>({ feed: options.feed, channel: SETTINGS_CHANNEL, ttlMs: options.cacheTtlMs ?? 60_000, now: options.now })
  let lastGoodServer: ServerSettingsDocument = {}
  let refusedServer: string | undefined
  const readServer = async (): Promise<ServerSettingsDocument> => {
    const decoded = decodeServerSettings(await readServerSettingsDocument(db))
    if (decoded.ok) {
      lastGoodServer = decoded.value
      refusedServer = undefined
    } else if (refusedServer !== decoded.message) {
      refusedServer = decoded.message
      logger.warn('the stored retrieval server settings are invalid; the last good values stay in force', { problem: decoded.message, inForce: lastGoodServer })
    }
    return lastGoodServer
  }

  const serverDocument = () => serverMemory.read(SERVER_SETTINGS_KEY, readServer)

  const layersOf = async (
    userId: string,
    { fresh = false }: { fresh?: boolean } = {},
  ): Promise<{ layers: SettingLayers; server: ServerSettingsDocument; seeded: ReadonlyArray<string>; unreadable: ReadonlyArray<string> }> => {
    const [{ user, credentials }, server] = await Promise.all([fresh ? readStored(userId) : memory.read(userId, () => readStored(userId)), serverDocument()])
    return {
      layers: { user: user.values, server: { workspaceId: server.workspaceId }, entry, credentials: credentials.values, env },
      server,
      seeded: user.seededFields,
      unreadable: credentials.unreadable,
    }
  }

  /** Once per user and process: adopt the `bl` login for fields configured nowhere. */
  const importFromBlOnce = async (userId: string): Promise<void> => {
    if (options.blConfigPath === null || importChecked.has(userId)) return
    importChecked.add(userId)
    const file = await readBlCliConfig(options.blConfigPath)
    const server = await serverDocument()
    const imported = await db.transaction().execute(async (trx) => {
      await ensureUserLayerRow(trx, userId)
      const user = await readUserLayer(trx, userId, { lock: true })
      const credentials = await readCredentials(trx, cipher, userId)
      const settings = resolveRetrievalSettings({ user: user.values, server: { workspaceId: server.workspaceId }, entry, credentials: credentials.values, env })
      const plan = planBlImport({
        seeded: user.seededFields,
        configured: { apiKey: settings.apiKey.value !== undefined, workspaceId: settings.workspaceId.value !== undefined },
        file,
      })
      if (plan.mark.length === 0) return []
      if (plan.apiKey !== undefined) await writeCredential(trx, cipher, { userId, name: CREDENTIAL_NAMES.apiKey, value: plan.apiKey })
      await updateUserLayer(trx, userId, {
        values: plan.workspaceId !== undefined ? { workspaceId: plan.workspaceId } : {},
        markSeeded: plan.mark,
      })
      await notifySettingsChanged(trx, userId)
      return [...(plan.apiKey !== undefined ? (['apiKey'] as const) : []), ...(plan.workspaceId !== undefined ? (['workspaceId'] as const) : [])]
    })
    memory.forget(userId)
    if (imported.length > 0) {
      logger.info('retrieval settings imported from the bl CLI login', { userId, fields: imported })
      announce({ userId, keys: imported })
    }
  }

  const resolve: BailianSettings['resolve'] = async (userId) => {
    await importFromBlOnce(userId)
    const { layers, server, unreadable } = await layersOf(userId)
    return {
      settings: resolveRetrievalSettings(layers),
      ...applyServerSettings(config, server),
      unreadableCredentials: unreadable,
    }
  }

  const saveSettings: BailianSettings['saveSettings'] = async (userId, submitted) => {
    for (const [key, value] of Object.entries(submitted)) {
      const trimmed = value?.trim() ?? ''
      if (trimmed.length > MAX_ID_LENGTH) throw new InvalidSettings({ message: `${key} is too long (at most ${MAX_ID_LENGTH} characters)` })
      if (key === 'workspaceId' && trimmed !== '' && !isValidWorkspaceId(trimmed)) {
        throw new InvalidSettings({ message: 'the workspace id may hold only letters, digits, "-" and "_"' })
      }
      if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw new InvalidSettings({ message: `${key} holds control characters` })
    }
    const { layers } = await layersOf(userId, { fresh: true })
    const current = resolveRetrievalSettings(layers)
    const patch = planSettingsUpdate({ submitted, current })
    const keys = Object.keys(patch) as EditableKey[]
    if (keys.length === 0) return []
    // A user-driven write or clear of the workspace id consumes its one-time import.
    await write(userId, (trx) => updateUserLayer(trx, userId, { values: patch, markSeeded: keys.includes('workspaceId') ? ['workspaceId'] : [] }))
    announce({ userId, keys })
    return keys
  }

  const setApiKey: BailianSettings['setApiKey'] = async (userId, apiKey) => {
    const value = apiKey.trim()
    if (value === '') throw new InvalidSettings({ message: 'the API key is empty' })
    if (value.length > MAX_KEY_LENGTH || /\s/.test(value)) throw new InvalidSettings({ message: 'that does not look like an API key' })
    await write(userId, async (trx) => {
      await writeCredential(trx, cipher, { userId, name: CREDENTIAL_NAMES.apiKey, value })
      await updateUserLayer(trx, userId, { values: {}, markSeeded: ['apiKey'] })
    })
    announce({ userId, keys: ['apiKey'] })
  }

  const removeApiKey: BailianSettings['removeApiKey'] = async (userId) => {
    const removed = await write(userId, async (trx) => {
      const deleted = await deleteCredential(trx, { userId, name: CREDENTIAL_NAMES.apiKey })
      await updateUserLayer(trx, userId, { values: {}, markSeeded: ['apiKey'] })
      return deleted
    })
    if (removed) announce({ userId, keys: ['apiKey'] })
    return removed
  }

  return {
    resolve,
    saveSettings,
    setApiKey,
    removeApiKey,
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    close: () => {
      memory.close()
      serverMemory.close()
    },
  }
}

/**
 * The connection a call needs, or the name of the value that is missing — no error object: the
 * catalog pre-step asks before every model step, and an error captures a stack trace.
 */
export function findConnection(snapshot: BailianSettingsSnapshot): BailianConnection | MissingCredential {
  const apiKey = snapshot.settings.apiKey.value
  if (apiKey === undefined) return 'apiKey'
  const workspaceId = snapshot.settings.workspaceId.value
  if (workspaceId === undefined || !isValidWorkspaceId(workspaceId)) return 'workspaceId'
  return { apiKey, workspaceId, endpointHost: snapshot.endpointHost, agentVersion: snapshot.agentVersion }
}

/** The connection a call needs, or the failure that says which value is missing. */
export function connectionOf(snapshot: BailianSettingsSnapshot): BailianConnection | BailianMissingCredentials {
  const found = findConnection(snapshot)
  return typeof found === 'string' ? new BailianMissingCredentials({ missing: found }) : found
}

/** The current settings of a user as an Effect (a database failure is a defect). */
export function resolveSettingsEffect(settings: BailianSettings, userId: string): Effect.Effect<BailianSettingsSnapshot> {
  return Effect.promise(() => settings.resolve(userId))
}

/** The settings as a service of the composition root. */
export class BailianSettingsService extends Context.Service<BailianSettingsService, BailianSettings>()('knowagent/retrieval/BailianSettings') {
  static readonly layer = (options: BailianSettingsOptions): Layer.Layer<BailianSettingsService> =>
    Layer.sync(BailianSettingsService, () => makeBailianSettings(options))
}

export type { SeedField }
