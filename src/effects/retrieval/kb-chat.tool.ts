// `kb_chat {question, agent_id}`: a finished, grounded answer from a Bailian Q&A service (SPEC §9).
// It streams its progress into the tool card while the service works — the retrieval steps, then
// the answer as it is generated — instead of leaving the card silent for minutes.
import { Schema } from 'effect'
import { defineTool, type ToolDefinition } from '../tools/tool-definition.ts'
import type { BailianChatEvent } from './bailian-chat-stream.ts'
import { AGENT_ID_DESCRIPTION } from './kb-search.tool.ts'
import type { KnowledgeAnswer, KnowledgeCalls } from './knowledge-calls.ts'

export const KbChatArgs = Schema.Struct({
  question: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8_000)).annotate({ description: 'The question, in full' }),
  agent_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)).annotate({ description: AGENT_ID_DESCRIPTION }),
})

const STEP_TEXT: Record<string, string> = {
  planning: 'Planning the retrieval…',
  tool_calling: 'Searching the knowledge base…',
  retrieving: 'Searching the knowledge base…',
  reranking: 'Ranking the passages…',
  generating: 'Writing the answer:',
}

/** Progress text for the tool card, appended piece by piece: a line per step, then the answer text. */
export function chatProgressText(event: BailianChatEvent): string | undefined {
  switch (event.type) {
    case 'step':
      return `${STEP_TEXT[event.step] ?? `Step: ${event.step.replace(/[\u0000-\u001f]/g, ' ').slice(0, 40)}`}\n`
    case 'answer':
      return event.text
    case 'progress':
      return undefined
  }
}

export function makeKbChatTool({ calls }: { readonly calls: KnowledgeCalls }): ToolDefinition<typeof KbChatArgs.Type, KnowledgeAnswer> {
  return defineTool({
    name: 'kb_chat',
    description:
      'Ask a Bailian knowledge base directly and get a finished answer grounded in it, from its own pipeline ' +
      '(several rounds of retrieval, reranking, then generation); it can take a few minutes. ' +
      'Use kb_search instead when you need the passages themselves to verify, cite or combine with other material.',
    args: KbChatArgs,
    run: (args, context) =>
      calls.ask({
        caller: context.caller,
        question: args.question,
        agentId: args.agent_id,
        onEvent: (event) => {
          const text = chatProgressText(event)
          if (text !== undefined) context.progress(text)
        },
      }),
    summarise: (result) => {
      const answer = result.answer.replace(/\s+/g, ' ').trim()
      return answer === '' ? `empty answer from ${result.agent_id}` : `answer from ${result.agent_id}: ${Array.from(answer).slice(0, 100).join('')}${Array.from(answer).length > 100 ? '…' : ''}`
    },
  })
}
