import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type NumberedEvent, numberedEvent, type TurnProgressEvent } from '../effects/turn/turn-events.ts'
import { htmlTurnProjector, resumedHtmlProjector } from './html-turn-projector.tsx'

function recordingSse() {
  const sent: Array<{ text?: string; event?: string; data?: unknown; id?: number | undefined }> = []
  return {
    sent,
    texts: () => sent.filter((s) => s.text !== undefined).map((s) => s.text!),
    sse: {
      sendText: (text: string, id?: number) => sent.push({ text, id }) > 0,
      send: (event: string, data: unknown, id?: number) => sent.push({ event, data, id }) > 0,
    },
  }
}

/** Events numbered from 1, as a turn stores them. */
const numbered = (events: TurnProgressEvent[]): Array<[TurnProgressEvent, NumberedEvent]> =>
  events.map((event, index) => [event, numberedEvent({ seq: index + 1, name: event.type, json: JSON.stringify(event) })])

describe('htmlTurnProjector', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('sends the first piece of an answer at once and coalesces the rest into one throttled, re-rendered update', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k1', throttleMs: 50 })
    projector.progress({ type: 'delta', text: 'Hello ' })
    expect(out.texts()).toHaveLength(1)
    expect(out.texts()[0]).toContain('<hx-partial hx-target="#a-k1-body" hx-swap="beforeend"><div class="answer markdown" id="a-k1-s1" data-md="Hello "><p>Hello </p>')
    projector.progress({ type: 'delta', text: '**wor' })
    projector.progress({ type: 'delta', text: 'ld** <script>x</script>' })
    expect(out.texts()).toHaveLength(1)
    vi.advanceTimersByTime(50)
    expect(out.texts()).toHaveLength(2)
    expect(out.texts()[1]).toBe(
      '<hx-partial hx-target="#a-k1-s1" hx-swap="outerHTML"><div class="answer markdown" id="a-k1-s1" data-md="Hello **world** &lt;script&gt;x&lt;/script&gt;"><p>Hello <strong>world</strong> &lt;script&gt;x&lt;/script&gt;</p>\n</div></hx-partial>',
    )
  })

  it('appends a tool card when a call starts, completes it in place, and opens a new text segment after it', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k2', throttleMs: 50 })
    projector.progress({ type: 'delta', text: 'Let me look.' })
    projector.progress({ type: 'delta', text: ' More.' }) // pending: flushed before the card
    projector.progress({ type: 'tool', phase: 'start', call_id: 'c<1>', name: 'read', arguments: { uri: 'kb://me/<b>.md' } })
    const start = out.texts().at(-1)!
    expect(start.indexOf('Let me look. More.')).toBeLessThan(start.indexOf('id="a-k2-t1"'))
    expect(start).toContain('<details class="tool-card" id="a-k2-t1" data-call-id="c&lt;1&gt;" data-tool="read" data-args="{&quot;uri&quot;:&quot;kb://me/&lt;b&gt;.md&quot;}">')
    expect(start).toContain('&lt;b&gt;.md')
    expect(start).toContain('Running read…')
    projector.progress({ type: 'tool', phase: 'end', call_id: 'c<1>', name: 'read', arguments: { uri: 'kb://me/<b>.md' }, ok: false, summary: 'not_found: <gone>' })
    const end = out.texts().at(-1)!
    expect(end).toContain('hx-target="#a-k2-t1-summary" hx-swap="outerHTML"><summary id="a-k2-t1-summary" class="tool-summary error">')
    expect(end).toContain('hx-target="#a-k2-t1-result"')
    expect(end).toContain('not_found: &lt;gone&gt;')
    projector.progress({ type: 'delta', text: 'Found nothing.' })
    expect(out.texts().at(-1)).toContain('id="a-k2-s2"')
  })

  it('ends with the pending text, a final status and one named done event carrying the history', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k3', throttleMs: 50 })
    projector.progress({ type: 'delta', text: 'A' })
    projector.progress({ type: 'delta', text: 'B' })
    projector.finish({ type: 'done', finish_reason: 'stop', usage: undefined, turn_id: 't1', history: [{ role: 'user', content: 'q' }] })
    const [, last, terminal] = out.sent
    expect(last!.text).toContain('<p>AB</p>')
    expect(last!.text).toContain('<hx-partial hx-target="#a-k3-status" hx-swap="innerHTML">Answered</hx-partial>')
    expect(terminal).toEqual({ event: 'done', data: { finish_reason: 'stop', usage: undefined, turn_id: 't1', history: [{ role: 'user', content: 'q' }] } })
    vi.advanceTimersByTime(1000)
    expect(out.sent).toHaveLength(3) // no throttled update after the end
  })

  it('shows a failure inside the message and ends with one named error event', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k4' })
    projector.finish({ type: 'error', code: 'provider.incomplete', message: 'ended <early>', partial: 'x', turn_id: 't2' })
    expect(out.sent[0]!.text).toContain('The model’s answer was cut off')
    expect(out.sent[0]!.text).toContain('ended &lt;early&gt;')
    expect(out.sent[0]!.text).toContain('>Failed</hx-partial>')
    expect(out.sent[1]).toEqual({ event: 'error', data: { code: 'provider.incomplete', message: 'ended <early>', partial: 'x', turn_id: 't2' } })
  })

  it('updates the context meter from the measured report', () => {
    const out = recordingSse()
    htmlTurnProjector({ sse: out.sse, key: 'k5' }).progress({
      type: 'context',
      used: 1234,
      limit: 30720,
      window: 32768,
      output_reserve: 1024,
      protocol_reserve: 1024,
      compactions: 1,
      before: 40000,
      after: 12000,
      ratio: 0.3,
    })
    const text = out.texts()[0]!
    expect(text).toContain('hx-target="#context-summary"')
    expect(text).toContain('1.2k</span> / 30.7k · window 32.8k · 1 compaction (30%)')
    expect(text).toContain('<dt>Last compaction</dt><dd>40,000 → 12,000</dd>')
  })
})

describe('htmlTurnProjector thinking', () => {
  it('keeps one collapsible thinking block, each step’s thinking on its own line', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k6', throttleMs: 0 })
    projector.progress({ type: 'thinking', text: 'Searching.' })
    expect(out.texts()[0]).toContain('<details class="thinking"><summary>Thinking</summary><div class="thinking-text" id="a-k6-thinking-text">Searching.</div></details>')
    projector.progress({ type: 'tool', phase: 'start', call_id: 'c1', name: 'search', arguments: {} })
    projector.progress({ type: 'thinking', text: 'Reading <b>.' })
    projector.finish({ type: 'done', finish_reason: 'stop', turn_id: 't', history: [] })
    expect(out.texts().at(-1)).toContain('<hx-partial hx-target="#a-k6-thinking-text" hx-swap="innerHTML">Searching.\nReading &lt;b&gt;.</hx-partial>')
  })
})

describe('resumedHtmlProjector (a page picking its stream up again, issue 38)', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  const events = numbered([
    { type: 'delta', text: 'One ' },
    { type: 'tool', phase: 'start', call_id: 'c1', name: 'ls', arguments: {} },
    { type: 'tool', phase: 'end', call_id: 'c1', name: 'ls', arguments: {}, ok: true, summary: '2 entries' },
    { type: 'delta', text: 'Two ' },
    { type: 'delta', text: 'three' },
  ])
  const terminal = { type: 'done' as const, finish_reason: 'stop' as const, turn_id: 't', history: [] }

  it('each live message carries the number of the last event it reflects; the fragments of the end carry the one before the terminal', () => {
    const out = recordingSse()
    const projector = htmlTurnProjector({ sse: out.sse, key: 'k', throttleMs: 50 })
    for (const [event, number] of events) projector.progress(event, number)
    projector.finish(terminal, undefined, numberedEvent({ seq: 6, name: 'done', json: '{}' }))
    expect(out.sent.map((sent) => sent.id)).toEqual([1, 2, 3, 4, 5, 6])
    expect(out.sent.at(-1)).toMatchObject({ event: 'done', id: 6 })
  })

  it('sends nothing for the events the page has, then its status, then the rest as updates of the parts it already shows', () => {
    const out = recordingSse()
    const projector = resumedHtmlProjector({ sse: out.sse, key: 'k', after: 4 })
    for (const [event, number] of events.slice(0, 4)) projector.progress(event, number)
    vi.advanceTimersByTime(1000)
    expect(out.sent).toEqual([])
    projector.caughtUp?.()
    expect(out.texts()).toEqual(['<hx-partial hx-target="#a-k-status" hx-swap="innerHTML">Writing…</hx-partial>'])
    projector.progress(...events[4]!)
    vi.advanceTimersByTime(50)
    // The segment the page opened at event 4 is re-rendered whole (outerHTML), never appended again.
    expect(out.texts().at(-1)).toContain('<hx-partial hx-target="#a-k-s2" hx-swap="outerHTML"><div class="answer markdown" id="a-k-s2" data-md="Two three">')
    expect(out.texts().join('')).not.toContain('beforeend')
    projector.finish(terminal, undefined, numberedEvent({ seq: 6, name: 'done', json: '{}' }))
    expect(out.sent.at(-1)).toMatchObject({ event: 'done', id: 6 })
  })
})
