// Frozen in time: never import application code here.
// The workspace-wide search: each current file version's text is cut into passages whose words
// are indexed as a tsvector (GIN), and node names get a trigram index (pg_trgm) for fuzzy and
// substring matching. Existing files are indexed here, with a copy of the cutting rules of this
// day (src/effects/workspace/search-text.ts).
import { type Kysely, sql } from 'kysely'

const PASSAGE_TARGET = 1000
const PASSAGE_MIN = 600
const PASSAGE_MAX = 1400
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu
const NOT_WORD = /[^\p{L}\p{N}\p{M}]+/gu
const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

function codePoints(text: string): number {
  let count = 0
  for (let i = 0; i < text.length; i++) if (!(isLow(text.charCodeAt(i)) && i > 0 && isHigh(text.charCodeAt(i - 1)))) count++
  return count
}

function bigrams(run: string): string {
  const chars = Array.from(run)
  if (chars.length < 2) return run
  const pairs: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) pairs.push(chars[i]! + chars[i + 1]!)
  return pairs.join(' ')
}

function searchableText(text: string): string {
  return text.normalize('NFC').replace(NOT_WORD, ' ').replace(CJK_RUN, (run) => ` ${bigrams(run)} `).replace(/ {2,}/g, ' ').trim()
}

function cutAfter(body: string, from: number): number {
  if (body.length - from <= PASSAGE_MAX) return body.length
  const window = body.slice(from + PASSAGE_MIN, from + PASSAGE_MAX)
  const best = (pattern: RegExp): number | undefined => {
    let found: number | undefined
    for (const match of window.matchAll(pattern)) {
      const end = match.index + match[0].length
      if (found === undefined || Math.abs(end + PASSAGE_MIN - PASSAGE_TARGET) < Math.abs(found + PASSAGE_MIN - PASSAGE_TARGET)) found = end
    }
    return found
  }
  const end = best(/\n\s*\n/g) ?? best(/\n/g) ?? best(/[.!?。！？]\s*/gu) ?? best(/\s+/g)
  let cut = from + PASSAGE_MIN + (end ?? PASSAGE_TARGET - PASSAGE_MIN)
  if (isLow(body.charCodeAt(cut)) && isHigh(body.charCodeAt(cut - 1))) cut++
  return cut
}

function passagesOf(body: string): Array<{ start: number; length: number; text: string }> {
  const passages: Array<{ start: number; length: number; text: string }> = []
  let from = 0
  let start = 0
  while (from < body.length) {
    const to = cutAfter(body, from)
    const text = body.slice(from, to)
    const length = codePoints(text)
    if (text.trim() !== '') passages.push({ start, length, text })
    start += length
    from = to
  }
  return passages
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db)
  await db.schema
    .createTable('search_passages')
    .addColumn('version_id', 'uuid', (c) => c.notNull().references('file_versions.id').onDelete('cascade'))
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('node_id', 'uuid', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
    .addColumn('start', 'integer', (c) => c.notNull())
    .addColumn('length', 'integer', (c) => c.notNull())
    .addColumn('words', sql`tsvector`, (c) => c.notNull())
    .addPrimaryKeyConstraint('search_passages_pkey', ['version_id', 'start'])
    .execute()
  await sql`create index search_passages_words on search_passages using gin (words)`.execute(db)
  await db.schema.createIndex('search_passages_node').on('search_passages').column('node_id').execute()
  await sql`create index nodes_name_trigrams on nodes using gin (name gin_trgm_ops)`.execute(db)

  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    const files = await db
      .selectFrom('nodes')
      .innerJoin('file_versions', 'file_versions.id', 'nodes.current_version_id')
      .select(['nodes.id as node_id', 'nodes.owner_id', 'file_versions.id as version_id', 'file_versions.body'])
      .where('nodes.id', '>', after)
      .where('file_versions.body', 'is not', null)
      .orderBy('nodes.id')
      .limit(100)
      .execute()
    if (files.length === 0) break
    after = files.at(-1)!.node_id
    for (const file of files) {
      const passages = passagesOf(file.body)
      for (let i = 0; i < passages.length; i += 500) {
        await db
          .insertInto('search_passages')
          .values(
            passages.slice(i, i + 500).map((p) => ({
              version_id: file.version_id,
              owner_id: file.owner_id,
              node_id: file.node_id,
              start: p.start,
              length: p.length,
              words: sql`to_tsvector('simple', ${searchableText(p.text)})`,
            })),
          )
          .execute()
      }
    }
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists nodes_name_trigrams`.execute(db)
  await db.schema.dropTable('search_passages').execute()
}
