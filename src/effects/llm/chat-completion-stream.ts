// Bytes of a chat-completions SSE body → `ModelResult` or a typed failure. Synchronous and
// pure (the I/O loop lives in openai-client.ts), so any re-chunking of the same bytes can be
// checked to give the same answer.
//
// End-of-stream rules (SPEC §2 "streaming strictness"):
// - `data: [DONE]`                        → success at once (later bytes are ignored); with no
//                                            finish reason it is inferred: tool_calls when calls
//                                            were assembled, else stop (rawFinishReason "")
// - a finish reason, then EOF / idle      → success (the provider said it was finished)
// - EOF or lost connection without either → StreamIncomplete, keeping the partial text
// - no bytes for the idle timeout         → StreamIdleTimeout, keeping the partial text
// - an error payload or `event: error`    → ProviderStreamError, keeping the partial text
// - data that is not JSON                 → ProviderProtocolError, keeping the partial text
//
// A chunk that carries nothing but text skips JSON.parse (plain-content-chunk.ts).
import { createChunkAssembler } from './chunk-assembler.ts'
import {
  ProviderProtocolError,
  ProviderStreamError,
  StreamIdleTimeout,
  StreamIncomplete,
} from './model-errors.ts'
import type { ModelResult, ModelStreamEvent } from './model.ts'
import { readPlainContentChunk } from './plain-content-chunk.ts'
import { readProviderErrorPayload, truncateForDisplay } from './provider-error-payload.ts'
import { createSseDecoder, type SseEvent } from '../../sse/sse-decoder.ts'

export type ChatStreamFailure = ProviderStreamError | ProviderProtocolError | StreamIncomplete | StreamIdleTimeout

export type ChatStreamState =
  | { readonly status: 'streaming' }
  | { readonly status: 'succeeded'; readonly result: ModelResult }
  | { readonly status: 'failed'; readonly error: ChatStreamFailure }

export type ChatStreamEnding = 'eof' | 'connection-lost'

export interface ChatCompletionStreamParser {
  /** Feed body bytes; once the state is not `streaming`, further bytes are ignored. */
  readonly pushBytes: (bytes: Uint8Array) => ChatStreamState
  /** The body ended (cleanly or by a lost connection). */
  readonly end: (ending: ChatStreamEnding) => Exclude<ChatStreamState, { status: 'streaming' }>
  /** No byte arrived for `idleMs`. */
  readonly idle: (idleMs: number) => Exclude<ChatStreamState, { status: 'streaming' }>
  readonly state: () => ChatStreamState
  readonly partialText: () => string
}

const STREAMING: ChatStreamState = { status: 'streaming' }

export function createChatCompletionStreamParser({
  onEvent,
}: {
  readonly onEvent?: ((event: ModelStreamEvent) => void) | undefined
} = {}): ChatCompletionStreamParser {
  const assembler = createChunkAssembler()
  let state: ChatStreamState = STREAMING

  const fail = (error: ChatStreamFailure): ChatStreamState => (state = { status: 'failed', error })
  const succeed = (): ChatStreamState => (state = { status: 'succeeded', result: assembler.buildResult() })

  const acceptEvent = (event: SseEvent): void => {
    const data = event.data.trim()
    if (event.event === 'error') {
      const payload = readProviderErrorPayload(parseJson(data).value)
      fail(
        new ProviderStreamError({
          code: payload?.code,
          message: truncateForDisplay(payload?.message ?? (data === '' ? 'provider sent an error event' : data)),
          partialText: assembler.partialText(),
        }),
      )
      return
    }
    if (data === '') return // an empty keep-alive `data:` line
    if (data === '[DONE]') {
      succeed()
      return
    }
    const content = readPlainContentChunk(data)
    if (content !== undefined) {
      assembler.acceptContent(content, onEvent)
      return
    }
    const parsed = parseJson(data)
    if (!parsed.ok) {
      fail(
        new ProviderProtocolError({
          message: `provider sent data that is not JSON: ${truncateForDisplay(data, 200)}`,
          partialText: assembler.partialText(),
        }),
      )
      return
    }
    const outcome = assembler.acceptChunk(parsed.value, onEvent)
    if (outcome.kind === 'provider-error') {
      fail(
        new ProviderStreamError({
          code: outcome.error.code,
          message: truncateForDisplay(outcome.error.message),
          partialText: assembler.partialText(),
        }),
      )
    } else if (outcome.kind === 'protocol-error') {
      fail(new ProviderProtocolError({ message: outcome.message, partialText: assembler.partialText() }))
    }
  }

  // Events go straight from the decoder to the assembler (no array per chunk); once the state
  // is decided, the rest of the chunk is ignored.
  const sse = createSseDecoder({
    dispatchCompleteLinesOnEnd: true,
    onEvent: (event) => {
      if (state.status === 'streaming') acceptEvent(event)
    },
  })

  const pushBytes = (bytes: Uint8Array): ChatStreamState => {
    if (state.status === 'streaming') sse.push(bytes)
    return state
  }

  const settle = (failure: () => ChatStreamFailure): Exclude<ChatStreamState, { status: 'streaming' }> => {
    if (state.status === 'streaming') {
      if (assembler.hasFinishReason()) succeed()
      else fail(failure())
    }
    return state as Exclude<ChatStreamState, { status: 'streaming' }>
  }

  const end = (ending: ChatStreamEnding): Exclude<ChatStreamState, { status: 'streaming' }> => {
    if (state.status === 'streaming') sse.end()
    return settle(
      () =>
        new StreamIncomplete({
          message:
            ending === 'eof'
              ? 'the provider closed the stream without [DONE] and without a finish reason'
              : 'the connection to the provider was lost before the end of the stream',
          partialText: assembler.partialText(),
        }),
    )
  }

  const idle = (idleMs: number): Exclude<ChatStreamState, { status: 'streaming' }> =>
    settle(() => new StreamIdleTimeout({ idleMs, partialText: assembler.partialText() }))

  return { pushBytes, end, idle, state: () => state, partialText: () => assembler.partialText() }
}

function parseJson(text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly value: undefined } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false, value: undefined }
  }
}
