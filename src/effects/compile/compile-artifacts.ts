// A compile job's artifacts (SPEC §8): where they go and what they are called, the summaries an
// earlier job published beside them, and publishing — every page as a new version and the job's
// success, in one transaction, under the owner's tree lock, at the place the artifact directory
// and the sources have now (found by node id: moved, they are followed; deleted, nothing is written).
// The attempt that produces the pages is compile-pipeline.ts.
import type { Kysely } from 'kysely'
import type { ActorFailure, CompileJobOutput, FileSummary, PublishInput, PublishOutput } from '../../machines/index.ts'
import type { DB, GeneratedKind } from '../db/schema.ts'
import { findNode, putFileInTransaction } from '../workspace/store.ts'
import type { Db, Owner } from '../db/schema.ts'
import { readCurrentBodies } from '../workspace/file-contents.ts'
import { shareTree } from '../workspace/tree-lock.ts'
import { formatKbUri, pathToSegments } from '../workspace/uri.ts'
import { finishAttempt, lockClaimedJob } from './compile-attempts-store.ts'
import type { PublishedPage } from './compile-jobs-store.ts'
import { recordedSourcesOf, recordLayerSources } from './layer-freshness.ts'
import { abstractPage, overviewPage, summaryFromPage, summaryPage } from './compile-prompts.ts'
import type { CompileSnapshot } from './compile-snapshot.ts'

export const SUMMARIES_DIR = 'summaries'
export const OVERVIEW_FILE = '.overview.md'
export const ABSTRACT_FILE = '.abstract.md'
const MARKDOWN = 'text/markdown'

export interface AttemptClaim {
  readonly jobId: string
  readonly queueJobId: string
  /** 1-based attempt of the queue job (pg-boss retryCount + 1). */
  readonly attempt: number
}

/** A file's summary page name, before collisions (summaryNames): its name with ".md" (unless it has it already). */
export function summaryFileName(sourceName: string): string {
  return /\.md$/i.test(sourceName) ? sourceName : `${sourceName}.md`
}

/** A source's summary page names in the order they are tried: `<name>.md`, `<name>.summary.md`, `<name>.2.summary.md`… */
export function* summaryNameCandidates(sourceName: string): Generator<string, never> {
  yield summaryFileName(sourceName)
  yield `${sourceName}.summary.md`
  for (let n = 2; ; n++) yield `${sourceName}.${n}.summary.md`
}

export const failure = (code: string, message: string, retryable: boolean): ActorFailure => ({ ok: false, code, message, retryable })

/** The summary pages already in the artifact directory's `summaries/`: name → whose page it is. */
async function publishedSummaries(db: Db, owner: Owner, parentSegments: ReadonlyArray<string>) {
  const directory = await findNode(db, owner, [...parentSegments, SUMMARIES_DIR])
  if (!directory || directory.kind !== 'directory') return new Map<string, PublishedSummary>()
  const rows = await db
    .selectFrom('nodes')
    .select(['id', 'name', 'kind', 'generated', 'generated_from'])
    .where('owner_id', '=', owner.id)
    .where('parent_id', '=', directory.id)
    .execute()
  return new Map(rows.map((row) => [row.name, { id: row.id, file: row.kind === 'file', generated: row.generated, source: row.generated_from }]))
}

interface PublishedSummary {
  readonly id: string
  readonly file: boolean
  readonly generated: GeneratedKind | null
  /** The source file's node id; null for a page written before it was kept. */
  readonly source: string | null
}

/**
 * Summaries already published in the artifact directory for files outside this batch, citing
 * each source where it is now; a page whose source was deleted since is left out (an overview
 * never cites a file that is gone), and so is another page of a file in this batch.
 */
export async function earlierSummaries({ db, owner, parentSegments, except }: { db: Db; owner: Owner; parentSegments: ReadonlyArray<string>; except: ReadonlyArray<FileSummary> }) {
  const published = await publishedSummaries(db, owner, parentSegments)
  const ours = new Set(except.map((summary) => summary.nodeId))
  const oursByName = new Set(summaryNames(except, published).values())
  const pages = [...published.entries()].filter(
    ([name, page]) => page.file && page.generated === 'summary' && !oursByName.has(name) && !(page.source !== null && ours.has(page.source)),
  )
  if (pages.length === 0) return []
  const sourceIds = pages.flatMap(([, page]) => (page.source === null ? [] : [page.source]))
  const sources = new Map(
    sourceIds.length === 0
      ? []
      : (await db.selectFrom('nodes').select(['id', 'path']).where('owner_id', '=', owner.id).where('id', 'in', sourceIds).execute()).map((row) => [row.id, row.path] as const),
  )
  const texts = await readCurrentBodies(db, owner, pages.map(([, page]) => page))
  const earlier: Array<{ name: string; uri: string; summary: string }> = []
  for (const [name, page] of pages) {
    const text = texts.get(page.id)
    if (!text) continue
    if (page.source !== null) {
      const path = sources.get(page.source)
      if (path === undefined) continue // its source was deleted since
      const segments = pathToSegments(path)
      earlier.push({ name: segments.at(-1)!, uri: formatKbUri({ login: owner.login, segments, directory: false }), summary: summaryFromPage(text) })
    } else {
      const cited = /^Source: (\S+)$/m.exec(text)?.[1] // a page written before sources were kept
      if (cited !== undefined) earlier.push({ name: name.replace(/\.md$/i, ''), uri: cited, summary: summaryFromPage(text) })
    }
  }
  return earlier
}

/**
 * Each summary's page name in `summaries/`: its name with ".md", or — when that name is this
 * batch's already, or another source's page — `<name>.summary.md`, then `<name>.2.summary.md`…
 * A page is this source's when it records this source (or, written before sources were kept,
 * records none); a person's own file keeps its name (publishing refuses it: `artifact_conflict`).
 */
export function summaryNames(summaries: ReadonlyArray<Pick<FileSummary, 'nodeId' | 'name'>>, published: ReadonlyMap<string, PublishedSummary> = new Map()): Map<string, string> {
  const taken = new Set<string>()
  const names = new Map<string, string>()
  for (const summary of summaries) {
    for (const name of summaryNameCandidates(summary.name)) {
      if (taken.has(name)) continue
      const page = published.get(name)
      if (page && page.generated !== null && page.source !== null && page.source !== summary.nodeId) continue
      taken.add(name)
      names.set(summary.nodeId, name)
      break
    }
  }
  return names
}

interface PlannedPage {
  readonly segments: ReadonlyArray<string>
  readonly text: string
  readonly kind: GeneratedKind
  /** A summary's source file (node id). */
  readonly source?: string
}

/**
 * Where the pages go and what they cite, as the tree is now (read in the publishing transaction,
 * under the owner's tree lock): the artifact directory by its node id, the sources by theirs. A
 * directory or a source deleted while the job ran fails the job — its pages are never written
 * (a deleted folder is not made again, a deleted file's text is not published); one moved or
 * renamed is followed to where it is now.
 */
async function currentPlace(
  trx: Db,
  { owner, snapshot, summaries }: { owner: Owner; snapshot: CompileSnapshot; summaries: ReadonlyArray<FileSummary> },
): Promise<{ ok: true; parent: ReadonlyArray<string>; parentUri: string; summaries: ReadonlyArray<FileSummary> } | ActorFailure> {
  const gone = (uri: string) => failure('deleted_while_running', `${uri} was deleted while the job ran; nothing was published`, false)
  const { id, uri, path } = snapshot.artifactParent
  const parentRow = id
    ? await trx.selectFrom('nodes').select(['path', 'kind']).where('owner_id', '=', owner.id).where('id', '=', id).executeTakeFirst()
    : await trx.selectFrom('nodes').select(['path', 'kind']).where('owner_id', '=', owner.id).where('path', '=', path).executeTakeFirst() // a job queued before ids were kept
  if (!parentRow || parentRow.kind !== 'directory') return gone(uri)
  const ids = [...new Set(summaries.map((summary) => summary.nodeId))]
  const sources = new Map(
    ids.length === 0
      ? []
      : (await trx.selectFrom('nodes').select(['id', 'path']).where('owner_id', '=', owner.id).where('id', 'in', ids).execute()).map((row) => [row.id, row.path] as const),
  )
  const missing = summaries.find((summary) => !sources.has(summary.nodeId))
  if (missing) return gone(missing.uri)
  const parent = pathToSegments(parentRow.path)
  return {
    ok: true,
    parent,
    parentUri: formatKbUri({ login: owner.login, segments: parent, directory: true }),
    summaries: summaries.map((summary) => ({ ...summary, uri: formatKbUri({ login: owner.login, segments: pathToSegments(sources.get(summary.nodeId)!), directory: false }) })),
  }
}

/** The pages of a job: a summary per file, the overview (L1) and the abstract (L0) of `parent`. */
function plannedPages({
  owner,
  parent,
  parentUri,
  summaries: fileSummaries,
  input,
  engine,
  published,
}: {
  owner: Owner
  parent: ReadonlyArray<string>
  parentUri: string
  summaries: ReadonlyArray<FileSummary>
  input: PublishInput
  engine: string
  published: ReadonlyMap<string, PublishedSummary>
}): PlannedPage[] {
  const uriOf = (segments: ReadonlyArray<string>) => formatKbUri({ login: owner.login, segments, directory: false })
  const names = summaryNames(fileSummaries, published)
  const summaries = fileSummaries.map((summary) => ({ ...summary, segments: [...parent, SUMMARIES_DIR, names.get(summary.nodeId)!] }))
  const overviewSegments = [...parent, OVERVIEW_FILE]
  return [
    ...summaries.map((summary) => ({ segments: summary.segments, kind: 'summary' as const, source: summary.nodeId, text: summaryPage({ name: summary.name, uri: summary.uri, summary: summary.summary, engine }) })),
    {
      segments: overviewSegments,
      kind: 'overview',
      text: overviewPage({
        directoryName: parent.at(-1) ?? owner.login,
        directoryUri: parentUri,
        overview: input.overview,
        sources: summaries.map((summary) => ({ name: summary.name, uri: summary.uri, summaryUri: uriOf(summary.segments) })),
        engine,
      }),
    },
    { segments: [...parent, ABSTRACT_FILE], kind: 'abstract', text: abstractPage({ directoryName: parent.at(-1) ?? owner.login, overviewUri: uriOf(overviewSegments), abstract: input.abstract, engine }) },
  ]
}

/** Which of these node ids are `owner`'s nodes now (a source deleted since an earlier summary was written is left out). */
async function existingNodes(trx: Db, owner: Owner, ids: ReadonlyArray<string>): Promise<string[]> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return []
  return (await trx.selectFrom('nodes').select('id').where('owner_id', '=', owner.id).where('id', 'in', unique).execute()).map((row) => row.id)
}

/** Every page as a new version (unchanged text ⇒ no new version) and the job's success, in one transaction. */
export async function publishArtifacts({
  db,
  owner,
  claim,
  snapshot,
  input,
  engine,
}: {
  db: Kysely<DB>
  owner: Owner
  claim: AttemptClaim
  snapshot: CompileSnapshot
  input: PublishInput
  engine: string
}): Promise<PublishOutput> {
  return db.transaction().execute(async (trx) => {
    await shareTree(trx, owner.id) // first (tree-lock.ts): no move or delete runs until the pages are in
    const job = await lockClaimedJob(trx, claim)
    if (!job || job.status !== 'running') return failure('cancelled', 'the job was cancelled before it was published', false)
    const place = await currentPlace(trx, { owner, snapshot, summaries: input.summaries })
    if (!place.ok) return place
    const published = await publishedSummaries(trx, owner, place.parent)
    const pages = plannedPages({ owner, parent: place.parent, parentUri: place.parentUri, summaries: place.summaries, input, engine, published })
    for (const page of pages) {
      const existing = await findNode(trx, owner, page.segments)
      if (existing) {
        const row = await trx.selectFrom('nodes').select('generated').where('id', '=', existing.id).executeTakeFirstOrThrow()
        if (row.generated === null) {
          return failure('artifact_conflict', `${existing.uri} is one of your own files; move it or choose another artifact parent directory`, false)
        }
      }
    }
    const artifacts: string[] = []
    const publishedPages: PublishedPage[] = []
    const summaryPages: string[] = []
    for (const page of pages) {
      const bytes = new TextEncoder().encode(page.text)
      const { node } = await putFileInTransaction(trx, { owner, segments: page.segments, bytes, parsed: { ok: true, mime: MARKDOWN, text: page.text }, origin: 'compile' })
      await trx.updateTable('nodes').set({ generated: page.kind, generated_from: page.source ?? null }).where('id', '=', node.id).execute()
      // What each page was built from (layer-freshness.ts): a summary its source; the overview and
      // abstract every source summarised in the folder's summaries/ now, earlier jobs' included.
      if (page.kind === 'summary') {
        await recordLayerSources(trx, { pageId: node.id, sourceIds: page.source === undefined ? [] : [page.source] })
        summaryPages.push(node.id)
      } else {
        const earlier = [...published.values()].filter((entry) => entry.file && entry.generated === 'summary').map((entry) => entry.id)
        const sourceIds = [...(await recordedSourcesOf(trx, [...earlier, ...summaryPages])), ...place.summaries.map((summary) => summary.nodeId)]
        await recordLayerSources(trx, { pageId: node.id, sourceIds: await existingNodes(trx, owner, sourceIds) })
      }
      artifacts.push(node.uri)
      publishedPages.push({ id: node.id, uri: node.uri, kind: page.kind })
    }
    const output: CompileJobOutput = { status: 'succeeded', progress: input.progress, artifacts, skipped: input.skipped }
    if (!(await finishAttempt(trx, { ...claim, output, pages: publishedPages }))) return failure('cancelled', 'the job was cancelled before it was published', false)
    return { ok: true as const, artifacts }
  })
}
