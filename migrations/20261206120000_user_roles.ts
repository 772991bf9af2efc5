// Frozen in time: never import application code here.
// Roles and account state: `role` is admin or member (the first user is an admin — on an existing
// installation, the earliest created); `disabled_at` set means the account cannot sign in and holds
// no session or token; `last_sign_in_at` is shown to administrators.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table users add column role text not null default 'member' check (role in ('admin', 'member'))`.execute(db)
  await sql`alter table users add column disabled_at timestamptz`.execute(db)
  await sql`alter table users add column last_sign_in_at timestamptz`.execute(db)
  await sql`update users set role = 'admin' where id = (select id from users order by created_at, id limit 1)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table users drop column role, drop column disabled_at, drop column last_sign_in_at`.execute(db)
}
