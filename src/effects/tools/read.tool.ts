// `read {uri, offset?, limit?}`: one page of a file's parsed body, counted in code points (SPEC §4).
import * as Effect from 'effect/Effect'
import * as Schema from 'effect/Schema'
import { readCurrent } from '../workspace/file-contents.ts'
import { describeLayer, layerOfNode } from '../workspace/layer-pages.ts'
import { PAGE_DEFAULT_LIMIT, PAGE_MAX_LIMIT, pageText } from '../workspace/text-paging.ts'
import { tryWorkspace } from '../workspace/workspace-effect.ts'
import { ToolOffset, ToolUri } from './tool-arguments.ts'
import { defineTool, ToolError } from './tool-definition.ts'
import { resolveToolTarget } from './tool-scope.ts'
import type { ReadResult } from './tool-types.ts'

export const ReadArgs = Schema.Struct({
  uri: ToolUri.annotate({ description: 'kb:// URI of a file in scope' }),
  offset: Schema.optionalKey(ToolOffset),
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: PAGE_MAX_LIMIT }))),
})

export const readTool = defineTool({
  name: 'read',
  description: `Read one page of a file's extracted text. offset and limit count Unicode code points (default ${PAGE_DEFAULT_LIMIT}, at most ${PAGE_MAX_LIMIT}). Returns offset, next_offset and total; continue with offset=next_offset.`,
  args: ReadArgs,
  command: true,
  run: (args, context) =>
    Effect.gen(function* () {
      const { node } = yield* resolveToolTarget(context, args.uri)
      if (node.kind !== 'file') {
        return yield* new ToolError({ code: 'is_directory', status: 409, message: `${node.uri} is a directory; use ls to list it` })
      }
      const content = yield* tryWorkspace(() => readCurrent(context.db, context.caller, node))
      // A person's own file (the node's row says so) needs no look-up of what it is a layer of.
      const layerOf = node.generated === null ? undefined : yield* tryWorkspace(() => layerOfNode(context.db, { owner: context.caller, nodeId: node.id }))
      const layer = layerOf === undefined ? {} : { layer: { kind: layerOf.kind, of: layerOf.of } }
      if (content.parseStatus !== 'parsed' || content.body === null) {
        return {
          uri: node.uri, ...layer, offset: 0, next_offset: null, total: 0, text: '', empty: true,
          note: `no text could be extracted from this file: ${content.parseError ?? 'unknown reason'}`,
        } satisfies ReadResult
      }
      const page = pageText({ text: content.body, offset: args.offset ?? 0, limit: args.limit ?? PAGE_DEFAULT_LIMIT })
      if (page.total === 0) {
        return { uri: node.uri, ...layer, offset: 0, next_offset: null, total: 0, text: '', empty: true, note: 'the file is empty' } satisfies ReadResult
      }
      if (page.offset >= page.total) {
        return {
          uri: node.uri, ...layer, ...page, text: '', next_offset: null, past_end: true,
          note: `offset ${page.offset} is past the end of the file: its text is ${page.total} code points (read from an offset below ${page.total})`,
        } satisfies ReadResult
      }
      return { uri: node.uri, ...layer, ...page } satisfies ReadResult
    }),
  summarise: (result: ReadResult) =>
    result.empty || result.past_end
      ? `${result.uri}: ${result.note}`
      : `read ${result.uri} [${result.offset}–${result.next_offset ?? result.total}) of ${result.total}${result.layer ? ` (${describeLayer(result.layer)})` : ''}`,
})
