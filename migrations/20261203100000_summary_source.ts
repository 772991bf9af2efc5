// Frozen in time: never import application code here.
// A summary page keeps the node id of the file it summarises (`generated_from`; no foreign key: a
// deleted source is found by its absence). Two sources whose summaries would share a name (`a` and
// `a.md`, or `notes.md` of two folders compiled into one artifact directory) no longer overwrite
// each other's page, and a later overview cites a source where it is now, or not at all once it is
// deleted. Pages written before have none (null) and are read as before.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table nodes add column generated_from uuid`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table nodes drop column generated_from`.execute(db)
}
