// Frozen in time: never import application code here.
// A folder's children in their listing order (folders first, then by name, byte order), read from
// an index: a page of `ls`, of the tree and of the folder page stops after its rows instead of
// sorting every child, and the one-statement `ls` no longer scans the whole table for a folder it
// resolved in the same statement (its plan cannot know that folder, and on a table whose nodes sit
// under few folders PostgreSQL chose a sequential scan of every owner's nodes, per call).
// `kind collate "C"` sorts 'directory' before 'file', the only two kinds. The layer pages of a
// folder (`.overview.md`, `.abstract.md`) get a small index of their own.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index all_nodes_children_order on all_nodes (parent_id, kind collate "C", name collate "C") where trash_id is null`.execute(db)
  await sql`create index all_nodes_layer_pages on all_nodes (parent_id) where generated in ('overview', 'abstract') and trash_id is null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index all_nodes_layer_pages`.execute(db)
  await sql`drop index all_nodes_children_order`.execute(db)
}
