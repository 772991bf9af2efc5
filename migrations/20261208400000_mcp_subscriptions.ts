// Frozen in time: never import application code here.
// The MCP face's resource subscriptions (issue 39): which client connection (a hash of its token
// and session id) follows which file, and a NOTIFY on every new file version so that the process
// holding that connection's stream can say the file changed. No foreign key to the tree: a
// subscription to a file deleted since is harmless (it never changes again) and is dropped with
// its connection's other stale rows.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table mcp_subscriptions (
      session_key text not null,
      user_id uuid not null references users(id) on delete cascade,
      node_id uuid not null,
      uri text not null,
      touched_at timestamptz not null default now(),
      primary key (session_key, node_id)
    )`.execute(db)
  await sql`create index mcp_subscriptions_node on mcp_subscriptions (node_id)`.execute(db)
  await sql`create index mcp_subscriptions_user_touched on mcp_subscriptions (user_id, touched_at)`.execute(db)
  // Sent when the version's transaction commits: after the file's current version is switched to it.
  await sql`
    create function knowagent_notify_file_version() returns trigger language plpgsql as $$
    begin
      perform pg_notify('knowagent_file_versions', new.node_id::text);
      return null;
    end
    $$`.execute(db)
  await sql`create trigger file_versions_notify after insert on file_versions for each row execute function knowagent_notify_file_version()`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger file_versions_notify on file_versions`.execute(db)
  await sql`drop function knowagent_notify_file_version()`.execute(db)
  await sql`drop table mcp_subscriptions`.execute(db)
}
