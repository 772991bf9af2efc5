// Projects a turn's runtime events into HTML fragments for the browser chat (htmx's SSE
// extension swaps each unnamed message). The answer is re-rendered as sanitised markdown on the
// server and sent whole, per text segment, at most once per `throttleMs` (the first piece of a
// segment at once); tool cards are appended as they start and completed in place; the terminal
// `done` / `error` is a named event whose JSON carries the history the page keeps. Every message
// carries as `id:` the number of the last event it reflects: the page state after message N is
// that of events 1…N, so a page that reconnects with Last-Event-ID N gets the rest from a
// projector that replayed 1…N silently (`resumedHtmlProjector`), and never a delta twice.
import type { JSX } from 'hono/jsx/jsx-runtime'
import { raw } from 'hono/html'
import { answerRenderer } from '../../views/render-markdown.ts'
import { formatKbUri, parseKbUri } from '../effects/workspace/uri.ts'
import { renderFragmentSync } from '../../views/render.ts'
import { assistantIds } from '../../views/partials/message-parts.ts'
import {
  AnswerSegment,
  ContextDetailContent,
  ContextSummaryContent,
  CONTEXT_DETAIL_ID,
  CONTEXT_SUMMARY_ID,
  NoAnswerText,
  Partial,
  ThinkingBlock,
  ToolCard,
  ToolProgress,
  ToolResult,
  ToolSummary,
  TurnErrorNotice,
} from '../../views/partials/turn-fragments.tsx'
import type { FinishReason } from '../machines/index.ts'
import type { SseWriter } from './sse.ts'
import type { TurnProgressEvent, TurnProjector, TurnTerminal } from './turn-stream.ts'

/** The HTML projection, and what a resumed stream asks of it: the page's parts as they are now. */
export interface HtmlTurnProjector extends TurnProjector {
  /** Sends the status as the events so far left it (a resumed page shows "Reconnecting…" until then). */
  readonly resync: () => void
}

export const DEFAULT_ANSWER_THROTTLE_MS = 50

interface ToolEntry {
  readonly n: number
  readonly name: string
  readonly args: unknown
  /** The tail of what a long tool reported while running (phase `progress`). */
  progress: string
}

/** Progress text kept per running tool card: the tail, so a chatty tool cannot grow the page without bound. */
const PROGRESS_TAIL_CHARS = 4000

/** The canonical form of a file URI as the caller wrote it (`kb://me/…` → `kb://users/<login>/…`), or undefined. */
function canonicalFileUri(uri: unknown, login: string | undefined): string | undefined {
  if (typeof uri !== 'string') return undefined
  try {
    const path = parseKbUri({ uri, callerLogin: login ?? '' })
    return formatKbUri({ login: path.login, segments: path.segments, directory: false })
  } catch {
    return undefined
  }
}

export function htmlTurnProjector({
  sse,
  key,
  login,
  throttleMs = DEFAULT_ANSWER_THROTTLE_MS,
}: {
  sse: Pick<SseWriter, 'send' | 'sendText'>
  key: string
  /** The caller: citations of files this turn read (`read`, ok) become links to the passage. */
  login?: string | undefined
  throttleMs?: number
}): HtmlTurnProjector {
  const ids = assistantIds(key)
  let lastSeq: number | undefined // the number of the last event projected: each message's id
  const read = new Set<string>()
  const renderAnswer = answerRenderer((uri) => {
    const canonical = canonicalFileUri(uri, login)
    return canonical !== undefined && read.has(canonical) ? canonical : undefined
  })
  let segments = 0 // text segments opened so far; the last one is `segments`
  let segmentOpen = false
  let segmentText = ''
  let thinking = ''
  let thinkingShown = false
  let thinkingResumes = false // a tool ran since the last thinking: the next step's starts on a new line
  let dirtyText = false
  let dirtyThinking = false
  let status = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  const tools = new Map<string, ToolEntry>()
  const progressing = new Set<ToolEntry>()

  const partial = (target: string, element: JSX.Element, swap: 'innerHTML' | 'outerHTML' | 'beforeend' = 'innerHTML') =>
    renderFragmentSync(<Partial target={target} swap={swap}>{element}</Partial>)
  const send = (parts: string[]) => {
    if (parts.length > 0) sse.sendText(parts.join(''), lastSeq)
  }

  const segmentElement = () => <AnswerSegment id={ids.segment(segments)} html={renderAnswer(segmentText)} source={segmentText} />
  const segmentPartial = () => partial(ids.segment(segments), segmentElement(), 'outerHTML')
  const thinkingPartial = () => partial(ids.thinkingText, <>{thinking}</>)
  const statusPartial = (next: string): string[] => {
    if (next === status) return []
    status = next
    return [partial(ids.part('status'), <>{next}</>)]
  }

  /** Pending throttled updates, in the order they happened. */
  const takeDirty = (): string[] => {
    if (timer) clearTimeout(timer)
    timer = undefined
    const parts: string[] = []
    if (dirtyThinking) parts.push(thinkingPartial())
    if (dirtyText && segmentOpen) parts.push(segmentPartial())
    for (const entry of progressing) parts.push(partial(ids.toolResult(entry.n), <ToolProgress text={entry.progress} />))
    progressing.clear()
    dirtyThinking = false
    dirtyText = false
    return parts
  }
  const schedule = () => {
    timer ??= setTimeout(() => send(takeDirty()), throttleMs)
  }

  const onDelta = (text: string) => {
    segmentText += text
    if (!segmentOpen) {
      segmentOpen = true
      segments += 1
      send([...takeDirty(), partial(ids.part('body'), segmentElement(), 'beforeend'), ...statusPartial('Writing…')])
      return
    }
    dirtyText = true
    schedule()
  }
  /** A tool call ends the current text segment; later text opens a new one below the card. */
  const closeSegment = () => {
    segmentOpen = false
    segmentText = ''
  }

  const onThinking = (text: string) => {
    if (thinkingResumes && thinking !== '') thinking += '\n'
    thinkingResumes = false
    thinking += text
    if (!thinkingShown) {
      thinkingShown = true
      send([...takeDirty(), partial(ids.part('thinking'), <ThinkingBlock textId={ids.thinkingText} text={thinking} />), ...statusPartial('Thinking…')])
      return
    }
    dirtyThinking = true
    schedule()
  }

  const onToolProgress = (event: Extract<TurnProgressEvent, { type: 'tool'; phase: 'progress' }>) => {
    const entry = tools.get(event.call_id)
    if (!entry) return
    entry.progress = (entry.progress + event.text).slice(-PROGRESS_TAIL_CHARS)
    progressing.add(entry)
    schedule()
  }

  const onTool = (event: Exclude<Extract<TurnProgressEvent, { type: 'tool' }>, { phase: 'progress' }>) => {
    const parts = takeDirty()
    closeSegment()
    thinkingResumes = true
    if (event.phase === 'end' && event.ok && event.name === 'read') {
      const uri = canonicalFileUri((event.arguments as { uri?: unknown } | null)?.uri, login)
      if (uri !== undefined) read.add(uri)
    }
    let entry = tools.get(event.call_id)
    if (!entry) {
      entry = { n: tools.size + 1, name: event.name, args: event.arguments, progress: '' }
      tools.set(event.call_id, entry)
      const ok = event.phase === 'end' ? event.ok : undefined
      const summary = event.phase === 'end' ? event.summary : undefined
      const card = (
        <ToolCard id={ids.tool(entry.n)} callId={event.call_id} summaryId={ids.toolSummary(entry.n)} resultId={ids.toolResult(entry.n)} name={event.name} args={event.arguments} ok={ok} summary={summary} />
      )
      parts.push(partial(ids.part('body'), card, 'beforeend'))
    } else if (event.phase === 'end') {
      const state = event.ok ? 'ok' : 'error'
      parts.push(partial(ids.toolSummary(entry.n), <ToolSummary id={ids.toolSummary(entry.n)} name={entry.name} args={entry.args} state={state} />, 'outerHTML'))
      parts.push(partial(ids.toolResult(entry.n), <ToolResult ok={event.ok} summary={event.summary} />))
    }
    parts.push(...statusPartial(event.phase === 'start' ? `Running ${event.name}…` : 'Thinking…'))
    send(parts)
  }

  const onContext = (event: Extract<TurnProgressEvent, { type: 'context' }>) => {
    const { type: _type, ...report } = event
    send([
      ...takeDirty(),
      partial(CONTEXT_SUMMARY_ID, <ContextSummaryContent report={report} />),
      partial(CONTEXT_DETAIL_ID, <ContextDetailContent report={report} />),
    ])
  }

  const onWarning = (message: string) => {
    send([...takeDirty(), partial(ids.part('body'), <p class="turn-warning" role="status">{message}</p>, 'beforeend')])
  }

  return {
    progress: (event, numbered) => {
      if (numbered) lastSeq = numbered.seq
      switch (event.type) {
        case 'delta':
          return onDelta(event.text)
        case 'thinking':
          return onThinking(event.text)
        case 'tool':
          return event.phase === 'progress' ? onToolProgress(event) : onTool(event)
        case 'context':
          return onContext(event)
        case 'warning':
          return onWarning(event.message)
      }
    },
    finish: (terminal: TurnTerminal, _outcome, numbered) => {
      // The fragments carry the previous event's id: only the named event below reflects the
      // terminal, and a page cut between the two picks up from before it (the outcome is swapped
      // into its own slot, so a second time changes nothing).
      const parts = takeDirty()
      if (terminal.type === 'done') {
        if (segments === 0) parts.push(partial(ids.part('outcome'), <NoAnswerText />))
        parts.push(...statusPartial(doneStatus({ tools: tools.size, finishReason: terminal.finish_reason })))
      } else {
        parts.push(partial(ids.part('outcome'), <TurnErrorNotice code={terminal.code} message={terminal.message} />))
        parts.push(...statusPartial(terminal.code === 'cancelled' ? 'Stopped' : 'Failed'))
      }
      send(parts)
      if (numbered) lastSeq = numbered.seq
      const { type, ...data } = terminal
      sse.send(type, data, lastSeq)
    },
    resync: () => {
      takeDirty() // what is pending was in the page already: it got every message up to the last event replayed
      send([partial(ids.part('status'), <>{status === '' ? 'Waiting for KnowAgent…' : status}</>)])
    },
  }
}

/**
 * The HTML projection of a resumed stream: events 1…`after` (what the page has) are projected with
 * nothing sent, so the projector's state is the page's; then the status is refreshed (its
 * "Reconnecting…" replaced) and the rest is sent as the live stream would have sent it.
 */
export function resumedHtmlProjector({ sse, key, login, after }: { sse: Pick<SseWriter, 'send' | 'sendText'>; key: string; login?: string | undefined; after: number }): TurnProjector {
  let muted = true
  const gated: Pick<SseWriter, 'send' | 'sendText'> = {
    send: (event, data, id) => muted || sse.send(event, data, id),
    sendText: (text, id) => muted || sse.sendText(text, id),
  }
  const projector = htmlTurnProjector({ sse: gated, key, login })
  const unmute = () => {
    if (!muted) return
    muted = false
    projector.resync()
  }
  return {
    progress: (event, numbered) => {
      if (numbered === undefined || numbered.seq > after) unmute()
      projector.progress(event, numbered)
    },
    finish: (terminal, outcome, numbered) => {
      unmute()
      projector.finish(terminal, outcome, numbered)
    },
    caughtUp: unmute,
  }
}

/** A cut answer must not read as a complete one (issue 33). */
function doneStatus({ tools, finishReason }: { tools: number; finishReason: FinishReason }): string {
  const outcome =
    finishReason === 'length' ? 'Cut off at the output limit' : finishReason === 'content_filter' ? "Stopped by the provider's content filter" : 'Answered'
  return tools === 0 ? outcome : `${outcome} · ${tools} tool call${tools === 1 ? '' : 's'}`
}

