// Frozen in time: never import application code here.
// Compile jobs (SPEC §8): the job's progress, structured failure and result, its claim by the
// queue (pg-boss, in its own schema), the files it covers (one active job per file), the cache of
// model outputs by fingerprint, and the mark on nodes written by a compile job.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('progress', 'jsonb')
    .addColumn('failure', 'jsonb')
    .addColumn('result', 'jsonb')
    .addColumn('max_attempts', 'integer')
    .addColumn('queue_job_id', 'text')
    .addColumn('queue_attempt', 'integer')
    .addColumn('dead_lettered_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('jobs_owner_kind_uri_created').on('jobs').columns(['owner_id', 'kind', 'uri', 'created_at']).execute()

  await db.schema
    .createTable('compile_job_files')
    .addColumn('job_id', 'uuid', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('node_id', 'uuid', (c) => c.references('nodes.id').onDelete('set null'))
    .addColumn('uri', 'text', (c) => c.notNull())
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addPrimaryKeyConstraint('compile_job_files_pk', ['job_id', 'position'])
    .execute()
  // One active (queued or running) compile job per file, whatever races the enqueue checks lose.
  await sql`create unique index compile_job_files_one_active on compile_job_files (node_id) where active`.execute(db)
  await db.schema.createIndex('compile_job_files_node').on('compile_job_files').columns(['node_id']).execute()

  await db.schema
    .createTable('compile_cache')
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('output', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('compile_cache_pk', ['owner_id', 'fingerprint'])
    .execute()

  await db.schema
    .alterTable('nodes')
    .addColumn('generated', 'text', (c) => c.check(sql`generated in ('summary', 'overview', 'abstract')`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('nodes').dropColumn('generated').execute()
  await db.schema.dropTable('compile_cache').execute()
  await db.schema.dropTable('compile_job_files').execute()
  await db.schema.dropIndex('jobs_owner_kind_uri_created').execute()
  await db.schema
    .alterTable('jobs')
    .dropColumn('progress')
    .dropColumn('failure')
    .dropColumn('result')
    .dropColumn('max_attempts')
    .dropColumn('queue_job_id')
    .dropColumn('queue_attempt')
    .dropColumn('dead_lettered_at')
    .execute()
}
