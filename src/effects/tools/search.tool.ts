// `search {query, uri?, offset?}`: scans at most 40 visible files per call in a stable order and
// says whether the scan was complete; never claims a bounded scan is exhaustive (SPEC §4).
// Compiled pages are a layer, not peers (layer-pages.ts): not counted as files, ranked after them.
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { listFilesUnder } from '../workspace/folder-listing.ts'
import { layerPagesApart, summariesOf } from '../workspace/layer-pages.ts'
import { currentBodySizes, readCurrentBodies } from '../workspace/file-contents.ts'
import { indexedMatchesAhead } from '../workspace/search-index.ts'
import { findAll, snippetAround } from '../workspace/text-paging.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { searchTerms } from './search-terms.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool, ToolError } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import { SEARCH_FILES_PER_PAGE, type SearchHit, type SearchResult } from './tool-types.ts'
import { plural } from '../plural.ts'

export const SearchArgs = Schema.Struct({
  query: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)).annotate({ description: 'words or a phrase' }),
  uri: Schema.optionalKey(ToolUri.annotate({ description: 'kb:// URI of a directory or file in scope; defaults to the selected node' })),
  offset: Schema.optionalKey(ToolOffset.annotate({ description: 'file offset from a previous next_offset' })),
})

/** Body bytes (UTF-8) one call scans at most: a page ends before the file that would pass it (a first file alone may). */
export const SEARCH_SCAN_BYTES = 16 * 1024 * 1024
/** Body bytes read in one statement at most (a larger body alone). */
const READ_BATCH_BYTES = 4 * 1024 * 1024

/** `files` in order, cut into runs whose bodies total at most READ_BATCH_BYTES (a larger one alone). */
function batchesOf<F extends { readonly id: string }>(files: ReadonlyArray<F>, sizes: ReadonlyMap<string, number>): F[][] {
  const batches: F[][] = []
  let current: F[] = []
  let bytes = 0
  for (const file of files) {
    const size = sizes.get(file.id) ?? 0
    if (current.length > 0 && bytes + size > READ_BATCH_BYTES) {
      batches.push(current)
      current = []
      bytes = 0
    }
    current.push(file)
    bytes += size
  }
  if (current.length > 0) batches.push(current)
  return batches
}

const HITS_PER_FILE = 3
const MAX_HITS = 30
const HIT_SPACING = 120
/** Overviews, abstracts and summaries apart from the sources scanned on a search's last page, at most. */
export const SEARCH_LAYER_PAGES_APART = 80
/** Later files the search index points to when a scan stops short of the scope, at most. */
export const SEARCH_MATCHES_AHEAD = 5

type SearchOutput = SearchResult & { readonly note?: string }
type ScoredHit = SearchHit & { score: number; order: number }

function hitsInFile({ uri, body, terms, order }: { uri: string; body: string; terms: ReadonlyArray<string>; order: number }) {
  const matched = terms
    .map((term) => ({ term, offsets: findAll({ text: body, query: term, limit: HITS_PER_FILE }) }))
    .filter((match) => match.offsets.length > 0)
  if (matched.length === 0) return []
  const phraseHit = matched[0]?.term === terms[0]
  const score = matched.length + (phraseHit ? terms.length : 0)
  const seen: number[] = []
  const hits: ScoredHit[] = []
  for (const { term, offsets } of matched) {
    for (const at of offsets) {
      if (seen.some((s) => Math.abs(s - at) < HIT_SPACING)) continue
      seen.push(at)
      if (seen.length > HITS_PER_FILE) return hits
      const snippet = snippetAround({ text: body, offset: at, length: [...term].length, radius: 100 }).replace(/\s+/g, ' ').trim()
      hits.push({ uri, offset: at, snippet, score, order })
    }
  }
  return hits
}

/**
 * The hits to report, sources first (SPEC §8, docs/compile.md): every hit of the sources, best
 * first; then one hit per generated page, marked with what it is a layer of — a summary only
 * when its source had no hit of its own, and one summary per source.
 */
export function rankWithLayers({ sourceHits, layerHits }: { sourceHits: ReadonlyArray<ScoredHit>; layerHits: ReadonlyArray<ScoredHit & { readonly sourceId: string | null }> }): SearchHit[] {
  const rank = (a: ScoredHit, b: ScoredHit) => b.score - a.score || a.order - b.order || a.offset - b.offset
  const sources = [...sourceHits].sort(rank)
  const hitSources = new Set(sourceHits.map((hit) => hit.uri))
  const covered = new Set<string>()
  const pages = new Set<string>()
  const layers: ScoredHit[] = []
  for (const hit of [...layerHits].sort(rank)) {
    if (pages.has(hit.uri)) continue // one hit per page
    if (hit.layer?.kind === 'summary' && hit.layer.of !== null) {
      if (hitSources.has(hit.layer.of) || covered.has(hit.layer.of)) continue // the source's own hit wins; one summary per source
      covered.add(hit.layer.of)
    }
    pages.add(hit.uri)
    layers.push(hit)
  }
  return [...sources, ...layers].slice(0, MAX_HITS).map(({ uri, offset, snippet, layer }) => (layer === undefined ? { uri, offset, snippet } : { uri, offset, snippet, layer }))
}

function scanNote({ offset, scanned, nextOffset, layersLeft, ahead }: { offset: number; scanned: number; nextOffset: number | null; layersLeft: boolean; ahead: ReadonlyArray<{ readonly uri: string; readonly offset: number }> }): { note?: string } {
  const left = layersLeft ? `; only the first ${SEARCH_LAYER_PAGES_APART} overviews and abstracts were scanned` : ''
  if (nextOffset !== null) {
    const jump = ahead[0] === undefined ? '' : `; the search index has every word in later files (matches_ahead), the first at offset=${ahead[0].offset}: ${ahead[0].uri}`
    return { note: `scanned files ${offset + 1}–${offset + scanned} only; call search again with offset=${nextOffset} to continue${jump}` }
  }
  if (offset > 0) return { note: `scanned files ${offset + 1}–${offset + scanned}, the last page; earlier pages were scanned by earlier calls${left}` }
  return left === '' ? {} : { note: left.slice(2) }
}

export const searchTool = defineTool({
  name: 'search',
  description: `Case-insensitive text search over files in scope. Scans at most ${SEARCH_FILES_PER_PAGE} files per call (fewer when they are large) in a stable order; "complete" says whether the whole scope was scanned. If not, call again with offset=next_offset; "matches_ahead" then lists later files whose indexed text has every word, each with the offset that scans it. Hits in compiled pages (summaries, overviews, abstracts) come last, marked "layer" with the source or folder they summarise.`,
  args: SearchArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const terms = searchTerms(args.query)
      if (terms.length === 0) return yield* ToolError.invalidArguments('the query has no searchable words')
      const { node } = yield* resolveToolTarget(context, args.uri)
      const offset = args.offset ?? 0
      // Paging and files_scanned count a person's own files; the compiled pages are scanned with them
      // (a source's summaries with the source, the rest on the last page) and ranked after them.
      const files = yield* tryWorkspace(() =>
        listFilesUnder(context.db, { owner: context.caller, scope: node, offset, limit: SEARCH_FILES_PER_PAGE + 1, sourcesOnly: true }),
      )
      const candidates = files.slice(0, SEARCH_FILES_PER_PAGE)
      // Bodies are read a few megabytes at a time and scanned one file at a time, letting other
      // turns' streams run in between; past SEARCH_SCAN_BYTES the page ends early (honestly: the
      // next call goes on from there). Forty 5,000,000-character bodies were read at once before.
      const sizes = candidates.length > 0 ? yield* tryWorkspace(() => currentBodySizes(context.db, context.caller, candidates)) : new Map<string, number>()
      const page: typeof candidates = []
      let scannedBytes = 0
      for (const file of candidates) {
        const size = sizes.get(file.id) ?? 0
        if (page.length > 0 && scannedBytes + size > SEARCH_SCAN_BYTES) break
        page.push(file)
        scannedBytes += size
      }
      const nextOffset = files.length > page.length ? offset + page.length : null
      // A scan that stops short says where the index finds the words further on, so a large scope
      // is not read forty files at a time to find them (the scan of that offset confirms them).
      const ahead =
        nextOffset === null
          ? []
          : yield* tryWorkspace(() => indexedMatchesAhead(context.db, { owner: context.caller, scope: node, query: args.query, fromOffset: nextOffset, limit: SEARCH_MATCHES_AHEAD }))
      const sourceHits: ScoredHit[] = []
      let order = 0
      for (const batch of batchesOf(page, sizes)) {
        const bodies = yield* tryWorkspace(() => readCurrentBodies(context.db, context.caller, batch))
        for (const file of batch) {
          const body = bodies.get(file.id)
          if (body) sourceHits.push(...hitsInFile({ uri: file.uri, body, terms, order }))
          order += 1
          bodies.delete(file.id)
          yield* Effect.yieldNow
        }
      }
      const summaries = yield* tryWorkspace(() => summariesOf(context.db, { owner: context.caller, scope: node, sourceIds: page.map((file) => file.id) }))
      const apart = nextOffset === null ? yield* tryWorkspace(() => layerPagesApart(context.db, { owner: context.caller, scope: node, limit: SEARCH_LAYER_PAGES_APART + 1 })) : []
      const layerPages = [...summaries, ...apart.slice(0, SEARCH_LAYER_PAGES_APART)]
      const layerSizes = layerPages.length > 0 ? yield* tryWorkspace(() => currentBodySizes(context.db, context.caller, layerPages)) : new Map<string, number>()
      const layerHits: Array<ScoredHit & { sourceId: string | null }> = []
      for (const batch of batchesOf(layerPages, layerSizes)) {
        const bodies = yield* tryWorkspace(() => readCurrentBodies(context.db, context.caller, batch))
        for (const layerPage of batch) {
          const body = bodies.get(layerPage.id)
          const layer = { kind: layerPage.kind, of: layerPage.of }
          if (body) layerHits.push(...hitsInFile({ uri: layerPage.uri, body, terms, order }).map((hit) => ({ ...hit, layer, sourceId: layerPage.sourceId })))
          order += 1
          yield* Effect.yieldNow
        }
      }
      return {
        query: args.query,
        uri: node.uri,
        hits: rankWithLayers({ sourceHits, layerHits }),
        files_scanned: page.length,
        layer_pages_scanned: layerPages.length,
        offset,
        next_offset: nextOffset,
        complete: offset === 0 && nextOffset === null,
        ...(ahead.length > 0 ? { matches_ahead: ahead } : {}),
        ...scanNote({ offset, scanned: page.length, nextOffset, layersLeft: apart.length > SEARCH_LAYER_PAGES_APART, ahead }),
      } satisfies SearchOutput
    }),
  summarise: (result: SearchOutput) => {
    const pages = result.layer_pages_scanned > 0 ? ` (and ${plural(result.layer_pages_scanned, 'compiled page')})` : ''
    return `${plural(result.hits.length, 'hit')} in ${plural(result.files_scanned, 'file')}${pages}${result.complete ? '' : ' (scan not complete)'}`
  },
})
