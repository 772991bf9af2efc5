// Frozen in time: never import application code here.
//
// State that every server process sharing the database must agree on:
// - rate_limit_hits: a sliding log per key (the last hits inside the window, at most `limit` of them)
// - sign_in_throttles: failed sign-ins per login and per client address, with the lock-out window
// - instances: one row per running server process; the process holds a session-level advisory lock
//   (class 1802399607, key lock_key) for as long as it lives, so a free lock means a dead process
// - turns.instance_id: the process that runs a turn, so only a dead process's turns are closed
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_limit_hits')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('hits', sql`timestamptz[]`, (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('sign_in_throttles')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('blocked_until', 'timestamptz')
    .addColumn('last_attempt_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sign_in_throttles_last_attempt').on('sign_in_throttles').column('last_attempt_at').execute()

  await db.schema
    .createTable('instances')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('lock_key', 'integer', (c) => c.notNull().unique().generatedAlwaysAsIdentity())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema.alterTable('turns').addColumn('instance_id', 'uuid').execute()
  await db.schema
    .createIndex('turns_running_instance')
    .on('turns')
    .column('instance_id')
    .where(sql.ref('status'), '=', 'running')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('turns_running_instance').execute()
  await db.schema.alterTable('turns').dropColumn('instance_id').execute()
  await db.schema.dropTable('instances').execute()
  await db.schema.dropTable('sign_in_throttles').execute()
  await db.schema.dropTable('rate_limit_hits').execute()
}
