// `ls {uri?, offset?, limit?}`: the real direct children of a directory in scope (SPEC §4).
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { listChildren, type WorkspaceNode } from '../workspace/store.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import type { LsEntry, LsResult } from './tool-types.ts'

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

export const lsTool = defineTool({
  name: 'ls',
  description:
    'List the direct children (name, kind, uri, size, updated) of a directory in the selected scope. Paged: pass next_offset back as offset.',
  args: LsArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const { node } = yield* resolveToolTarget(context, args.uri)
      if (node.kind === 'file') return { uri: node.uri, entries: [describe(node)], offset: 0, next_offset: null, total: 1 } satisfies LsResult
      const offset = args.offset ?? 0
      const page = yield* tryWorkspace(() => listChildren(context.db, { owner: context.caller, parent: node, offset, limit: args.limit ?? LS_DEFAULT_LIMIT }))
      const end = offset + page.entries.length
      return { uri: node.uri, entries: page.entries.map(describe), offset, next_offset: end < page.total ? end : null, total: page.total } satisfies LsResult
    }),
  summarise: (result: LsResult) => `${result.entries.length} of ${result.total} entries in ${result.uri}`,
})
