// Repositories of the stored model connections (migrations/20261206140000_model_connections.ts):
// plain functions over `(db | trx, …)`. The key and the extra headers are stored only as
// credential-cipher.ts ciphertexts bound to the connection's id; reading them back is
// `openConnectionSecrets`. Every write NOTIFYs MODEL_CONNECTIONS_CHANNEL in its transaction, so
// every process reloads its model registry when it commits.
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'
import type { CredentialCipher } from '../retrieval/credential-cipher.ts'

/** Where a change of the stored connections, their models or the default model is announced. */
export const MODEL_CONNECTIONS_CHANNEL = 'knowagent_model_connections'

export interface StoredModel {
  readonly providerModel: string
  readonly modelId: string
  readonly displayName: string
  readonly contextWindow: number
  readonly maxOutputTokens: number
  readonly supportsNativeToolCalling: boolean
  readonly enabled: boolean
  readonly reported: boolean
}

export interface StoredConnection {
  readonly id: string
  readonly name: string
  readonly baseUrl: string
  readonly apiKeyCiphertext: string | undefined
  readonly apiKeyEnv: string | undefined
  readonly headersCiphertext: string | undefined
  readonly models: ReadonlyArray<StoredModel>
}

/** Every connection (by name) with its models (in the provider's order, hand-added last). */
export async function readConnections(db: Db): Promise<StoredConnection[]> {
  const connections = await db.selectFrom('model_connections').selectAll().orderBy('name').execute()
  if (connections.length === 0) return []
  const models = await db.selectFrom('connection_models').selectAll().orderBy('connection_id').orderBy('position').orderBy('provider_model').execute()
  return connections.map((row) => ({
    id: row.id,
    name: row.name,
    baseUrl: row.base_url,
    apiKeyCiphertext: row.api_key_ciphertext ?? undefined,
    apiKeyEnv: row.api_key_env ?? undefined,
    headersCiphertext: row.headers_ciphertext ?? undefined,
    models: models
      .filter((model) => model.connection_id === row.id)
      .map((model) => ({
        providerModel: model.provider_model,
        modelId: model.model_id,
        displayName: model.display_name,
        contextWindow: model.context_window,
        maxOutputTokens: model.max_output_tokens,
        supportsNativeToolCalling: model.supports_tools,
        enabled: model.enabled,
        reported: model.reported,
      })),
  }))
}

export async function readDefaultModelId(db: Db): Promise<string | undefined> {
  const row = await db.selectFrom('model_settings').select('default_model_id').where('id', '=', 1).executeTakeFirst()
  return row?.default_model_id ?? undefined
}

export async function writeDefaultModelId(db: Db, modelId: string | undefined): Promise<void> {
  await db
    .insertInto('model_settings')
    .values({ id: 1, default_model_id: modelId ?? null, updated_at: new Date() })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ default_model_id: modelId ?? null, updated_at: new Date() }))
    .execute()
}

/** Announces a change; inside a transaction, sent when it commits. */
export async function notifyModelConnectionsChanged(db: Db): Promise<void> {
  await sql`select pg_notify(${MODEL_CONNECTIONS_CHANNEL}, 'changed')`.execute(db)
}

const secretOwner = (connectionId: string) => `model-connection:${connectionId}`

export function sealApiKey(cipher: CredentialCipher, connectionId: string, apiKey: string): string {
  return cipher.encrypt({ plaintext: apiKey, userId: secretOwner(connectionId), name: 'api_key' })
}

export function sealHeaders(cipher: CredentialCipher, connectionId: string, headers: Readonly<Record<string, string>>): string {
  return cipher.encrypt({ plaintext: JSON.stringify(headers), userId: secretOwner(connectionId), name: 'headers' })
}

export interface ConnectionSecrets {
  readonly apiKey: string | undefined
  readonly headers: Readonly<Record<string, string>> | undefined
  /** A stored value the server secret cannot decrypt (the secret changed, or the row was tampered with). */
  readonly unreadable: boolean
}

export function openConnectionSecrets(cipher: CredentialCipher, connection: StoredConnection): ConnectionSecrets {
  const owner = secretOwner(connection.id)
  const apiKey = connection.apiKeyCiphertext === undefined ? undefined : cipher.decrypt({ stored: connection.apiKeyCiphertext, userId: owner, name: 'api_key' })
  const headersText = connection.headersCiphertext === undefined ? undefined : cipher.decrypt({ stored: connection.headersCiphertext, userId: owner, name: 'headers' })
  let headers: Record<string, string> | undefined
  try {
    headers = headersText === undefined ? undefined : (JSON.parse(headersText) as Record<string, string>)
  } catch {
    headers = undefined
  }
  const unreadable = (connection.apiKeyCiphertext !== undefined && apiKey === undefined) || (connection.headersCiphertext !== undefined && headers === undefined)
  return { apiKey, headers, unreadable }
}
