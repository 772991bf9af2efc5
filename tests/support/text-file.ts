// A text file stored as if uploaded and parsed: its bytes are the text's UTF-8 and its parsed body
// the text itself, for tests that need documents in a workspace without going through an upload.
import { type Kysely, sql } from 'kysely'
import type { DB, Owner } from '../../src/effects/db/schema.ts'
import { putFile, type PutFileResult } from '../../src/effects/workspace/store.ts'

/** Stores `text` at `segments` under `owner`'s root; `mime` is text/markdown for a `.md` name, text/plain otherwise, unless given. */
export function putText(
  db: Kysely<DB>,
  { owner, segments, text, mime }: { readonly owner: Owner; readonly segments: ReadonlyArray<string>; readonly text: string; readonly mime?: string },
): Promise<PutFileResult> {
  return putFile(db, {
    owner,
    segments,
    bytes: new TextEncoder().encode(text),
    parsed: { ok: true, mime: mime ?? (segments.at(-1)?.endsWith('.md') ? 'text/markdown' : 'text/plain'), text },
  })
}

/**
 * A folder of `count` files for listings at scale: `seed.md` stored as a text file, then `count` − 1
 * copies of its node row (`g000001.md`, `g000002.md`, …, same version): the listings read rows,
 * not bodies, and 20,000 stored files would take minutes.
 */
export async function fillFolder(db: Kysely<DB>, { owner, folder, count }: { readonly owner: Owner; readonly folder: ReadonlyArray<string>; readonly count: number }): Promise<PutFileResult> {
  const seed = await putText(db, { owner, segments: [...folder, 'seed.md'], text: 'seed' })
  await sql`insert into nodes (id, owner_id, parent_id, name, path, kind, current_version_id)
    select gen_random_uuid(), ${owner.id}::uuid, ${seed.node.parentId}::uuid, name, ${folder.join('/') + '/'} || name, 'file', ${seed.node.currentVersionId}::uuid
    from (select 'g' || lpad(i::text, 6, '0') || '.md' as name from generate_series(1, ${count - 1}::int) i) names`.execute(db)
  return seed
}
