// Frozen in time: never import application code here.
// The server-wide Bailian connection settings an operator changes while the servers run
// (`knowagent retrieval set`): where the service lives, the agent version, the kb_chat time limit.
// One row, one JSON document (validated by the application on every write and every read); a key
// absent from it means the config file's value.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table retrieval_server_settings (
      id smallint primary key default 1 check (id = 1),
      document jsonb not null default '{}'::jsonb check (jsonb_typeof(document) = 'object'),
      updated_at timestamptz not null default now()
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table retrieval_server_settings`.execute(db)
}
