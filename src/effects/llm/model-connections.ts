// Admin → Model connections, the use case (one module; the page, its JSON face and any CLI only
// translate in and project out): add, edit, delete and Test an OpenAI-compatible connection, pick
// the models it offers (display name, context window, output reserve, tool calling; prefilled by
// known-models.ts), enable or disable them, and choose the server's default model. Each write is
// one transaction that NOTIFYs MODEL_CONNECTIONS_CHANNEL — every process's registry reloads — and
// this process reloads its own before answering. The key and the extra headers are write-only:
// they are sealed with the credential cipher before they reach the database and leave this module
// only towards the provider; `list()` says whether a key is configured, never what it is.
import * as Context from 'effect/Context'
import * as Data from 'effect/Data'
import * as Result from 'effect/Result'
import * as Schema from 'effect/Schema'
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/schema.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { CredentialCipher } from '../retrieval/credential-cipher.ts'
import { describeDecodeError } from '../describe-decode-error.ts'
import { type ConnectionTestReport, testConnection } from './connection-test.ts'
import { suggestModel } from './known-models.ts'
import { LOCAL_MODEL_ID, ModelConfigSchema } from './model-config.ts'
import {
  notifyModelConnectionsChanged,
  openConnectionSecrets,
  readConnections,
  readDefaultModelId,
  sealApiKey,
  sealHeaders,
  type StoredConnection,
  type StoredModel,
  writeDefaultModelId,
} from './model-connections-store.ts'
import type { LiveModelRegistry } from './model-registry.ts'
import { checkConnectionBaseUrl, makeConnectionAgents } from './provider-address.ts'

/** A submitted value is refused (shown on the page; 400 over HTTP). */
export class InvalidConnection extends Data.TaggedError('InvalidConnection')<{ readonly message: string }> {
  readonly status = 400
  get code(): string {
    return 'models.invalid_connection'
  }
}

export class ConnectionNotFound extends Data.TaggedError('ConnectionNotFound')<{ readonly id: string }> {
  readonly status = 404
  get code(): string {
    return 'not_found'
  }
  override get message(): string {
    return 'no such model connection'
  }
}

export type ApiKeyStatus = 'configured' | 'environment' | 'unset'

export interface ConnectionModelView extends StoredModel {
  /** A config-file model has this id: that one is used, this one is not offered. */
  readonly shadowedByConfig: boolean
}

/** All the page shows of a connection: never the key nor a header value. */
export interface ConnectionView {
  readonly id: string
  readonly name: string
  readonly baseUrl: string
  readonly apiKeyStatus: ApiKeyStatus
  readonly apiKeyEnv: string | undefined
  /** A stored key or header set the server secret cannot decrypt. */
  readonly secretsUnreadable: boolean
  readonly headerCount: number
  readonly models: ReadonlyArray<ConnectionModelView>
}

export interface ConnectionInput {
  readonly name: string
  readonly baseUrl: string
  /** Blank or absent: keep the stored key (a new connection then has none). */
  readonly apiKey?: string | undefined
  readonly removeApiKey?: boolean | undefined
  /** Blank: none. */
  readonly apiKeyEnv?: string | undefined
  /** `Name: value` lines; blank or absent: keep the stored ones. */
  readonly headers?: string | undefined
  readonly removeHeaders?: boolean | undefined
}

export interface ModelRowInput {
  readonly providerModel: string
  readonly enabled: boolean
  readonly displayName: string
  readonly contextWindow: string | number
  readonly maxOutputTokens: string | number
  readonly supportsNativeToolCalling: boolean
  readonly remove?: boolean | undefined
}

export interface ModelConnections {
  readonly list: () => Promise<ReadonlyArray<ConnectionView>>
  readonly defaultModelId: () => Promise<string | undefined>
  readonly add: (input: ConnectionInput) => Promise<{ readonly id: string; readonly name: string }>
  readonly update: (id: string, input: ConnectionInput) => Promise<{ readonly name: string }>
  readonly remove: (id: string) => Promise<{ readonly name: string }>
  /** Calls the provider; records the models it lists (new ones disabled, prefilled). */
  readonly test: (id: string) => Promise<{ readonly name: string; readonly report: ConnectionTestReport }>
  /** Saves the connection's model rows and adds one by its provider name when `added` is given. */
  readonly saveModels: (id: string, rows: ReadonlyArray<ModelRowInput>, added?: string | undefined) => Promise<{ readonly name: string }>
  readonly setDefaultModel: (modelId: string | undefined) => Promise<void>
  readonly registry: LiveModelRegistry
  readonly close: () => void
}

export interface ModelConnectionsOptions {
  readonly db: Kysely<DB>
  readonly cipher: CredentialCipher
  readonly registry: LiveModelRegistry
  readonly env: Readonly<Record<string, string | undefined>>
  readonly allowMetadataAddresses: boolean
}

const MAX_HEADERS = 20
const MAX_REPORTED_MODELS = 300
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'connection', 'transfer-encoding'])
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export function parseHeaderLines(text: string): Record<string, string> {
  const headers: Record<string, string> = {}
  const lines = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '')
  if (lines.length > MAX_HEADERS) throw new InvalidConnection({ message: `At most ${MAX_HEADERS} extra headers.` })
  for (const [index, line] of lines.entries()) {
    const colon = line.indexOf(':')
    const name = colon < 0 ? '' : line.slice(0, colon).trim()
    const value = colon < 0 ? '' : line.slice(colon + 1).trim()
    if (!HEADER_NAME.test(name) || value === '' || /[\u0000-\u001f\u007f]/.test(value)) {
      throw new InvalidConnection({ message: `Extra header line ${index + 1} must be "Name: value" (a header name, then a value without control characters).` })
    }
    if (FORBIDDEN_HEADERS.has(name.toLowerCase())) throw new InvalidConnection({ message: `The extra header ${name} is set by knowagent itself.` })
    headers[name] = value
  }
  return headers
}

/** A provider's model name as a registry id: the name itself when it fits the id pattern. */
export function modelIdFor(providerModel: string): string {
  const cleaned = providerModel.replace(/[^A-Za-z0-9._:@/+-]/g, '-').replace(/^[^A-Za-z0-9]+/, '')
  return (cleaned === '' ? 'model' : cleaned).slice(0, 128)
}

function slugOf(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'connection'
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505'
}

export function makeModelConnections(options: ModelConnectionsOptions): ModelConnections {
  const { db, cipher, registry } = options
  const agents = makeConnectionAgents({ allowMetadataAddresses: options.allowMetadataAddresses })

  const findConnection = async (trx: Db, id: string): Promise<StoredConnection> => {
    const found = (await readConnections(trx)).find((connection) => connection.id === id)
    if (found === undefined) throw new ConnectionNotFound({ id })
    return found
  }

  const checkName = (name: string): string => {
    const trimmed = name.trim()
    if (trimmed === '' || trimmed.length > 80 || /[\u0000-\u001f\u007f]/.test(trimmed)) throw new InvalidConnection({ message: 'The name must be 1–80 characters.' })
    return trimmed
  }

  const checkBaseUrl = (baseUrl: string): string => {
    const checked = checkConnectionBaseUrl({ baseUrl, allowMetadataAddresses: options.allowMetadataAddresses })
    if (!checked.ok) throw new InvalidConnection({ message: checked.message })
    return checked.baseUrl
  }

  const checkApiKey = (apiKey: string): string => {
    const trimmed = apiKey.trim()
    if (trimmed.length > 4096 || /[\u0000-\u001f\u007f]/.test(trimmed)) throw new InvalidConnection({ message: 'The API key must be at most 4096 characters without control characters.' })
    return trimmed
  }

  const checkEnvName = (name: string | undefined): string | null => {
    const trimmed = name?.trim() ?? ''
    if (trimmed === '') return null
    if (!ENV_NAME.test(trimmed)) throw new InvalidConnection({ message: 'The environment variable is a NAME such as OPENAI_API_KEY.' })
    return trimmed
  }

  /** A write in one transaction with its NOTIFY; this process reloads before answering. */
  const write = async <A>(work: (trx: Db) => Promise<A>): Promise<A> => {
    let result: A
    try {
      result = await db.transaction().execute(async (trx) => {
        const value = await work(trx)
        await notifyModelConnectionsChanged(trx)
        return value
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new InvalidConnection({ message: 'A connection with this name already exists.' })
      throw error
    }
    await registry.reload()
    return result
  }

  const freeModelId = async (trx: Db, connectionName: string, providerModel: string): Promise<string> => {
    const taken = new Set((await trx.selectFrom('connection_models').select('model_id').execute()).map((row) => row.model_id))
    taken.add(LOCAL_MODEL_ID)
    const plain = modelIdFor(providerModel)
    if (!taken.has(plain)) return plain
    const prefixed = modelIdFor(`${slugOf(connectionName)}/${providerModel}`)
    for (let n = 1; ; n += 1) {
      const candidate = n === 1 ? prefixed : `${prefixed.slice(0, 120)}-${n}`
      if (!taken.has(candidate)) return candidate
    }
  }

  return {
    registry,
    list: async () => {
      const connections = await readConnections(db)
      return connections.map((connection) => {
        const secrets = openConnectionSecrets(cipher, connection)
        const envSet = connection.apiKeyEnv !== undefined && (options.env[connection.apiKeyEnv]?.trim() ?? '') !== ''
        return {
          id: connection.id,
          name: connection.name,
          baseUrl: connection.baseUrl,
          apiKeyStatus: connection.apiKeyCiphertext !== undefined ? 'configured' : envSet ? 'environment' : 'unset',
          apiKeyEnv: connection.apiKeyEnv,
          secretsUnreadable: secrets.unreadable,
          headerCount: Object.keys(secrets.headers ?? {}).length,
          models: connection.models.map((model) => ({ ...model, shadowedByConfig: registry.configModelIds.has(model.modelId) })),
        } satisfies ConnectionView
      })
    },
    defaultModelId: () => readDefaultModelId(db),
    add: async (input) => {
      const name = checkName(input.name)
      const baseUrl = checkBaseUrl(input.baseUrl)
      const id = randomUUID()
      const apiKey = checkApiKey(input.apiKey ?? '')
      const headers = parseHeaderLines(input.headers ?? '')
      const apiKeyEnv = checkEnvName(input.apiKeyEnv)
      await write((trx) =>
        trx
          .insertInto('model_connections')
          .values({
            id,
            name,
            base_url: baseUrl,
            api_key_ciphertext: apiKey === '' ? null : sealApiKey(cipher, id, apiKey),
            api_key_env: apiKeyEnv,
            headers_ciphertext: Object.keys(headers).length === 0 ? null : sealHeaders(cipher, id, headers),
          })
          .execute(),
      )
      return { id, name }
    },
    update: async (id, input) => {
      const name = checkName(input.name)
      const baseUrl = checkBaseUrl(input.baseUrl)
      const apiKey = checkApiKey(input.apiKey ?? '')
      const headersText = input.headers?.trim() ?? ''
      const headers = headersText === '' ? undefined : parseHeaderLines(headersText)
      const apiKeyEnv = checkEnvName(input.apiKeyEnv)
      await write(async (trx) => {
        await findConnection(trx, id)
        await trx
          .updateTable('model_connections')
          .set({
            name,
            base_url: baseUrl,
            api_key_env: apiKeyEnv,
            updated_at: new Date(),
            ...(apiKey !== '' ? { api_key_ciphertext: sealApiKey(cipher, id, apiKey) } : input.removeApiKey ? { api_key_ciphertext: null } : {}),
            ...(headers !== undefined ? { headers_ciphertext: sealHeaders(cipher, id, headers) } : input.removeHeaders ? { headers_ciphertext: null } : {}),
          })
          .where('id', '=', id)
          .execute()
      })
      return { name }
    },
    remove: async (id) =>
      write(async (trx) => {
        const connection = await findConnection(trx, id)
        await trx.deleteFrom('model_connections').where('id', '=', id).execute()
        return { name: connection.name }
      }),
    test: async (id) => {
      const connection = await findConnection(db, id)
      // The config flag may have changed since the connection was saved.
      const checked = checkConnectionBaseUrl({ baseUrl: connection.baseUrl, allowMetadataAddresses: options.allowMetadataAddresses })
      if (!checked.ok) return { name: connection.name, report: { lines: [{ step: 'models', ok: false, text: checked.message }], reported: undefined } }
      const secrets = openConnectionSecrets(cipher, connection)
      if (secrets.unreadable) {
        return { name: connection.name, report: { lines: [{ step: 'models', ok: false, text: 'The stored key can no longer be read (the server secret changed): enter it again.' }], reported: undefined } }
      }
      const apiKey = secrets.apiKey ?? (connection.apiKeyEnv !== undefined ? options.env[connection.apiKeyEnv]?.trim() || undefined : undefined)
      const chatModel = connection.models.find((model) => model.enabled)?.providerModel ?? connection.models[0]?.providerModel
      const report = await testConnection({ connection: { baseUrl: connection.baseUrl, apiKey, headers: secrets.headers }, agent: agents.agentFor(connection.baseUrl), chatModel })
      if (report.reported !== undefined && report.reported.length > 0) {
        const reported = report.reported.slice(0, MAX_REPORTED_MODELS)
        await write(async (trx) => {
          const known = new Set(connection.models.map((model) => model.providerModel))
          for (const [position, model] of reported.entries()) {
            if (known.has(model.id)) {
              await trx.updateTable('connection_models').set({ reported: true, position }).where('connection_id', '=', id).where('provider_model', '=', model.id).execute()
              continue
            }
            known.add(model.id)
            const suggested = suggestModel(model)
            await trx
              .insertInto('connection_models')
              .values({
                connection_id: id,
                provider_model: model.id,
                model_id: await freeModelId(trx, connection.name, model.id),
                display_name: suggested.displayName,
                context_window: suggested.contextWindow,
                max_output_tokens: suggested.maxOutputTokens,
                supports_tools: suggested.supportsNativeToolCalling,
                enabled: false,
                reported: true,
                position,
              })
              .execute()
          }
        })
      }
      return { name: connection.name, report }
    },
    saveModels: async (id, rows, added) =>
      write(async (trx) => {
        const connection = await findConnection(trx, id)
        const stored = new Map(connection.models.map((model) => [model.providerModel, model]))
        for (const row of rows) {
          const current = stored.get(row.providerModel)
          if (current === undefined) continue
          if (row.remove) {
            await trx.deleteFrom('connection_models').where('connection_id', '=', id).where('provider_model', '=', row.providerModel).execute()
            continue
          }
          const decoded = Schema.decodeUnknownResult(ModelConfigSchema)(
            {
              id: current.modelId,
              name: row.displayName.trim(),
              profile: connection.name,
              baseUrl: connection.baseUrl,
              model: row.providerModel,
              contextWindow: Number(row.contextWindow),
              maxOutputTokens: Number(row.maxOutputTokens),
              supportsNativeToolCalling: row.supportsNativeToolCalling,
            },
            { errors: 'first' },
          )
          if (Result.isFailure(decoded)) throw new InvalidConnection({ message: `${row.providerModel}: ${describeDecodeError(decoded.failure)}` })
          await trx
            .updateTable('connection_models')
            .set({
              display_name: decoded.success.name,
              context_window: decoded.success.contextWindow,
              max_output_tokens: decoded.success.maxOutputTokens,
              supports_tools: decoded.success.supportsNativeToolCalling,
              enabled: row.enabled,
            })
            .where('connection_id', '=', id)
            .where('provider_model', '=', row.providerModel)
            .execute()
        }
        const addedName = added?.trim() ?? ''
        if (addedName !== '' && !stored.has(addedName)) {
          if (addedName.length > 200 || /[\u0000-\u001f\u007f]/.test(addedName)) throw new InvalidConnection({ message: 'A model name is at most 200 characters.' })
          const suggested = suggestModel({ id: addedName })
          await trx
            .insertInto('connection_models')
            .values({
              connection_id: id,
              provider_model: addedName,
              model_id: await freeModelId(trx, connection.name, addedName),
              display_name: suggested.displayName,
              context_window: suggested.contextWindow,
              max_output_tokens: suggested.maxOutputTokens,
              supports_tools: suggested.supportsNativeToolCalling,
              enabled: false,
              position: 100_000 + stored.size,
            })
            .execute()
        }
        return { name: connection.name }
      }),
    setDefaultModel: async (modelId) => {
      const wanted = modelId?.trim() || undefined
      if (wanted !== undefined && !registry.list().some((model) => model.id === wanted)) {
        throw new InvalidConnection({ message: `The default model must be one that is offered; "${wanted.slice(0, 80)}" is not.` })
      }
      await write((trx) => writeDefaultModelId(trx, wanted))
    },
    close: () => agents.destroy(),
  }
}

/** The feature as a service of the composition root (with the live registry it reloads). */
export class ModelConnectionsService extends Context.Service<ModelConnectionsService, ModelConnections>()('knowagent/llm/ModelConnections') {}
