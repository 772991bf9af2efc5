// Repositories of the per-user settings layer (`retrieval_settings`) and the per-user credential
// store (`user_credentials`, values encrypted with credential-cipher.ts). Plain functions over
// `(db | trx, …)`; null columns mean "not set in this layer".
import { type Kysely, sql, type Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { CredentialCipher } from './credential-cipher.ts'
import type { CredentialName, EditableKey, SettingValues } from './retrieval-settings.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface UserLayer {
  readonly values: Readonly<Record<EditableKey, string | undefined>>
  readonly seededFields: ReadonlyArray<string>
}

const EMPTY_LAYER: UserLayer = {
  values: { workspaceId: undefined, defaultRetrieveAgentId: undefined, defaultChatAgentId: undefined },
  seededFields: [],
}

const COLUMNS = {
  workspaceId: 'workspace_id',
  defaultRetrieveAgentId: 'default_retrieve_agent_id',
  defaultChatAgentId: 'default_chat_agent_id',
} as const satisfies Record<EditableKey, string>

export async function readUserLayer(db: Db, userId: string, { lock = false }: { lock?: boolean } = {}): Promise<UserLayer> {
  let query = db.selectFrom('retrieval_settings').selectAll().where('user_id', '=', userId)
  if (lock) query = query.forUpdate()
  const row = await query.executeTakeFirst()
  if (row === undefined) return EMPTY_LAYER
  return {
    values: {
      workspaceId: row.workspace_id ?? undefined,
      defaultRetrieveAgentId: row.default_retrieve_agent_id ?? undefined,
      defaultChatAgentId: row.default_chat_agent_id ?? undefined,
    },
    seededFields: row.seeded_fields,
  }
}

export async function ensureUserLayerRow(db: Db, userId: string): Promise<void> {
  await db
    .insertInto('retrieval_settings')
    .values({ user_id: userId })
    .onConflict((conflict) => conflict.column('user_id').doNothing())
    .execute()
}

/** Sets (string) or removes (null) user-layer values; optionally records seeded fields. */
export async function updateUserLayer(
  db: Db,
  userId: string,
  { values, markSeeded = [] }: { readonly values: SettingValues; readonly markSeeded?: ReadonlyArray<string> },
): Promise<void> {
  const set: Record<string, string | null> = {}
  for (const [key, column] of Object.entries(COLUMNS) as Array<[EditableKey, string]>) {
    if (key in values) set[column] = values[key] ?? null
  }
  if (Object.keys(set).length === 0 && markSeeded.length === 0) return
  await ensureUserLayerRow(db, userId)
  let update = db.updateTable('retrieval_settings').set({ ...set, updated_at: new Date() }).where('user_id', '=', userId)
  if (markSeeded.length > 0) {
    update = update.set({
      seeded_fields: sql<string[]>`array(select distinct f from unnest(seeded_fields || ${[...markSeeded]}::text[]) as f order by f)`,
    })
  }
  await update.execute()
}

export interface StoredCredentials {
  readonly values: Partial<Record<CredentialName, string>>
  /** Names stored but not decryptable (another server secret, or tampered). */
  readonly unreadable: ReadonlyArray<string>
}

export async function readCredentials(db: Db, cipher: CredentialCipher, userId: string): Promise<StoredCredentials> {
  const rows = await db.selectFrom('user_credentials').select(['name', 'ciphertext']).where('user_id', '=', userId).execute()
  const values: Record<string, string> = {}
  const unreadable: string[] = []
  for (const row of rows) {
    const plaintext = cipher.decrypt({ stored: row.ciphertext, userId, name: row.name })
    if (plaintext === undefined) unreadable.push(row.name)
    else values[row.name] = plaintext
  }
  return { values, unreadable }
}

export async function writeCredential(
  db: Db,
  cipher: CredentialCipher,
  { userId, name, value }: { readonly userId: string; readonly name: CredentialName; readonly value: string },
): Promise<void> {
  const ciphertext = cipher.encrypt({ plaintext: value, userId, name })
  await db
    .insertInto('user_credentials')
    .values({ user_id: userId, name, ciphertext })
    .onConflict((conflict) => conflict.columns(['user_id', 'name']).doUpdateSet({ ciphertext, updated_at: new Date() }))
    .execute()
}

export async function deleteCredential(db: Db, { userId, name }: { readonly userId: string; readonly name: CredentialName }): Promise<boolean> {
  const result = await db.deleteFrom('user_credentials').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** Where a change of a user's settings or credentials is announced to every process (bailian-settings.ts caches them). */
export const SETTINGS_CHANNEL = 'knowagent_retrieval_settings'

/** Announces a change of `userId`'s settings or credentials; inside a transaction, sent when it commits. */
export async function notifySettingsChanged(db: Db, userId: string): Promise<void> {
  await sql`select pg_notify(${SETTINGS_CHANNEL}, ${userId})`.execute(db)
}
