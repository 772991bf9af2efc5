// Frozen in time: never import application code here.
// Model connections an administrator adds from the browser (Admin → Model connections): an
// OpenAI-compatible endpoint with its key and extra headers encrypted by the application (never
// stored in clear), the models it offers (each enabled or not, with the limits the turn needs), and
// the server's default model. Every process keeps them in memory and is told of each change by a
// NOTIFY the application sends in the writing transaction.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table model_connections (
      id uuid primary key,
      name text not null unique check (length(name) between 1 and 80),
      base_url text not null,
      api_key_ciphertext text,
      api_key_env text,
      headers_ciphertext text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db)
  await sql`
    create table connection_models (
      connection_id uuid not null references model_connections (id) on delete cascade,
      provider_model text not null,
      model_id text not null unique,
      display_name text not null,
      context_window integer not null check (context_window > 0),
      max_output_tokens integer not null check (max_output_tokens > 0),
      supports_tools boolean not null,
      enabled boolean not null default false,
      reported boolean not null default false,
      position integer not null default 0,
      primary key (connection_id, provider_model)
    )`.execute(db)
  await sql`
    create table model_settings (
      id smallint primary key default 1 check (id = 1),
      default_model_id text,
      updated_at timestamptz not null default now()
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table model_settings`.execute(db)
  await sql`drop table connection_models`.execute(db)
  await sql`drop table model_connections`.execute(db)
}
