import { describe, expect, it } from 'vitest'
import { fc, test } from '@fast-check/vitest'
import { formatTurnControl, parseTurnControl } from './turn-control.ts'
import { notifyPayloads } from './turn-event-store.ts'
import { numberedEvent, parseStoredEvents, partialTextOf, progressEventOf, progressJson, terminalEventOf } from './turn-events.ts'

describe('stored events (SSE frames)', () => {
  test.prop([fc.array(fc.tuple(fc.constantFrom('delta', 'thinking', 'tool', 'context', 'done'), fc.jsonValue()), { maxLength: 20 }), fc.integer({ min: 1, max: 1e6 })])(
    'read back as written, whatever the JSON holds (newlines and blank lines in strings, "event:" or "data:" in text, any code point)',
    (pairs, firstSeq) => {
      const events = pairs.map(([name, value], index) => numberedEvent({ seq: firstSeq + index, name, json: JSON.stringify(value) ?? 'null' }))
      expect(parseStoredEvents(events.map((event) => event.frame).join(''))).toEqual(events)
    },
  )

  it('are the JSON stream\'s own frames', () => {
    expect(numberedEvent({ seq: 7, name: 'delta', json: '{"text":"a\\n\\nb"}' }).frame).toBe('id: 7\nevent: delta\ndata: {"text":"a\\n\\nb"}\n\n')
  })

  it('turn back into the runtime events they were made from', () => {
    const tool = { type: 'tool' as const, phase: 'end' as const, call_id: 'c', name: 'read', arguments: { uri: 'kb://me/a' }, ok: true, summary: 'read' }
    expect(progressEventOf({ name: 'tool', json: progressJson(tool) })).toEqual(tool)
    expect(progressEventOf({ name: 'delta', json: progressJson({ type: 'delta', text: 'a "b"\n' }) })).toEqual({ type: 'delta', text: 'a "b"\n' })
    expect(progressEventOf({ name: 'done', json: '{}' })).toBeUndefined()
    expect(terminalEventOf({ name: 'error', json: '{"code":"turn.interrupted","message":"m","turn_id":"t"}' })).toEqual({ type: 'error', code: 'turn.interrupted', message: 'm', turn_id: 't' })
  })

  it("take the partial text of the last model step: the deltas after its last context or tool event", () => {
    const delta = (text: string) => ({ name: 'delta', json: JSON.stringify({ text }) })
    expect(partialTextOf([{ name: 'context', json: '{}' }, delta('a'), { name: 'tool', json: '{}' }, { name: 'context', json: '{}' }, delta('b'), delta('c')])).toBe('bc')
    expect(partialTextOf([])).toBe('')
  })
})

describe('NOTIFY payloads of stored events', () => {
  it('are the turn ids, comma-separated, each payload under the 8000-byte limit', () => {
    const ids = Array.from({ length: 500 }, (_, index) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`)
    const payloads = notifyPayloads(ids)
    expect(payloads.length).toBeGreaterThan(1)
    expect(payloads.every((payload) => Buffer.byteLength(payload) < 8000)).toBe(true)
    expect(payloads.flatMap((payload) => payload.split(','))).toEqual(ids)
  })
})

describe('turn commands by NOTIFY', () => {
  const turnId = '2da98cb0-1111-4222-8333-444455556666'
  const watcher = '9f0e0000-1111-4222-8333-444455556666'
  it.each([{ kind: 'stop' as const, turnId }, { kind: 'watch' as const, turnId, watcher }, { kind: 'unwatch' as const, turnId, watcher }])('read back as sent: $kind', (control) => {
    expect(parseTurnControl(formatTurnControl(control))).toEqual(control)
  })

  it.each(['', 'stop', 'stop not-a-uuid', `stop ${turnId} extra`, `watch ${turnId}`, `drop ${turnId}`, `stop ${turnId.toUpperCase()}`])('ignore anything else: %j', (payload) => {
    expect(parseTurnControl(payload)).toBeUndefined()
  })
})
