// Frozen in time: never import application code here.
//
// Many instances on one database (issue 38):
// - turn_event_batches: a turn's SSE events, numbered from 1, in batches as one process wrote them
//   (one row per flush, not per event): `events` holds their SSE frames (`id:`, `event:`, `data:`)
//   for the numbers first_seq..last_seq; the batch holding the terminal event is `terminal`. Any
//   instance replays them to a client that reconnects with Last-Event-ID; they go with the turn.
// - instances.heartbeat_at / lease_seconds: an instance whose heartbeat is older than its own lease
//   counts as dead even while its lock connection looks alive (a frozen host, a partition).
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('turn_event_batches')
    .addColumn('turn_id', 'uuid', (c) => c.notNull().references('turns.id').onDelete('cascade'))
    .addColumn('first_seq', 'integer', (c) => c.notNull())
    .addColumn('last_seq', 'integer', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('bytes', 'integer', (c) => c.notNull())
    .addColumn('terminal', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('turn_event_batches_pkey', ['turn_id', 'first_seq'])
    .addCheckConstraint('turn_event_batches_range', sql`first_seq >= 1 and last_seq >= first_seq`)
    .execute()
  // Written once, read rarely, dropped soon: not worth compressing (pglz costs the database's CPU on every flush).
  await sql`alter table turn_event_batches alter column events set storage external`.execute(db)
  // Retention: the turns whose terminal batch is old, oldest first.
  await db.schema.createIndex('turn_event_batches_ended').on('turn_event_batches').column('created_at').where(sql.ref('terminal'), '=', true).execute()

  await db.schema.alterTable('instances').addColumn('heartbeat_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`)).execute()
  await db.schema.alterTable('instances').addColumn('lease_seconds', 'integer', (c) => c.notNull().defaultTo(60)).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('instances').dropColumn('lease_seconds').execute()
  await db.schema.alterTable('instances').dropColumn('heartbeat_at').execute()
  await db.schema.dropTable('turn_event_batches').execute()
}
