// Bytes of a Bailian knowledge-chat SSE body → the answer or a typed failure. Synchronous and pure
// (the I/O lives in bailian-client.ts), so any re-chunking of the same bytes gives the same outcome.
//
// A frame is `data: {"output": {"choices": [{"message": {"content", "extra": {"step"}},
// "finish_reason"}]}, "request_id"}`. The service runs several steps (planning, tool calls,
// retrieval) before it generates:
// - only content of `extra.step = "generating"` is the answer; other steps' content is progress.
//   A frame without any step tag counts as answer text (the service's plain, non-agentic mode);
// - `finish_reason` is "" (or "null") until the last frame, which says "stop" (or another reason);
// - `event: error` (`{code, message, request_id}`), or a data frame holding only `code`/`message`,
//   is a failure even after answer text, which is kept;
// - EOF or a lost connection without a finish reason is a failure that keeps the text;
// - data that is not JSON, or not this shape, is a protocol failure that keeps the text.
import * as Option from 'effect/Option'
import * as Schema from 'effect/Schema'
import { truncateForDisplay } from '../llm/provider-error-payload.ts'
import { TextBuffer } from '../llm/text-buffer.ts'
import { createSseDecoder, type SseEvent } from '../../sse/sse-decoder.ts'
import { BailianProtocolError, BailianStreamError, BailianStreamIncomplete } from './bailian-errors.ts'

export const GENERATING_STEP = 'generating'

export type BailianChatEvent =
  /** The service entered a new step (planning, tool_calling, retrieving, generating …). */
  | { readonly type: 'step'; readonly step: string }
  /** Content of a step that is not the answer (the service's own reasoning or tool output). */
  | { readonly type: 'progress'; readonly step: string; readonly text: string }
  /** A piece of the answer. */
  | { readonly type: 'answer'; readonly text: string }

export interface BailianChatResult {
  readonly answer: string
  readonly finishReason: string
  readonly requestId: string | undefined
  /** The steps the service went through, in order, each once per change. */
  readonly steps: ReadonlyArray<string>
}

export type BailianChatFailure = BailianStreamError | BailianStreamIncomplete | BailianProtocolError

export type BailianChatState =
  | { readonly status: 'streaming' }
  | { readonly status: 'succeeded'; readonly result: BailianChatResult }
  | { readonly status: 'failed'; readonly error: BailianChatFailure }

export type BailianChatEnding = 'eof' | 'connection-lost'

export interface BailianChatStreamParser {
  /** Feed body bytes; once the state is not `streaming`, further bytes are ignored. */
  readonly pushBytes: (bytes: Uint8Array) => BailianChatState
  readonly end: (ending: BailianChatEnding) => Exclude<BailianChatState, { status: 'streaming' }>
  readonly state: () => BailianChatState
  readonly partialText: () => string
}

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

const ChatFrame = Schema.Struct({
  output: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        choices: Schema.optional(
          Schema.NullOr(
            Schema.Array(
              Schema.Struct({
                message: Schema.optional(
                  Schema.NullOr(
                    Schema.Struct({
                      content: OptionalText,
                      extra: Schema.optional(Schema.NullOr(Schema.Struct({ step: OptionalText, step_change: OptionalText }))),
                    }),
                  ),
                ),
                finish_reason: OptionalText,
              }),
            ),
          ),
        ),
        finish_reason: OptionalText,
      }),
    ),
  ),
  request_id: OptionalText,
  code: OptionalText,
  message: OptionalText,
})
type ChatFrame = typeof ChatFrame.Type

const decodeFrame = Schema.decodeUnknownOption(ChatFrame)

const ErrorPayload = Schema.Struct({ code: OptionalText, message: OptionalText, request_id: OptionalText })
const decodeErrorPayload = Schema.decodeUnknownOption(ErrorPayload)

export function createBailianChatStreamParser({
  onEvent,
}: {
  readonly onEvent?: ((event: BailianChatEvent) => void) | undefined
} = {}): BailianChatStreamParser {
  const sse = createSseDecoder({ dispatchCompleteLinesOnEnd: true })
  let state: BailianChatState = { status: 'streaming' }
  const answer = new TextBuffer()
  let finishReason: string | undefined
  let requestId: string | undefined
  let currentStep: string | undefined
  const steps: string[] = []

  const fail = (error: BailianChatFailure): void => {
    state = { status: 'failed', error }
  }

  const emit = (event: BailianChatEvent): void => onEvent?.(event)

  const enterStep = (step: string): void => {
    if (step === currentStep) return
    currentStep = step
    steps.push(step)
    emit({ type: 'step', step })
  }

  const acceptErrorEvent = (data: string): void => {
    const payload = Option.getOrUndefined(decodeErrorPayload(parseJson(data)))
    const code = nonEmpty(payload?.code)
    const message = nonEmpty(payload?.message)
    fail(
      new BailianStreamError({
        serverCode: code,
        detail: truncateForDisplay(message === undefined ? data || 'the service sent an error event' : code ? `${code}: ${message}` : message),
        requestId: nonEmpty(payload?.request_id) ?? requestId,
        partialText: answer.toString(),
      }),
    )
  }

  const acceptFrame = (frame: ChatFrame): void => {
    requestId = nonEmpty(frame.request_id) ?? requestId
    if (frame.output == null) {
      const message = nonEmpty(frame.message)
      if (message !== undefined || nonEmpty(frame.code) !== undefined) {
        const code = nonEmpty(frame.code)
        fail(
          new BailianStreamError({
            serverCode: code,
            detail: truncateForDisplay(code && message ? `${code}: ${message}` : (message ?? code ?? '')),
            requestId,
            partialText: answer.toString(),
          }),
        )
      }
      return
    }
    for (const choice of frame.output.choices ?? []) {
      const message = choice.message
      const step = nonEmpty(message?.extra?.step) ?? nonEmpty(message?.extra?.step_change)
      if (step !== undefined) enterStep(step)
      const content = message?.content ?? ''
      if (content !== '') {
        const inAnswer = (step ?? currentStep ?? GENERATING_STEP) === GENERATING_STEP
        if (inAnswer) {
          answer.append(content)
          emit({ type: 'answer', text: content })
        } else {
          emit({ type: 'progress', step: step ?? currentStep ?? '', text: content })
        }
      }
      const finish = finishReasonOf(choice.finish_reason)
      if (finish !== undefined) finishReason = finish
    }
    const finish = finishReasonOf(frame.output.finish_reason)
    if (finish !== undefined) finishReason = finish
  }

  const acceptEvent = (event: SseEvent): void => {
    const data = event.data.trim()
    if (event.event === 'error') {
      acceptErrorEvent(data)
      return
    }
    if (data === '' || data === '[DONE]') return
    const json = parseJson(data)
    const frame = json === NOT_JSON ? undefined : Option.getOrUndefined(decodeFrame(json))
    if (frame === undefined) {
      fail(
        new BailianProtocolError({
          operation: 'chat',
          detail: `${json === NOT_JSON ? 'data that is not JSON' : 'an unexpected frame'}: ${truncateForDisplay(data, 200)}`,
          partialText: answer.toString(),
        }),
      )
      return
    }
    acceptFrame(frame)
  }

  const pushBytes = (bytes: Uint8Array): BailianChatState => {
    if (state.status !== 'streaming') return state
    for (const event of sse.push(bytes)) {
      acceptEvent(event)
      if (state.status !== 'streaming') break
    }
    return state
  }

  const end = (ending: BailianChatEnding): Exclude<BailianChatState, { status: 'streaming' }> => {
    if (state.status === 'streaming') {
      for (const event of sse.end()) {
        acceptEvent(event)
        if (state.status !== 'streaming') break
      }
    }
    if (state.status === 'streaming') {
      if (finishReason !== undefined) {
        state = { status: 'succeeded', result: { answer: answer.toString(), finishReason, requestId, steps: [...steps] } }
      } else {
        fail(
          new BailianStreamIncomplete({
            reason:
              ending === 'eof'
                ? 'the service closed the stream without a finish reason'
                : 'the connection to the service was lost before the end of the stream',
            partialText: answer.toString(),
          }),
        )
      }
    }
    return state as Exclude<BailianChatState, { status: 'streaming' }>
  }

  return { pushBytes, end, state: () => state, partialText: () => answer.toString() }
}

const NOT_JSON = Symbol('not-json')

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return NOT_JSON
  }
}

function nonEmpty(value: string | null | undefined): string | undefined {
  return value === null || value === undefined || value === '' ? undefined : value
}

function finishReasonOf(value: string | null | undefined): string | undefined {
  const reason = nonEmpty(value)
  return reason === undefined || reason === 'null' ? undefined : reason
}
