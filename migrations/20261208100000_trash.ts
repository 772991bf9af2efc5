// Frozen in time: never import application code here.
// The Trash (issue 37): a deleted file or folder is kept, with its generated pages, for
// `trash.retentionDays`, then deleted for real. Its rows stay in the table of nodes — renamed
// `all_nodes` — marked with their trash item (`trash_id`), and `nodes` becomes the view of the live
// rows only. Every query of the application already goes through `nodes` (listings, reads, search,
// export, the tools, compile jobs), so a trashed node is invisible to all of them by one rule, here.
// A name is unique among an owner's live nodes (a partial unique index); trashed rows keep the
// path they had, which is where a restore puts them back.
//
// For later migrations: alter `all_nodes` (a view cannot be altered); a new column reaches `nodes`
// by re-creating the view with the column added at the end; a foreign key references all_nodes(id).
import { type Kysely, sql } from 'kysely'

const LIVE_COLUMNS = 'id, owner_id, parent_id, name, path, kind, current_version_id, created_at, updated_at, generated, generated_from, trash_id'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table nodes rename to all_nodes`.execute(db)
  await sql`
    create table trash_items (
      id uuid primary key,
      owner_id uuid not null references users(id) on delete cascade,
      node_id uuid not null references all_nodes(id) on delete cascade,
      name text not null,
      kind text not null check (kind in ('directory', 'file')),
      path text not null,
      files integer not null,
      directories integer not null,
      summaries integer not null default 0,
      bytes bigint not null default 0,
      deleted_at timestamptz not null default now(),
      purge_at timestamptz not null
    )`.execute(db)
  await sql`create index trash_items_owner_deleted on trash_items (owner_id, deleted_at desc)`.execute(db)
  await sql`create index trash_items_purge on trash_items (purge_at)`.execute(db)
  await sql`alter table all_nodes add column trash_id uuid references trash_items(id) on delete cascade`.execute(db)
  await sql`create index all_nodes_trash on all_nodes (trash_id) where trash_id is not null`.execute(db)
  await sql`alter table all_nodes drop constraint nodes_owner_path_unique`.execute(db)
  await sql`create unique index nodes_owner_path_live on all_nodes (owner_id, path) where trash_id is null`.execute(db)
  // Every node of an owner, trashed ones too: storage counted (trashed bytes count), a user's delete (the foreign key's cascade).
  await sql`create index all_nodes_owner on all_nodes (owner_id)`.execute(db)
  // `with local check option`: nothing written through the view can make a row it does not show.
  await sql`create view nodes as select ${sql.raw(LIVE_COLUMNS)} from all_nodes where trash_id is null with local check option`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view nodes`.execute(db)
  await sql`delete from trash_items`.execute(db) // its nodes go with it (all_nodes.trash_id cascades)
  await sql`drop index nodes_owner_path_live`.execute(db)
  await sql`drop index all_nodes_owner`.execute(db)
  await sql`alter table all_nodes add constraint nodes_owner_path_unique unique (owner_id, path)`.execute(db)
  await sql`alter table all_nodes drop column trash_id`.execute(db)
  await sql`drop table trash_items`.execute(db)
  await sql`alter table all_nodes rename to nodes`.execute(db)
}
