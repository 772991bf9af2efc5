// Frozen in time: never import application code here.
// Scheduled backups (issue 37): one row per run the server's queue made — when, how it ended, the
// file and its size, or why it failed — for Administration → Backups.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_runs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('running', 'succeeded', 'failed')`))
    .addColumn('file', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint')
    .addColumn('duration_ms', 'integer')
    .addColumn('pruned', 'integer')
    .addColumn('error', 'text')
    .execute()
  await db.schema.createIndex('backup_runs_started').on('backup_runs').column('started_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('backup_runs').execute()
}
