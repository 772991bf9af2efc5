// Frozen in time: never import application code here.
// Node names are stored in Unicode NFC from now on, and URIs are read in NFC, so a name stored
// before in another form (macOS file names are often decomposed) would no longer be found.
// Such names are put in NFC, owner by owner, where that leaves no two nodes of the owner with
// the same path; a path holds every name on the way, so children follow their directories.
// An owner whose names would collide is left as it is.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ server_encoding: string }>`show server_encoding`.execute(db)
  if (rows[0]?.server_encoding !== 'UTF8') return // normalize() needs UTF-8; other encodings hold no such names
  await sql`
    update nodes
    set name = normalize(name, NFC), path = normalize(path, NFC)
    where path <> normalize(path, NFC)
      and owner_id in (
        select owner_id from nodes group by owner_id
        having count(*) = count(distinct normalize(path, NFC))
      )`.execute(db)
}

export async function down(): Promise<void> {
  // NFC names are valid names in every version: nothing to undo.
}
