// `kb_search {query, agent_id, top_k?}`: passages from a Bailian retrieval service (SPEC §9). The
// description is static: which services exist reaches the model as the `retrieval-catalog`
// context block, never here (a changing description would also break the provider's prompt cache).
import * as Schema from 'effect/Schema'
import { defineTool, type ToolDefinition } from '../tools/tool-definition.ts'
import { DEFAULT_TOP_K, type KnowledgeCalls, type KnowledgeSearchResult, MAX_TOP_K } from './knowledge-calls.ts'

export const AGENT_ID_DESCRIPTION =
  'Id of a deployed service, taken from the list of retrieval services in the context (the group for this tool). ' +
  'Required; ids cannot be guessed. If no listed service covers the question, say so instead of calling.'

export const KbSearchArgs = Schema.Struct({
  query: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4_000)).annotate({ description: 'What to search for' }),
  agent_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)).annotate({ description: AGENT_ID_DESCRIPTION }),
  top_k: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TOP_K })).annotate({ description: `How many passages to return, best first (default ${DEFAULT_TOP_K})` }),
  ),
})

export function makeKbSearchTool({ calls }: { readonly calls: KnowledgeCalls }): ToolDefinition<typeof KbSearchArgs.Type, KnowledgeSearchResult> {
  return defineTool({
    name: 'kb_search',
    description:
      'Semantic search in a Bailian knowledge base (Alibaba Cloud Model Studio). Returns the best-matching passages with scores ' +
      'and source document names, for you to read, verify and cite. Which knowledge bases are searched, and how results are ranked, ' +
      'is set in the service itself. Use kb_chat instead when the knowledge base alone can answer and a finished answer is enough.',
    args: KbSearchArgs,
    run: (args, context) => calls.search({ caller: context.caller, query: args.query, agentId: args.agent_id, topK: args.top_k }),
    summarise: (result) =>
      result.chunks.length === 0
        ? `no passage found by ${result.agent_id}`
        : `${result.chunks.length} passage${result.chunks.length === 1 ? '' : 's'} from ${result.agent_id}` +
          (result.chunks[0]?.doc_name ? ` (best: ${result.chunks[0].doc_name})` : ''),
  })
}
