// Frozen in time: never import application code here.
// How each file version came to be (issue 37, version history): an upload, an import, a compile
// job's page, or a restore of an older version. Versions written before this column say nothing.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table file_versions add column origin text check (origin in ('upload', 'import', 'compile', 'restore'))`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table file_versions drop column origin`.execute(db)
}
