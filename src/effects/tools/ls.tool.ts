// `ls {uri?, offset?, limit?}`: the real direct children of a directory in scope (SPEC §4).
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { type WorkspaceNode } from '../workspace/store.ts'
import { listChildren, listingAtPath } from '../workspace/folder-listing.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool } from './tool-definition.ts'
import { resolveToolTarget, targetWithinScope } from './tool-scope.ts'
import { type LayerPageInfo, LS_ABSTRACT_MAX_CHARS, type LsAbstract, type LsEntry, type LsResult } from './tool-types.ts'
import { describeChanges, folderLayers, isStale, type PageFreshness } from '../compile/layer-freshness.ts'
import { readCurrentBodies } from '../workspace/file-contents.ts'
import { sliceCodePoints } from '../workspace/text-paging.ts'
import type { ToolContext } from './tool-definition.ts'

export const LS_DEFAULT_LIMIT = 50
export const LS_MAX_LIMIT = 200

export const LsArgs = Schema.Struct({
  uri: Schema.optionalKey(ToolUri.annotate({ description: 'kb:// URI of a directory in scope; defaults to the selected node' })),
  offset: Schema.optionalKey(ToolOffset),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: LS_MAX_LIMIT })).annotate({ description: `default ${LS_DEFAULT_LIMIT}` }),
  ),
})

const describe = (node: WorkspaceNode): LsEntry => ({ name: node.name, kind: node.kind, uri: node.uri, size: node.size, updated: node.updatedAt.toISOString() })

/** A compiled page's place and freshness, as the tools report it (layer-freshness.ts is the rule). */
export function layerPageInfo({ uri, freshness }: { uri: string; freshness: PageFreshness | undefined }): LayerPageInfo {
  const stale = freshness !== undefined && isStale(freshness)
  return {
    uri,
    written_at: (freshness?.writtenAt ?? new Date(0)).toISOString(),
    stale,
    ...(stale ? { changes: describeChanges(freshness.changes) } : {}),
  }
}

/** The folder's abstract (bounded) and overview, for the first page of its listing. */
function folderLayerFields(context: ToolContext, folder: WorkspaceNode) {
  return tryWorkspace(async (): Promise<{ abstract?: LsAbstract; overview?: LayerPageInfo }> => {
    const { abstract, overview } = await folderLayers(context.db, context.caller, folder.id)
    const fields: { abstract?: LsAbstract; overview?: LayerPageInfo } = {}
    if (abstract !== undefined) {
      const body = (await readCurrentBodies(context.db, context.caller, [abstract])).get(abstract.id) ?? ''
      const text = sliceCodePoints({ text: body, start: 0, end: LS_ABSTRACT_MAX_CHARS })
      fields.abstract = { ...layerPageInfo(abstract), text, truncated: text.length < body.length }
    }
    if (overview !== undefined) fields.overview = layerPageInfo(overview)
    return fields
  })
}

export const lsTool = defineTool({
  name: 'ls',
  description:
    'List the direct children (name, kind, uri, size, updated) of a directory in the selected scope. Paged: pass next_offset back as offset. A compiled folder\'s first page also carries its abstract (text, with "stale" and what changed) and where its overview is.',
  args: LsArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const offset = args.offset ?? 0
      const limit = args.limit ?? LS_DEFAULT_LIMIT
      // The usual case in one statement: the target (re-read now, as every call does) and its page.
      const { path } = yield* targetWithinScope(context, args.uri)
      const listing = yield* tryWorkspace(() => listingAtPath(context.db, { owner: context.caller, segments: path.segments, offset, limit }))
      const { node } = listing ?? (yield* resolveToolTarget(context, args.uri)) // the exact error, the root made on first use, a page past the end
      if (node.kind === 'file') return { uri: node.uri, entries: [describe(node)], offset: 0, next_offset: null, total: 1 } satisfies LsResult
      const page = listing?.page ?? (yield* tryWorkspace(() => listChildren(context.db, { owner: context.caller, parent: node, offset, limit })))
      const end = offset + page.entries.length
      const layers = offset === 0 && (listing === undefined || listing.hasLayers) ? yield* folderLayerFields(context, node) : {}
      return { uri: node.uri, entries: page.entries.map(describe), offset, next_offset: end < page.total ? end : null, total: page.total, ...layers } satisfies LsResult
    }),
  summarise: (result: LsResult) =>
    `${result.entries.length} of ${result.total} entries in ${result.uri}${result.abstract ? `; abstract${result.abstract.stale ? ' (stale)' : ''}` : ''}`,
})
