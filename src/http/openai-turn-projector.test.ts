import { describe, expect, it } from 'vitest'
import type { TurnProgressEvent, TurnTerminal } from './turn-stream.ts'
import {
  classifyTerminal,
  createCompletionCollector,
  describeToolCall,
  oneLine,
  openAiTurnProjector,
  sseFrameWriter,
  turnErrorStatus,
  type OpenAiFrame,
} from './openai-turn-projector.ts'

const ID = 'chatcmpl-t1'
const base = { id: ID, object: 'chat.completion.chunk', created: 1_700_000_000, model: 'knowagent/local' } as const

function run({ events, terminal, includeUsage = false, usage }: { events: TurnProgressEvent[]; terminal: TurnTerminal; includeUsage?: boolean; usage?: { promptTokens?: number; completionTokens?: number; totalTokens?: number } }) {
  const frames: OpenAiFrame[] = []
  const projector = openAiTurnProjector({ id: ID, created: base.created, model: base.model, includeUsage, write: (frame) => frames.push(frame) })
  for (const event of events) projector.progress(event)
  projector.finish(terminal, { usage })
  return frames
}

const delta = (d: Record<string, unknown>, finish: string | null = null, usage?: null) => ({
  kind: 'chunk',
  chunk: { ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }], ...(usage === null ? { usage: null } : {}) },
})

const done: TurnTerminal = { type: 'done', finish_reason: 'stop', turn_id: 't1' }
const readStart: TurnProgressEvent = { type: 'tool', phase: 'start', call_id: 'c1', name: 'read', arguments: { uri: 'kb://users/alice/docs/a.md' } }
const readEnd: TurnProgressEvent = {
  type: 'tool', phase: 'end', call_id: 'c1', name: 'read', arguments: { uri: 'kb://users/alice/docs/a.md' }, ok: true,
  summary: 'read kb://users/alice/docs/a.md [0–3000) of 8120',
}

describe('openAiTurnProjector', () => {
  it('opens with the role chunk, streams thinking and tool progress as reasoning and the answer as content, then one stop and [DONE]', () => {
    const frames = run({
      events: [
        { type: 'context', used: 100, limit: 1000, window: 2000, output_reserve: 512, protocol_reserve: 1024, compactions: 0 },
        { type: 'thinking', text: 'I should read a.md' },
        readStart,
        { type: 'tool', phase: 'progress', call_id: 'c1', name: 'read', text: 'still\nreading' },
        readEnd,
        { type: 'delta', text: 'The answer ' },
        { type: 'delta', text: 'is 42 (kb://users/alice/docs/a.md @0).' },
      ],
      terminal: done,
    })
    expect(frames).toEqual([
      delta({ role: 'assistant', content: '' }),
      delta({ reasoning_content: 'I should read a.md' }),
      delta({ reasoning_content: '\n→ read kb://users/alice/docs/a.md @0–3000\n' }),
      delta({ reasoning_content: '  … still reading\n' }),
      delta({ reasoning_content: '  ✓ read kb://users/alice/docs/a.md [0–3000) of 8120\n' }),
      delta({ content: 'The answer ' }),
      delta({ content: 'is 42 (kb://users/alice/docs/a.md @0).' }),
      delta({}, 'stop'),
      { kind: 'done' },
    ])
  })

  it('starts a new paragraph when answer text resumes after a tool ran', () => {
    const frames = run({ events: [{ type: 'delta', text: 'Let me look.' }, readStart, readEnd, { type: 'delta', text: 'Found it.' }], terminal: done })
    const content = frames.flatMap((f) => (f.kind === 'chunk' ? f.chunk.choices.map((c) => c.delta.content ?? '') : [])).join('')
    expect(content).toBe('Let me look.\n\nFound it.')
  })

  it('with include_usage: usage null on every chunk, then a last chunk with the usage and no choices, then [DONE]', () => {
    const frames = run({ events: [{ type: 'delta', text: 'Hi' }], terminal: done, includeUsage: true, usage: { promptTokens: 12, completionTokens: 3 } })
    expect(frames).toEqual([
      delta({ role: 'assistant', content: '' }, null, null),
      delta({ content: 'Hi' }, null, null),
      delta({}, 'stop', null),
      { kind: 'chunk', chunk: { ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } } },
      { kind: 'done' },
    ])
  })

  it.each([
    ['limit.tool_calls', 'length'],
    ['limit.model_steps', 'length'],
    ['limit.model_calls', 'length'],
  ])('a turn ended by %s finishes as %s with the partial text it streamed, then [DONE]', (code, reason) => {
    const frames = run({ events: [{ type: 'delta', text: 'So far: ' }], terminal: { type: 'error', code, message: 'limit reached', turn_id: 't1' } })
    expect(frames.slice(1)).toEqual([delta({ content: 'So far: ' }), delta({}, reason), { kind: 'done' }])
  })

  it('a done with finish_reason length or content_filter keeps it', () => {
    expect(run({ events: [], terminal: { ...done, finish_reason: 'length' } })).toContainEqual(delta({}, 'length'))
    expect(run({ events: [], terminal: { ...done, finish_reason: 'content_filter' } })).toContainEqual(delta({}, 'content_filter'))
  })

  it('a failed turn ends with one in-stream error object and no finish chunk and no [DONE]', () => {
    const frames = run({
      events: [{ type: 'delta', text: 'partial ans' }],
      terminal: { type: 'error', code: 'provider.incomplete', message: 'the stream ended without [DONE]', partial: 'partial ans', turn_id: 't1' },
      includeUsage: true,
    })
    expect(frames.at(-1)).toEqual({
      kind: 'error',
      status: 502,
      error: { message: 'the stream ended without [DONE]', type: 'server_error', code: 'provider.incomplete', param: null },
    })
    expect(frames.filter((f) => f.kind === 'done')).toHaveLength(0)
    expect(frames.filter((f) => f.kind === 'chunk' && f.chunk.choices.some((c) => c.finish_reason !== null))).toHaveLength(0)
  })

  it('reports compactions and warnings as reasoning lines, and nothing for a plain context report', () => {
    const frames = run({
      events: [
        { type: 'context', used: 100, limit: 1000, window: 2000, output_reserve: 512, protocol_reserve: 1024, compactions: 0 },
        { type: 'context', used: 400, limit: 1000, window: 2000, output_reserve: 512, protocol_reserve: 1024, compactions: 1, before: 1800, after: 400, ratio: 0.22 },
        { type: 'context', used: 420, limit: 1000, window: 2000, output_reserve: 512, protocol_reserve: 1024, compactions: 1, before: 1800, after: 400, ratio: 0.22 },
        { type: 'warning', message: 'catalog refresh failed' },
      ],
      terminal: done,
    })
    expect(frames.slice(1, -2)).toEqual([
      delta({ reasoning_content: 'compacted the conversation: 1800 → 400 bytes\n' }),
      delta({ reasoning_content: '⚠ catalog refresh failed\n' }),
    ])
  })
})

describe('describeToolCall', () => {
  it.each([
    ['read', { uri: 'kb://me/a.md' }, 'read kb://me/a.md @0–3000'],
    ['read', { uri: 'kb://me/a.md', offset: 3000, limit: 2000 }, 'read kb://me/a.md @3000–5000'],
    ['search', { query: 'compaction "evidence"', uri: 'kb://me/docs/' }, 'search "compaction \\"evidence\\"" in kb://me/docs/'],
    ['search', { query: 'x', offset: 40 }, 'search "x" @40'],
    ['ls', {}, 'ls'],
    ['ls', { uri: 'kb://me/docs/', offset: 100 }, 'ls kb://me/docs/ @100'],
    ['status', { uri: 'kb://me/a.md' }, 'status kb://me/a.md'],
    ['kb_search', { agent_id: 'a1', query: 'q' }, 'kb_search {"agent_id":"a1","query":"q"}'],
    ['read', { uri: 42 }, 'read {"uri":42}'],
    ['read', null, 'read'],
  ])('%s %j → %s', (name, args, line) => {
    expect(describeToolCall(name, args)).toBe(line)
  })

  it('keeps a line short and on one line whatever the model sent', () => {
    const line = oneLine(describeToolCall('search', { query: 'a\nb\u0000c ' + 'x'.repeat(500) }))
    expect(line).not.toMatch(/[\n\u0000]/)
    expect(Array.from(line)).toHaveLength(160)
    expect(line.endsWith('…')).toBe(true)
  })
})

describe('classifyTerminal and turnErrorStatus', () => {
  it.each([
    ['provider.http', 502],
    ['provider.missing_api_key', 502],
    ['compaction.not_converging', 502],
    ['model.tool_calls_missing', 502],
    ['context.over_limit', 400],
    ['not_found', 404],
    ['outside_scope', 403],
    ['cancelled', 503],
    ['internal_error', 500],
  ])('%s → %i', (code, status) => {
    expect(turnErrorStatus(code)).toBe(status)
    expect(classifyTerminal({ type: 'error', code, message: 'm', turn_id: 't' })).toMatchObject({ kind: 'error', status, error: { code } })
  })
})

describe('sseFrameWriter', () => {
  it('writes unnamed data messages: chunk JSON, the error object, [DONE]', () => {
    const sent: string[] = []
    const write = sseFrameWriter({ sendText: (text) => sent.push(text) > 0 })
    write(delta({ content: 'a' }) as OpenAiFrame)
    write({ kind: 'error', status: 502, error: { message: 'm', type: 'server_error', code: 'provider.http', param: null } })
    write({ kind: 'done' })
    expect(JSON.parse(sent[0]!)).toMatchObject({ id: ID, choices: [{ delta: { content: 'a' } }] })
    expect(sent[1]).toBe('{"error":{"message":"m","type":"server_error","code":"provider.http","param":null}}')
    expect(sent[2]).toBe('[DONE]')
  })
})

describe('createCompletionCollector', () => {
  const collect = (args: Parameters<typeof run>[0]) => {
    const collector = createCompletionCollector()
    for (const frame of run({ ...args, includeUsage: true })) collector.write(frame)
    return collector.result()
  }

  it('folds a turn into one chat.completion with content, reasoning, finish_reason and usage', () => {
    expect(collect({ events: [readStart, readEnd, { type: 'delta', text: 'Hello' }, { type: 'delta', text: ' world' }], terminal: done, usage: { promptTokens: 5, completionTokens: 2, totalTokens: 7 } })).toEqual({
      ok: true,
      completion: {
        id: ID, object: 'chat.completion', created: base.created, model: base.model,
        choices: [{
          index: 0,
          message: { role: 'assistant', content: 'Hello world', reasoning_content: '→ read kb://users/alice/docs/a.md @0–3000\n  ✓ read kb://users/alice/docs/a.md [0–3000) of 8120\n', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        }],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      },
    })
  })

  it('a limit gives 200 with the partial text and finish_reason length; a failure gives its status and error', () => {
    const limited = collect({ events: [{ type: 'delta', text: 'part' }], terminal: { type: 'error', code: 'limit.tool_calls', message: 'm', turn_id: 't' } })
    expect(limited).toMatchObject({ ok: true, completion: { choices: [{ message: { content: 'part' }, finish_reason: 'length' }] } })
    const failed = collect({ events: [{ type: 'delta', text: 'part' }], terminal: { type: 'error', code: 'provider.http', message: 'upstream 500', turn_id: 't' } })
    expect(failed).toEqual({ ok: false, status: 502, error: { message: 'upstream 500', type: 'server_error', code: 'provider.http', param: null } })
  })

  it('a projector that never finished is a 500, never an empty success', () => {
    const collector = createCompletionCollector()
    openAiTurnProjector({ id: ID, created: 1, model: 'knowagent/local', includeUsage: true, write: collector.write }).progress({ type: 'delta', text: 'x' })
    expect(collector.result()).toMatchObject({ ok: false, status: 500, error: { code: 'internal_error' } })
  })
})
