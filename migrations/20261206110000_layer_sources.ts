// Frozen in time: never import application code here.
// What each generated page (a summary, a folder's overview and abstract) was built from: each
// source file's node, the version it had and the path it was at when the page was published. A
// page is stale once one of them changed, moved or is gone — found by comparing these rows with
// the nodes as they are now (no foreign key on the source: a deleted source is found by its absence).
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table layer_sources (
      page_id uuid not null references nodes(id) on delete cascade,
      source_id uuid not null,
      source_version_id uuid,
      source_path text not null,
      primary key (page_id, source_id)
    )`.execute(db)
  await sql`create index layer_sources_source on layer_sources (source_id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table layer_sources`.execute(db)
}
