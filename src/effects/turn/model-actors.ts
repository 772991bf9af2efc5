// The turn's model actors: one chat model behind the machine's `callModel` and `compact`, through
// the one bridge (`fromEffect`). Expected provider failures become `ok: false` outputs with a
// public code; the machine decides what they mean.
import * as Effect from 'effect/Effect'
import { COMPACTION_INSTRUCTION, renderCompactionTranscript } from '../../machines/compaction-plan.ts'
import type { CallModelInput, CallModelOutput, CompactInput, CompactOutput, ModelStreamForwardEvent } from '../../machines/turn-contract.ts'
import { fromEffect } from '../actor-bridge.ts'
import type { ChatModel, ModelError, ModelStreamEvent } from '../llm/model.ts'
import { describeModelError } from '../llm/model-failure.ts'

/** An expected provider failure as `callModel` data (its words: `describeModelError`). */
export function modelErrorToCallOutput(error: ModelError): Extract<CallModelOutput, { ok: false }> {
  const { code, message, partialText } = describeModelError(error)
  return { ok: false, code, message, partialText }
}

function toForwardEvent(event: ModelStreamEvent): ModelStreamForwardEvent {
  return event.type === 'delta' ? { type: 'model.delta', text: event.text } : { type: 'model.thinking', text: event.text }
}

/**
 * Where a model step's deltas go. By default they are sent to the turn actor, which re-emits
 * them (one ordered stream, convenient for embedders). A host may pass a direct sink instead:
 * deltas then skip the machine entirely (no machine step per delta), which is what the
 * knowagent server does on its hot path.
 */
export type ModelStreamSink = (event: ModelStreamEvent) => void

/** One model step: streams deltas to the turn (or a direct sink), provider failures become `ok: false`. */
export function callModelEffect({
  model,
  input,
  streamSink,
}: {
  readonly model: ChatModel
  readonly input: CallModelInput
  readonly streamSink?: ModelStreamSink | undefined
}): Effect.Effect<CallModelOutput> {
  return model
    .stream({
      messages: input.messages,
      tools: input.tools.length > 0 ? input.tools : undefined,
      onEvent: streamSink ?? ((event) => input.parent.send(toForwardEvent(event))),
    })
    .pipe(
      Effect.map((result): CallModelOutput => ({ ok: true, result })),
      Effect.catch((error: ModelError) => Effect.succeed(modelErrorToCallOutput(error))),
    )
}

/** One compaction call: the instruction as system message, the batch as a transcript. */
export function compactEffect({ model, input }: { readonly model: ChatModel; readonly input: CompactInput }): Effect.Effect<CompactOutput> {
  return model
    .stream({
      messages: [
        { role: 'system', content: input.instruction || COMPACTION_INSTRUCTION },
        { role: 'user', content: renderCompactionTranscript(input.messages) },
      ],
    })
    .pipe(
      Effect.map((result): CompactOutput => {
        if (result.finishReason === 'length' || result.finishReason === 'content_filter') {
          return { ok: false, code: 'compaction.incomplete', message: `the summary was cut short (finish_reason ${result.rawFinishReason})` }
        }
        if (result.text.trim() === '') return { ok: false, code: 'compaction.empty', message: 'the summariser returned no text' }
        return { ok: true, summary: result.text, usage: result.usage }
      }),
      Effect.catch((error: ModelError) => {
        const { code, message } = describeModelError(error)
        return Effect.succeed<CompactOutput>({ ok: false, code, message })
      }),
    )
}

/** The `callModel` and `compact` actors of a turn, backed by one chat model. */
export function chatModelTurnActors(model: ChatModel, { streamSink }: { readonly streamSink?: ModelStreamSink | undefined } = {}) {
  return {
    callModel: fromEffect<CallModelOutput, CallModelInput>(({ input }) => callModelEffect({ model, input, streamSink })),
    compact: fromEffect<CompactOutput, CompactInput>(({ input }) => compactEffect({ model, input })),
  }
}
