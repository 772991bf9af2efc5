// Frozen in time: never import application code here.
// Retrieval services (Bailian): the per-user settings layer, the per-user encrypted credential store,
// and the catalog cache shared by every server process (one document per workspace id).
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('retrieval_settings')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text')
    .addColumn('default_retrieve_agent_id', 'text')
    .addColumn('default_chat_agent_id', 'text')
    // Fields the one-time import from ~/.bailian/config.json has consumed (or found user-managed).
    .addColumn('seeded_fields', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema
    .createTable('user_credentials')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // AES-256-GCM, keyed from the server secret; bound to (user_id, name).
    .addColumn('ciphertext', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('user_credentials_pk', ['user_id', 'name'])
    .execute()

  await db.schema
    .createTable('retrieval_catalogs')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_host', 'text', (c) => c.notNull())
    // Null until a first fetch succeeded: then there is no document.
    .addColumn('fetched_at', 'timestamptz')
    .addColumn('revision', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('search_total', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('chat_total', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('search_truncated', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('chat_truncated', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('last_attempt_at', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('last_error_at', 'timestamptz')
    .execute()

  await db.schema
    .createTable('retrieval_catalog_services')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('retrieval_catalogs.workspace_id').onDelete('cascade'))
    .addColumn('scene', 'text', (c) => c.notNull().check(sql`scene in ('search', 'chat')`))
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('agent_name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('modify_time', 'text')
    .addColumn('description', 'text')
    .addPrimaryKeyConstraint('retrieval_catalog_services_pk', ['workspace_id', 'scene', 'agent_id'])
    .execute()

  // Keys (by keyed fingerprint, never the key) that listed this workspace successfully: the shared
  // document is shown only to callers whose own key has been seen to reach it.
  await db.schema
    .createTable('retrieval_catalog_readers')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('retrieval_catalogs.workspace_id').onDelete('cascade'))
    .addColumn('key_fingerprint', 'text', (c) => c.notNull())
    .addColumn('verified_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('retrieval_catalog_readers_pk', ['workspace_id', 'key_fingerprint'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('retrieval_catalog_readers').execute()
  await db.schema.dropTable('retrieval_catalog_services').execute()
  await db.schema.dropTable('retrieval_catalogs').execute()
  await db.schema.dropTable('user_credentials').execute()
  await db.schema.dropTable('retrieval_settings').execute()
}
