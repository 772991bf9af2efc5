// `search {query, uri?, offset?}`: scans at most 40 visible files per call in a stable order and
// says whether the scan was complete; never claims a bounded scan is exhaustive (SPEC §4).
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { listFilesUnder, readCurrentBodies } from '../workspace/store.ts'
import { findAll, snippetAround } from '../workspace/text-paging.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { searchTerms } from './search-terms.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool, ToolError } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import { SEARCH_FILES_PER_PAGE, type SearchHit, type SearchResult } from './tool-types.ts'

export const SearchArgs = Schema.Struct({
  query: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)).annotate({ description: 'words or a phrase' }),
  uri: Schema.optionalKey(ToolUri.annotate({ description: 'kb:// URI of a directory or file in scope; defaults to the selected node' })),
  offset: Schema.optionalKey(ToolOffset.annotate({ description: 'file offset from a previous next_offset' })),
})

const HITS_PER_FILE = 3
const MAX_HITS = 30
const HIT_SPACING = 120

type SearchOutput = SearchResult & { readonly note?: string }

function hitsInFile({ uri, body, terms, order }: { uri: string; body: string; terms: ReadonlyArray<string>; order: number }) {
  const matched = terms
    .map((term) => ({ term, offsets: findAll({ text: body, query: term, limit: HITS_PER_FILE }) }))
    .filter((match) => match.offsets.length > 0)
  if (matched.length === 0) return []
  const phraseHit = matched[0]?.term === terms[0]
  const score = matched.length + (phraseHit ? terms.length : 0)
  const seen: number[] = []
  const hits: Array<SearchHit & { score: number; order: number }> = []
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

function scanNote({ offset, scanned, nextOffset }: { offset: number; scanned: number; nextOffset: number | null }): { note?: string } {
  if (nextOffset !== null) return { note: `scanned files ${offset + 1}–${offset + scanned} only; call search again with offset=${nextOffset} to continue` }
  if (offset > 0) return { note: `scanned files ${offset + 1}–${offset + scanned}, the last page; earlier pages were scanned by earlier calls` }
  return {}
}

export const searchTool = defineTool({
  name: 'search',
  description: `Case-insensitive text search over files in scope. Scans at most ${SEARCH_FILES_PER_PAGE} files per call in a stable order; "complete" says whether the whole scope was scanned. If not, call again with offset=next_offset.`,
  args: SearchArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const terms = searchTerms(args.query)
      if (terms.length === 0) return yield* ToolError.invalidArguments('the query has no searchable words')
      const { node } = yield* resolveToolTarget(context, args.uri)
      const offset = args.offset ?? 0
      const files = yield* tryWorkspace(() =>
        listFilesUnder(context.db, { owner: context.caller, scope: node, offset, limit: SEARCH_FILES_PER_PAGE + 1 }),
      )
      const page = files.slice(0, SEARCH_FILES_PER_PAGE)
      const bodies = page.length > 0 ? yield* tryWorkspace(() => readCurrentBodies(context.db, context.caller, page)) : new Map<string, string | null>()
      const scored = page.flatMap((file, order) => {
        const body = bodies.get(file.id)
        return body ? hitsInFile({ uri: file.uri, body, terms, order }) : []
      })
      scored.sort((a, b) => b.score - a.score || a.order - b.order || a.offset - b.offset)
      const nextOffset = files.length > SEARCH_FILES_PER_PAGE ? offset + page.length : null
      return {
        query: args.query,
        uri: node.uri,
        hits: scored.slice(0, MAX_HITS).map(({ uri, offset: at, snippet }) => ({ uri, offset: at, snippet })),
        files_scanned: page.length,
        offset,
        next_offset: nextOffset,
        complete: offset === 0 && nextOffset === null,
        ...scanNote({ offset, scanned: page.length, nextOffset }),
      } satisfies SearchOutput
    }),
  summarise: (result: SearchOutput) => `${result.hits.length} hits in ${result.files_scanned} files${result.complete ? '' : ' (scan not complete)'}`,
})
