// Frozen in time: never import application code here.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('login', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('label', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('nodes')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('parent_id', 'uuid', (c) => c.references('nodes.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('directory', 'file')`))
    .addColumn('current_version_id', 'uuid')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('nodes_owner_path_unique', ['owner_id', 'path'])
    .execute()
  await db.schema.createIndex('nodes_parent_name').on('nodes').columns(['parent_id', 'kind', 'name']).execute()

  await db.schema
    .createTable('file_versions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('node_id', 'uuid', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
    .addColumn('version_no', 'integer', (c) => c.notNull())
    .addColumn('raw', 'bytea', (c) => c.notNull())
    .addColumn('body', 'text')
    .addColumn('mime', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('parse_status', 'text', (c) => c.notNull().check(sql`parse_status in ('parsed', 'failed')`))
    .addColumn('parse_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('file_versions_node_version_unique', ['node_id', 'version_no'])
    .execute()
  await db.schema
    .alterTable('nodes')
    .addForeignKeyConstraint('nodes_current_version_fk', ['current_version_id'], 'file_versions', ['id'])
    .onDelete('set null')
    .execute()

  // Background jobs: 'parse' (L2 body) now; 'compile' (wiki) jobs share this table later.
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('node_id', 'uuid', (c) => c.references('nodes.id').onDelete('set null'))
    .addColumn('version_id', 'uuid', (c) => c.references('file_versions.id').onDelete('set null'))
    .addColumn('uri', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('queued', 'running', 'succeeded', 'failed', 'cancelled')`),
    )
    .addColumn('stage', 'text')
    .addColumn('error', 'text')
    .addColumn('configuration_json', 'jsonb')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('jobs_owner_kind_created').on('jobs').columns(['owner_id', 'kind', 'created_at']).execute()
  await db.schema.createIndex('jobs_node_kind_created').on('jobs').columns(['node_id', 'kind', 'created_at']).execute()
  await db.schema.createIndex('jobs_status_lease').on('jobs').columns(['status', 'lease_expires_at']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('jobs').execute()
  await db.schema.alterTable('nodes').dropConstraint('nodes_current_version_fk').execute()
  await db.schema.dropTable('file_versions').execute()
  await db.schema.dropTable('nodes').execute()
  await db.schema.dropTable('sessions').execute()
  await db.schema.dropTable('api_tokens').execute()
  await db.schema.dropTable('users').execute()
}
