// HTML fragments of a streamed turn. Each SSE message of POST /workspace/chat/stream is a list of
// <hx-partial>s, each targeting one part of the assistant message (see message-parts.ts) or the
// context meter. Text is escaped by hono/jsx; answer HTML comes only from renderMarkdown.
import type { Child } from 'hono/jsx'
import { raw } from 'hono/html'
import type { ContextReport } from '../../src/machines/turn-contract.ts'

export type SwapStyle = 'innerHTML' | 'outerHTML' | 'beforeend'

export function Partial({ target, swap = 'innerHTML', children }: { target: string; swap?: SwapStyle; children?: Child }) {
  return (
    <hx-partial hx-target={`#${target}`} hx-swap={swap}>
      {children}
    </hx-partial>
  )
}

/** A text segment of an answer; `data-md` keeps its markdown source (copy, and the history of a stopped answer). */
export function AnswerSegment({ id, html, source }: { id: string; html: string; source: string }) {
  return (
    <div class="answer markdown" id={id} data-md={source}>
      {raw(html)}
    </div>
  )
}

export function ThinkingBlock({ textId, text }: { textId: string; text: string }) {
  return (
    <details class="thinking">
      <summary>Thinking</summary>
      <div class="thinking-text" id={textId}>
        {text}
      </div>
    </details>
  )
}

export type ToolState = 'running' | 'ok' | 'error'

/** One line: `query: "streaming", uri: …/guides/`. */
export function briefArguments(args: unknown, maxChars = 90): string {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return JSON.stringify(args) ?? ''
  const parts = Object.entries(args as Record<string, unknown>).map(([key, value]) => {
    const shown = typeof value === 'string' && value.startsWith('kb://') ? shortUri(value) : JSON.stringify(value)
    return `${key}: ${shown}`
  })
  const line = parts.join(', ')
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line
}

function shortUri(uri: string): string {
  const parts = uri.replace(/^kb:\/\/users\/[^/]+\//, '').split('/').filter(Boolean)
  return parts.length <= 2 ? uri.replace(/^kb:\/\/users\/[^/]+\//, '') || uri : `…/${parts.slice(-2).join('/')}${uri.endsWith('/') ? '/' : ''}`
}

const STATE_LABEL: Record<ToolState, string> = { running: 'running…', ok: 'done', error: 'error' }

export function ToolSummary({ id, name, args, state }: { id: string; name: string; args: unknown; state: ToolState }) {
  return (
    <summary id={id} class={`tool-summary ${state}`}>
      <span class="tool-icon" aria-hidden="true"></span>
      <span class="tool-name">{name}</span>
      <span class="tool-args">{briefArguments(args)}</span>
      <span class="tool-state">{STATE_LABEL[state]}</span>
    </summary>
  )
}

export function ToolResult({ ok, summary }: { ok: boolean | undefined; summary: string | undefined }) {
  if (ok === undefined) return <p class="tool-pending">Running…</p>
  return ok ? (
    <p class="tool-result-text">{summary}</p>
  ) : (
    <p class="tool-error" role="alert">
      <strong>Error:</strong> {summary}
    </p>
  )
}

/** A running tool's progress (e.g. a retrieval service's steps and the text it is generating). */
export function ToolProgress({ text }: { text: string }) {
  return (
    <>
      <p class="tool-pending">Running…</p>
      <pre class="tool-progress">{text}</pre>
    </>
  )
}

export function ToolCard({
  id,
  callId,
  summaryId,
  resultId,
  name,
  args,
  ok,
  summary,
}: {
  id: string
  callId: string
  summaryId: string
  resultId: string
  name: string
  args: unknown
  ok?: boolean | undefined
  summary?: string | undefined
}) {
  const state: ToolState = ok === undefined ? 'running' : ok ? 'ok' : 'error'
  // The call's id, name and arguments let the page pair a stopped answer's tool calls in its history.
  return (
    <details class="tool-card" id={id} data-call-id={callId} data-tool={name} data-args={JSON.stringify(args ?? {})}>
      <ToolSummary id={summaryId} name={name} args={args} state={state} />
      <div class="tool-detail">
        <h4>Arguments</h4>
        <pre class="tool-arguments">{JSON.stringify(args, null, 2)}</pre>
        <h4>Result</h4>
        <div class="tool-result" id={resultId}>
          <ToolResult ok={ok} summary={summary} />
        </div>
      </div>
    </details>
  )
}

const ERROR_TITLES: Record<string, string> = {
  cancelled: 'Stopped',
  'auth.revoked': 'Stopped: your sign-in ended',
  'turn.interrupted': 'The server running this answer stopped',
  'provider.incomplete': 'The model’s answer was cut off',
  'limit.model_steps': 'Step limit reached',
  'limit.tool_calls': 'Tool-call limit reached',
  'limit.model_calls': 'Model-call limit reached',
  'limit.turn_time': 'Time limit reached',
  'context.over_limit': 'The conversation is too long for this model',
}

export function TurnErrorNotice({ code, message }: { code: string; message: string }) {
  return (
    <div class="turn-error" role="alert">
      <strong>{ERROR_TITLES[code] ?? 'The answer failed'}</strong>
      <span class="turn-error-message">{message}</span>
      <code class="turn-error-code">{code}</code>
    </div>
  )
}

export function NoAnswerText() {
  return <p class="muted no-answer">The model finished without writing an answer.</p>
}

// ── context meter ───────────────────────────────────────────────────────────────────────────

export function compactNumber(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}

const percent = (used: number, limit: number) => (limit > 0 ? Math.min(100, Math.round((used / limit) * 100)) : 0)

export function ContextSummaryContent({ report }: { report: ContextReport | undefined }) {
  if (!report) {
    return (
      <>
        <span class="meter-label">Context</span>
        <span class="meter-bar" aria-hidden="true">
          <span class="meter-fill" style="width:0%"></span>
        </span>
        <span class="meter-text">measured when you ask</span>
      </>
    )
  }
  const used = percent(report.used, report.limit)
  const level = used >= 90 ? 'high' : used >= 70 ? 'medium' : 'low'
  return (
    <>
      <span class="meter-label">Context</span>
      <span class={`meter-bar ${level}`} aria-hidden="true">
        <span class="meter-fill" style={`width:${used}%`}></span>
      </span>
      <span class="meter-text">
        <span class="meter-used">{compactNumber(report.used)}</span> / {compactNumber(report.limit)} · window {compactNumber(report.window)} ·{' '}
        {report.compactions === 0 ? 'no compaction' : `${report.compactions} compaction${report.compactions === 1 ? '' : 's'}`}
        {report.ratio !== undefined ? ` (${Math.round(report.ratio * 100)}%)` : ''}
      </span>
    </>
  )
}

export function ContextDetailContent({ report }: { report: ContextReport | undefined }) {
  if (!report) {
    return <p class="meter-note">Each question reports the estimated input size (UTF-8 bytes of the messages and tool schemas, an upper bound on tokens) against this model’s limit.</p>
  }
  const rows: Array<[string, string]> = [
    ['Input used (est. tokens)', report.used.toLocaleString('en-US')],
    ['Input limit', report.limit.toLocaleString('en-US')],
    ['Context window', report.window.toLocaleString('en-US')],
    ['Output reserve', report.output_reserve.toLocaleString('en-US')],
    ['Protocol reserve', report.protocol_reserve.toLocaleString('en-US')],
    ['Compactions', String(report.compactions)],
  ]
  if (report.before !== undefined && report.after !== undefined) {
    rows.push(['Last compaction', `${report.before.toLocaleString('en-US')} → ${report.after.toLocaleString('en-US')}`])
  }
  if (report.ratio !== undefined) rows.push(['Compaction ratio', `${(report.ratio * 100).toFixed(1)}%`])
  return (
    <dl class="meter-detail">
      {rows.map(([term, value]) => (
        <div>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}

export const CONTEXT_SUMMARY_ID = 'context-summary'
export const CONTEXT_DETAIL_ID = 'context-detail'

export function ContextMeter() {
  return (
    <div id="context-meter" class="context-meter">
      <details>
        <summary id={CONTEXT_SUMMARY_ID}>
          <ContextSummaryContent report={undefined} />
        </summary>
        <div id={CONTEXT_DETAIL_ID}>
          <ContextDetailContent report={undefined} />
        </div>
      </details>
    </div>
  )
}
