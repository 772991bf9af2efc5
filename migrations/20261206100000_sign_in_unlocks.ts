// Frozen in time: never import application code here.
// One-time unlock links (`knowagent user unlock <login>`): each lets one sign-in of that login past
// a sign-in lock-out, with the right password. Only the HMAC of the link's token is kept.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table sign_in_unlocks (
      token_hash text primary key,
      user_id uuid not null references users(id) on delete cascade,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`.execute(db)
  await sql`create index sign_in_unlocks_user on sign_in_unlocks (user_id)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sign_in_unlocks`.execute(db)
}
