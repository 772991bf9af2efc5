// `kb_chat {question, agent_id}`: a finished, grounded answer from a Bailian Q&A service (SPEC §9).
// It streams its progress into the tool card while the service works — the retrieval steps, then
// the answer as it is generated — instead of leaving the card silent for minutes.
import * as Schema from 'effect/Schema'
import { defineTool, type ToolDefinition } from '../tools/tool-definition.ts'
import type { BailianChatEvent } from './bailian-chat-stream.ts'
import { AGENT_ID_DESCRIPTION } from './kb-search.tool.ts'
import type { KnowledgeAnswer, KnowledgeCalls } from './knowledge-calls.ts'

export const KbChatArgs = Schema.Struct({
  question: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8_000)).annotate({ description: 'The question, in full' }),
  agent_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)).annotate({ description: AGENT_ID_DESCRIPTION }),
})

/** The service's steps (tool_calling → tool_return → plan_start → planning → plan_end → generation_start → generating → generation_end), grouped into what a person follows. */
const PHASES: Record<string, { readonly phase: string; readonly text: string }> = {
  tool_calling: { phase: 'search', text: 'Searching the knowledge base…' },
  tool_return: { phase: 'search', text: 'Searching the knowledge base…' },
  retrieving: { phase: 'search', text: 'Searching the knowledge base…' },
  plan_start: { phase: 'plan', text: 'Planning…' },
  planning: { phase: 'plan', text: 'Planning…' },
  plan_end: { phase: 'plan', text: 'Planning…' },
  generation_start: { phase: 'answer', text: 'Writing the answer:' },
  generating: { phase: 'answer', text: 'Writing the answer:' },
  generation_end: { phase: 'answer', text: 'Writing the answer:' },
}

/**
 * Progress text for the tool card, appended piece by piece: a line whenever the service moves to
 * another phase (searching, planning, answering), then the answer text as it is generated.
 */
export function createChatProgress(): (event: BailianChatEvent) => string | undefined {
  let phase: string | undefined
  return (event) => {
    if (event.type === 'progress') return undefined
    if (event.type === 'answer') {
      if (phase === 'answer') return event.text
      phase = 'answer'
      return `${PHASES['generating']!.text}\n${event.text}`
    }
    const known = PHASES[event.step]
    const next = known?.phase ?? `step:${event.step}`
    if (next === phase) return undefined
    phase = next
    return `${known?.text ?? `Step: ${event.step.replace(/[\u0000-\u001f]/g, ' ').slice(0, 40)}`}\n`
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
    run: (args, context) => {
      const progressOf = createChatProgress()
      return calls.ask({
        caller: context.caller,
        question: args.question,
        agentId: args.agent_id,
        onEvent: (event) => {
          const text = progressOf(event)
          if (text !== undefined) context.progress(text)
        },
      })
    },
    summarise: (result) => {
      const answer = result.answer.replace(/\s+/g, ' ').trim()
      return answer === '' ? `empty answer from ${result.agent_id}` : `answer from ${result.agent_id}: ${Array.from(answer).slice(0, 100).join('')}${Array.from(answer).length > 100 ? '…' : ''}`
    },
  })
}
