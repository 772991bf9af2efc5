// Frozen in time: never import application code here.
// The settings page's "Create token" form carries a one-time value; the token it created keeps it,
// so the same form sent again (a reload re-POSTs it) finds that token instead of creating a second
// one. Unique per user; null for tokens made otherwise (the CLI, before this).
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table api_tokens add column form_nonce uuid`.execute(db)
  await sql`create unique index api_tokens_form_nonce on api_tokens (user_id, form_nonce) where form_nonce is not null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index api_tokens_form_nonce`.execute(db)
  await sql`alter table api_tokens drop column form_nonce`.execute(db)
}
