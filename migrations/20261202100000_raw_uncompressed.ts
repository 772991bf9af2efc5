// Frozen in time: never import application code here.
// A file's raw bytes are stored uncompressed (STORAGE EXTERNAL), so that a slice of them
// (`substring(raw from … for …)`) reads only the TOAST chunks it spans: downloads stream a slice at
// a time (a slice of a compressed value is decompressed from its start, which made a streamed
// download quadratic). Values stored compressed before are rewritten once, uncompressed.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table file_versions alter column raw set storage external`.execute(db)
  await sql`update file_versions set raw = raw || ''::bytea where pg_column_compression(raw) is not null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table file_versions alter column raw set storage extended`.execute(db)
}
