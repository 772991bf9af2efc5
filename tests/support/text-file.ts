// A text file stored as if uploaded and parsed: its bytes are the text's UTF-8 and its parsed body
// the text itself, for tests that need documents in a workspace without going through an upload.
import type { Kysely } from 'kysely'
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
