// Frozen in time: never import application code here.
// The one-time values of forms whose answer shows a secret once (the Users page's "Add user" and
// "Reset password"): the change and the use of its form's value commit together, so the same form
// sent again (a reload re-POSTs it) changes nothing and shows no second secret. Per signed-in user.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table form_nonces (
    user_id uuid not null references users (id) on delete cascade,
    nonce uuid not null,
    used_at timestamptz not null default now(),
    primary key (user_id, nonce)
  )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table form_nonces`.execute(db)
}
