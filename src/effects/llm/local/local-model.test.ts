import { fc, test as propertyTest } from '@fast-check/vitest'
import * as Cause from 'effect/Cause'
import * as Effect from 'effect/Effect'
import * as Exit from 'effect/Exit'
import { describe, expect, onTestFinished, test, vi } from 'vitest'
import { buildSummaryMessage, COMPACTION_INSTRUCTION, renderCompactionTranscript } from '../../../machines/compaction-plan.ts'
import { parseTranscript } from './compaction-summary.ts'
import { findAll, snippetAround } from '../../workspace/text-paging.ts'
import { searchTerms } from '../../tools/search-terms.ts'
import { LOCAL_MODEL_INFO, makeLocalChatModel, splitIntoDeltas } from './local-model.ts'
import { collapse } from './blocks.ts'
import type { ChatMessage, ModelResult, ModelStreamEvent, ToolSchema } from '../model.ts'

const tool = (name: string): ToolSchema => ({ type: 'function', function: { name, description: name, parameters: { type: 'object' } } })
const ALL_TOOLS = ['ls', 'read', 'search', 'status'].map(tool)
const model = makeLocalChatModel({ deltaDelayMs: 0 })
const SYSTEM: ChatMessage = { role: 'system', content: 'You are KnowAgent. Selected scope: kb://users/alice/notes/' }

async function step(
  messages: ReadonlyArray<ChatMessage>,
  options: { readonly tools: ReadonlyArray<ToolSchema> | undefined } = { tools: ALL_TOOLS },
) {
  const { tools } = options
  const events: ModelStreamEvent[] = []
  const result = await Effect.runPromise(model.stream({ messages, tools, onEvent: (event) => events.push(event) }))
  return { result, events }
}

/** Appends the assistant's tool calls and the given results, as the turn runtime would. */
function withToolResults(messages: ReadonlyArray<ChatMessage>, result: ModelResult, outputs: ReadonlyArray<unknown>): ChatMessage[] {
  return [
    ...messages,
    {
      role: 'assistant',
      content: null,
      tool_calls: result.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.rawArguments } })),
    },
    ...result.toolCalls.map((call, i): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(outputs[i]) })),
  ]
}

// A tiny workspace and real-shaped tools (the search matches terms as the real tool does), to run
// the local model through a whole turn without a database.
const FILES: Record<string, string> = {
  'kb://users/alice/notes/compile.md':
    '# Compiling\n\nRaw files are parsed first. The wiki compiler writes one summary per file.\n\n' +
    'Then it publishes the directory overview as .overview.md, and the abstract as .abstract.md.\n' +
    'Every publish is atomic.\n\n编译任务会为每个目录生成概览。',
  'kb://users/alice/notes/cats.md': 'Cats sleep a lot. They like boxes. Nothing here is about compilers.',
  'kb://users/alice/notes/emoji.md': '🎉🎉 Party notes.\n\nThe budget for the party is 300 euros. Bring cake.',
  'kb://users/alice/notes/travel-policy.md':
    '# Travel policy\n\nThis policy applies to every business trip. Book trains and hotels through TripDesk.\n\n' +
    '## Per diem\n\nYou receive a per diem of 45 EUR per day for domestic trips.',
  'kb://users/alice/notes/on-call.md':
    '# On call\n\nA rotation lasts one week.\n\nThe database failover of November 2025 is described in `reviews/incident-2025-11-db-failover.md`.',
  'kb://users/alice/notes/reviews/incident-2025-11-db-failover.md':
    '# Incident review\n\n## Summary\n\nThe standby took over, but the application kept connecting to the old address for 14 minutes because of cached DNS answers.',
}
// Issue 33: a CSV row was quoted bare, without the header row that says what its fields are.
FILES['kb://users/alice/notes/holidays.csv'] = 'date,holiday,offices\n2026-01-01,New Year Day,all\n2026-10-05,Republic Day,Lisbon\n'
FILES['kb://users/alice/notes/servers.tsv'] =
  'host\track\towner\n' + Array.from({ length: 400 }, (_, i) => `node-${i}\track-${i % 7}\tteam-${i % 5}`).join('\n') + '\nzebrafish\track-9\tmarine lab\n'
const SEARCHABLE = Object.keys(FILES).filter((uri) => !uri.includes('/reviews/'))

function runTool(name: string, args: Record<string, unknown>): unknown {
  if (name === 'search') {
    const terms = searchTerms(String(args['query']))
    const hits = SEARCHABLE.flatMap((uri) => {
      const text = FILES[uri]!
      return terms.flatMap((term) =>
        findAll({ text, query: term, limit: 1 }).map((offset) => ({ uri, offset, snippet: snippetAround({ text, offset, length: Array.from(term).length, radius: 100 }) })),
      ).slice(0, 3)
    })
    return { query: args['query'], uri: 'kb://users/alice/notes/', hits, files_scanned: SEARCHABLE.length, offset: 0, next_offset: null, complete: true }
  }
  if (name === 'read') {
    const file = FILES[String(args['uri'])]
    if (file === undefined) return { error: { code: 'not_found', message: `${String(args['uri'])} does not exist` } }
    const text = Array.from(file)
    const offset = Number(args['offset'] ?? 0)
    const limit = Number(args['limit'] ?? 3000)
    const page = text.slice(offset, offset + limit).join('')
    return { uri: args['uri'], offset, next_offset: offset + limit < text.length ? offset + limit : null, total: text.length, text: page }
  }
  if (name === 'ls') {
    return {
      uri: 'kb://users/alice/notes/',
      entries: SEARCHABLE.map((uri) => ({ name: uri.split('/').at(-1), kind: 'file', uri, size: 10, updated: '2026-01-01' })),
      offset: 0,
      next_offset: null,
      total: SEARCHABLE.length,
    }
  }
  return { error: `unknown tool ${name}` }
}

async function runTurn(question: string, tools: ReadonlyArray<ToolSchema> = ALL_TOOLS, history: ReadonlyArray<ChatMessage> = []) {
  let messages: ChatMessage[] = [SYSTEM, ...history, { role: 'user', content: question }]
  const calls: string[] = []
  for (let stepNumber = 0; stepNumber < 12; stepNumber += 1) {
    const { result, events } = await step(messages, { tools })
    if (result.finishReason === 'stop') return { answer: result.text, events, calls, messages }
    calls.push(...result.toolCalls.map((call) => `${call.name} ${call.argumentsJson}`))
    messages = withToolResults(messages, result, result.toolCalls.map((call) => runTool(call.name, JSON.parse(call.argumentsJson!))))
  }
  throw new Error('the local model did not finish within 12 steps')
}

/** The quotes of an answer: every `> …` block with its `> — uri (offset N)` line. */
function quotesOf(answer: string): Array<{ uri: string; offset: number; text: string }> {
  return [...answer.matchAll(/((?:^> (?!— ).*\n)+)^> — (kb:\/\/\S+) (?:\(offset (\d+)\)|（偏移 (\d+)）)$/gmu)].map((m) => ({
    text: collapse(m[1]!.replace(/^> ?/gmu, '')),
    uri: m[2]!,
    offset: Number(m[3] ?? m[4]),
  }))
}

/** Every quote must be the text that really is in the file at the cited offset (whitespace collapsed). */
function expectQuotesAreReal(answer: string): number {
  const quotes = quotesOf(answer)
  for (const { uri, offset, text } of quotes) {
    const file = Array.from(FILES[uri] ?? '')
    expect(collapse(file.slice(offset).join('')).startsWith(text), `${uri}@${offset}: ${text}`).toBe(true)
  }
  return quotes.length
}

describe('LOCAL_MODEL_INFO', () => {
  test('is honestly labelled and supports tools', () => {
    expect(LOCAL_MODEL_INFO).toEqual({
      id: 'local',
      name: 'Local extractive (no LLM)',
      profile: 'builtin',
      contextWindow: 32_768,
      maxOutputTokens: 2_048,
      supportsNativeToolCalling: true,
    })
  })
})

describe('planning: search → read → answer', () => {
  test('first step: a search with the question keywords, scope uri omitted', async () => {
    const { result, events } = await step([SYSTEM, { role: 'user', content: 'How does the wiki compiler publish the overview?' }])
    expect(result.finishReason).toBe('tool_calls')
    expect(result.text).toBe('')
    expect(result.toolCalls).toEqual([
      {
        index: 0,
        id: 'local_0_0',
        name: 'search',
        rawArguments: '{"query":"wiki compiler publish overview"}',
        argumentsJson: '{"query":"wiki compiler publish overview"}',
        argumentsError: undefined,
      },
    ])
    expect(events).toEqual([{ type: 'thinking', text: result.thinking }])
  })

  test('a question naming a file also lists the scope, to find the file by its name', async () => {
    const { result } = await step([SYSTEM, { role: 'user', content: 'What are the key points of README.md?' }])
    expect(result.toolCalls.map((call) => call.name)).toEqual(['search', 'ls'])
  })

  test('after hits: reads the best files, ranked by their names and snippets, around their best hit; weak ones are not read', async () => {
    const messages: ChatMessage[] = [SYSTEM, { role: 'user', content: 'budget for the party' }]
    const first = (await step(messages)).result
    const hits = [
      { uri: 'kb://users/alice/a.md', offset: 50, snippet: 'nothing relevant' },
      { uri: 'kb://users/alice/b.md', offset: 9000, snippet: 'the party budget is small' },
      { uri: 'kb://users/alice/a.md', offset: 900, snippet: 'party approved' },
      { uri: 'kb://users/alice/c.md', offset: 10, snippet: 'party' },
      { uri: 'kb://users/alice/party-budget.md', offset: 20, snippet: 'see the numbers below' },
    ]
    const second = (await step(withToolResults(messages, first, [{ hits, files_scanned: 9, next_offset: null, complete: true }]))).result
    expect(second.toolCalls.map((call) => [call.id, call.name, JSON.parse(call.argumentsJson!)])).toEqual([
      ['local_1_0', 'read', { uri: 'kb://users/alice/party-budget.md', offset: 0, limit: 6000 }],
      ['local_1_1', 'read', { uri: 'kb://users/alice/b.md', offset: 7000, limit: 6000 }],
    ])
  })

  test('a whole turn quotes the best passage whole, with its URI and offset, and nothing unrelated', async () => {
    const { answer, calls } = await runTurn('How does the wiki compiler publish the overview?')
    expect(calls[0]).toBe('search {"query":"wiki compiler publish overview"}')
    expect(calls.slice(1).every((call) => call.startsWith('read '))).toBe(true)
    expect(quotesOf(answer)[0]).toEqual({
      uri: 'kb://users/alice/notes/compile.md',
      offset: 89,
      text: 'Then it publishes the directory overview as .overview.md, and the abstract as .abstract.md. Every publish is atomic.',
    })
    expect(answer).not.toContain('Cats sleep')
    expect(answer).not.toContain('# Compiling')
    expect(expectQuotesAreReal(answer)).toBeGreaterThan(0)
  })

  test('offsets are code points (an emoji before the quote counts as one)', async () => {
    const { answer } = await runTurn('What is the party budget?')
    expect(quotesOf(answer)[0]).toEqual({ uri: 'kb://users/alice/notes/emoji.md', offset: 17, text: 'The budget for the party is 300 euros. Bring cake.' })
    expectQuotesAreReal(answer)
  })

  test('a Chinese question is searched by Intl.Segmenter words and answered in Chinese', async () => {
    const { answer, calls } = await runTurn('编译任务会生成什么？')
    expect(calls[0]).toBe('search {"query":"编译 任务 生成"}')
    expect(answer).toContain('> 编译任务会为每个目录生成概览。')
    expect(answer).toContain('（偏移')
    expectQuotesAreReal(answer)
  })

  test('nothing found: says that nothing in the scope covers it, what was searched, and cites nothing', async () => {
    const { answer } = await runTurn('quantum entanglement')
    expect(answer).toBe('Nothing in kb://users/alice/notes/ covers “quantum entanglement”.\n\nI searched in all 7 files for “quantum”, “entanglement”; no file matched.')
  })

  // Regression (issue 15): asked about parental leave, it quoted the travel policy's title and an unrelated sentence.
  test('a file that only shares a word with the question is read, but not quoted: nothing covers it', async () => {
    const { answer, calls } = await runTurn('What is the parental leave policy?')
    expect(calls).toContain('read {"uri":"kb://users/alice/notes/travel-policy.md","offset":0,"limit":6000}')
    expect(answer).toBe(
      'Nothing in kb://users/alice/notes/ covers “What is the parental leave policy?”.\n\n' +
        'I searched in all 7 files for “parental”, “leave”, “policy”, and read the closest matches (travel-policy.md), but none of them answers it.',
    )
    expect(quotesOf(answer)).toEqual([])
  })

  // Regression (issue 15): it answered from lines that point to the incident review instead of reading it.
  test('follows a reference to the file the question is about, when the search did not find that file', async () => {
    const { answer, calls } = await runTurn('Why did the November 2025 database failover take so long?')
    expect(calls).toEqual([
      'search {"query":"november 2025 database failover"}',
      'read {"uri":"kb://users/alice/notes/on-call.md","offset":0,"limit":6000}',
      'read {"uri":"kb://users/alice/notes/reviews/incident-2025-11-db-failover.md","offset":0,"limit":6000}',
    ])
    expect(quotesOf(answer).map((q) => q.uri)).toEqual(['kb://users/alice/notes/reviews/incident-2025-11-db-failover.md'])
    expect(answer).toContain('cached DNS answers')
    expectQuotesAreReal(answer)
  })

  test('no hit on an incomplete scan: next pages (at most 3), then an honest answer that says the scan was partial', async () => {
    let messages: ChatMessage[] = [SYSTEM, { role: 'user', content: 'lost keyword' }]
    const queries: unknown[] = []
    for (let page = 0; page < 3; page += 1) {
      const { result } = await step(messages)
      expect(result.toolCalls.map((c) => c.name)).toEqual(['search'])
      queries.push(JSON.parse(result.toolCalls[0]!.argumentsJson!))
      const uri = 'kb://users/alice/notes/'
      messages = withToolResults(messages, result, [{ uri, hits: [], files_scanned: 40, offset: page * 40, next_offset: (page + 1) * 40, complete: false }])
    }
    const { result } = await step(messages)
    expect(queries).toEqual([{ query: 'lost keyword' }, { query: 'lost keyword', offset: 40 }, { query: 'lost keyword', offset: 80 }])
    expect(result.finishReason).toBe('stop')
    expect(result.text).toContain('in the first 120 files (the scan was not complete, so files beyond them may cover it)')
  })

  test('a failed search is reported, not papered over', async () => {
    const messages: ChatMessage[] = [SYSTEM, { role: 'user', content: 'budget' }]
    const first = (await step(messages)).result
    const { result } = await step(withToolResults(messages, first, [{ error: 'scope kb://users/alice/notes/ was deleted' }]))
    expect(result.text).toBe('The search failed: scope kb://users/alice/notes/ was deleted')
  })

  test('a compaction summary placed after the question is not taken for the question', async () => {
    const summary = buildSummaryMessage('Summary of the earlier conversation: the user asked about cats.')
    const { result } = await step([SYSTEM, { role: 'user', content: 'What is the party budget?' }, summary])
    expect(JSON.parse(result.toolCalls[0]!.argumentsJson!)).toEqual({ query: 'party budget' })
  })

  test('tool-call ids stay unique across turns of one conversation', async () => {
    const first = await runTurn('party budget')
    const next = await step([...first.messages, { role: 'assistant', content: first.answer }, { role: 'user', content: 'and the cake?' }])
    const earlierIds = first.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []))
    for (const call of next.result.toolCalls) expect(earlierIds).not.toContain(call.id)
  })

  test('deterministic: the same messages give the same result', async () => {
    const a = await runTurn('How does the wiki compiler publish the overview?')
    const b = await runTurn('How does the wiki compiler publish the overview?')
    expect(b.answer).toBe(a.answer)
  })
})

describe('CSV and TSV rows', () => {
  test('a row is quoted under its header row, each cited at its own offset', async () => {
    const { answer } = await runTurn('When is Republic Day?')
    expect(answer).toContain(
      [
        '> date,holiday,offices',
        '> — kb://users/alice/notes/holidays.csv (offset 0)',
        '>',
        '> 2026-10-05,Republic Day,Lisbon',
        `> — kb://users/alice/notes/holidays.csv (offset ${FILES['kb://users/alice/notes/holidays.csv']!.indexOf('2026-10-05')})`,
      ].join('\n'),
    )
    expect(expectQuotesAreReal(answer)).toBe(2)
  })

  test('a row far into a TSV file: its header row is read too, and quoted above it', async () => {
    const { answer, calls } = await runTurn('Which rack is zebrafish in?')
    expect(calls.filter((call) => call.startsWith('read '))).toContainEqual('read {"uri":"kb://users/alice/notes/servers.tsv","offset":0,"limit":800}')
    const quotes = quotesOf(answer)
    expect(quotes.slice(0, 2).map(({ offset, text }) => [offset, text])).toEqual([
      [0, 'host rack owner'],
      [Array.from(FILES['kb://users/alice/notes/servers.tsv']!).length - 'zebrafish\track-9\tmarine lab\n'.length, 'zebrafish rack-9 marine lab'],
    ])
    expectQuotesAreReal(answer)
  })
})

describe('planning without search, or without keywords', () => {
  test('no search tool: ls the scope, read the files whose names match, answer', async () => {
    const { answer, calls } = await runTurn('What about cats?', ['ls', 'read'].map(tool))
    expect(calls[0]).toBe('ls {}')
    expect(calls[1]).toBe('read {"uri":"kb://users/alice/notes/cats.md","offset":0}')
    expect(answer).toContain('> Cats sleep a lot.')
    expectQuotesAreReal(answer)
  })

  test('a question without keywords reads the scope and quotes the key passages of each file', async () => {
    const { answer, calls } = await runTurn('What is this?')
    expect(calls[0]).toBe('ls {}')
    expect(answer).toContain('Extractive summary of what I read:')
    expect(answer).toContain('> Cats sleep a lot. They like boxes. Nothing here is about compilers.\n> — kb://users/alice/notes/cats.md (offset 0)')
    expectQuotesAreReal(answer)
  })

  test('only ls available: answers with the real listing', async () => {
    const { answer } = await runTurn('What is in here?', [tool('ls')])
    expect(answer).toBe(`The selected scope contains:\n\n${SEARCHABLE.map((uri) => `- ${uri}`).join('\n')}\n`)
  })
})

describe('text-only use (no tools)', () => {
  test('quotes the host-provided first page with its URI and real offsets', async () => {
    const material = 'Selected file.\n\nFirst page of kb://users/bob/plan.md (code points 0–120 of 120):\n"""\n# Plan\n\nThe launch is in March.\n\nMarketing starts in May. The budget is 40k.\n"""'
    const { result } = await step([{ role: 'system', content: material }, { role: 'user', content: 'When is the launch?' }], { tools: undefined })
    expect(result.finishReason).toBe('stop')
    expect(result.toolCalls).toEqual([])
    expect(result.text).toContain('> The launch is in March.\n> — kb://users/bob/plan.md (offset 8)')
    expect(result.text).not.toContain('Marketing')
  })

  test('other material is quoted with the URI it names', async () => {
    const { result } = await step(
      [{ role: 'system', content: 'Notes from kb://users/bob/plan.md: the launch is in March.' }, { role: 'user', content: 'When is the launch?' }],
      { tools: undefined },
    )
    expect(result.text).toContain('> Notes from kb://users/bob/plan.md: the launch is in March.\n> — kb://users/bob/plan.md')
  })

  test('no material: says it cannot answer rather than inventing', async () => {
    const { result } = await step([{ role: 'user', content: 'What is the capital of France?' }], { tools: [] })
    expect(result.text).toBe('I have no material to answer from: the local model can only quote what it is given.')
  })

  test('material that does not match: says so', async () => {
    const { result } = await step(
      [{ role: 'system', content: 'Notes about gardening and roses.' }, { role: 'user', content: 'Tell me about databases' }],
      { tools: undefined },
    )
    expect(result.text).toBe('Nothing in the material I was given covers “Tell me about databases”.')
  })
})

describe('streaming', () => {
  test('an answer arrives as several deltas that add up to the text', async () => {
    const { answer, events } = await runTurn('How does the wiki compiler publish the overview?')
    const deltas = events.filter((e) => e.type === 'delta')
    expect(deltas.length).toBeGreaterThan(3)
    expect(deltas.map((e) => e.text).join('')).toBe(answer)
  })

  test('splitIntoDeltas never splits a code point and keeps every character', () => {
    const text = `${'🎉'.repeat(70)}\nline two\n\n知识`
    const pieces = splitIntoDeltas(text)
    expect(pieces.join('')).toBe(text)
    for (const piece of pieces) expect(piece.isWellFormed()).toBe(true)
  })

  test('deltas are paced by deltaDelayMs, and interruption stops them', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    onTestFinished(() => {
      vi.useRealTimers()
    })
    const slow = makeLocalChatModel({ deltaDelayMs: 30 })
    const events: ModelStreamEvent[] = []
    const controller = new AbortController()
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Alpha beta. Gamma alpha. Alpha delta. Alpha epsilon. Alpha zeta.' },
      { role: 'user', content: 'alpha' },
    ]
    const exitPromise = Effect.runPromiseExit(
      slow.stream({
        messages,
        onEvent: (event) => {
          events.push(event)
          if (events.length === 3) controller.abort()
        },
      }),
      { signal: controller.signal },
    )
    await vi.advanceTimersByTimeAsync(59)
    expect(events).toHaveLength(2) // one at once, then one every 30 ms
    await vi.advanceTimersByTimeAsync(1)
    const exit = await exitPromise
    expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
    expect(vi.getTimerCount()).toBe(0) // the next delta's timer was cleared
    await vi.runAllTimersAsync()
    expect(events).toHaveLength(3)
  })
})

describe('compaction', () => {
  /** The request the turn machine sends (actor-bridge `compactEffect`): the instruction, then the batch as a transcript. */
  const compactionRequest = (batch: ReadonlyArray<ChatMessage>): ChatMessage[] => [
    { role: 'system', content: COMPACTION_INSTRUCTION },
    { role: 'user', content: renderCompactionTranscript(batch) },
  ]

  test('a compaction request gets an extractive summary that keeps every URI with the offsets read', async () => {
    const { messages } = await runTurn('How does the wiki compiler publish the overview?')
    const { result } = await step(compactionRequest(messages.slice(1)), { tools: undefined })
    expect(result.finishReason).toBe('stop')
    expect(result.toolCalls).toEqual([])
    expect(result.text).toContain('- User asked: How does the wiki compiler publish the overview?')
    expect(result.text).toContain('References (URI — offsets seen):')
    expect(result.text).toMatch(/^- kb:\/\/users\/alice\/notes\/compile\.md — 0(, \d+)*$/mu)
    expect(result.text).not.toContain(COMPACTION_INSTRUCTION)
    expect(result.text).not.toContain('[user]')
  })

  test("a search's matches_ahead are kept as references without offsets: theirs count files, not characters", async () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'search', arguments: '{"query":"zebra"}' } }
    const result = {
      query: 'zebra',
      uri: 'kb://users/alice/pile/',
      hits: [{ uri: 'kb://users/alice/pile/f002.txt', offset: 5, snippet: 'a zebra' }],
      files_scanned: 40,
      offset: 0,
      next_offset: 40,
      complete: false,
      matches_ahead: [{ uri: 'kb://users/alice/pile/f043.txt', offset: 43 }],
    }
    const batch: ChatMessage[] = [
      { role: 'user', content: 'Where is the zebra?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: JSON.stringify(result) },
    ]
    const { result: summary } = await step(compactionRequest(batch), { tools: undefined })
    expect(summary.text).toMatch(/^- kb:\/\/users\/alice\/pile\/f002\.txt — 5$/mu)
    expect(summary.text).toMatch(/^- kb:\/\/users\/alice\/pile\/f043\.txt$/mu) // never "— 43": a read at character 43
  })

  test('an earlier summary in the batch is carried forward line by line, not nested', async () => {
    const earlier = buildSummaryMessage(
      'Summary of the earlier conversation (local extractive summary; re-read sources with `read` for evidence):\n' +
        '- User asked: What about cats?\n\nReferences (URI — offsets seen):\n- kb://users/alice/notes/cats.md — 0, 17',
    )
    const batch: ChatMessage[] = [earlier, { role: 'user', content: 'And the party budget?' }, { role: 'assistant', content: 'It is 300 euros.' }]
    const { result } = await step(compactionRequest(batch), { tools: undefined })
    expect(result.text.split('\n')).toEqual([
      'Summary of the earlier conversation (local extractive summary; re-read sources with `read` for evidence):',
      '- User asked: What about cats?',
      '- User asked: And the party budget?',
      '- Assistant answered: It is 300 euros.',
      '',
      'References (URI — offsets seen):',
      '- kb://users/alice/notes/cats.md — 0, 17',
    ])
  })

  test('a long message is shortened at a word, never inside a kb:// URI', async () => {
    const uri = 'kb://users/alice/notes/knowagent-guide-with-a-long-name.md'
    const question = `${'Please compare the two documents carefully '.repeat(5)}${uri} and tell me more`
    const { result } = await step(compactionRequest([{ role: 'user', content: question }]), { tools: undefined })
    const asked = result.text.split('\n').find((line) => line.startsWith('- User asked:'))!
    expect(asked.endsWith('…')).toBe(true)
    expect(asked).not.toMatch(/kb:\/\/\S*…$/u)
    expect(result.text).toContain(`- ${uri}`)
  })

  const uriArbitrary = fc.stringMatching(/^[a-z0-9]{1,8}(\/[a-z0-9_-]{1,8}){0,3}\.(md|txt)$/).map((path) => `kb://users/${path}`)
  propertyTest.prop([fc.array(fc.tuple(uriArbitrary, fc.nat({ max: 100_000 })), { minLength: 1, maxLength: 12 }), fc.boolean()], {
    numRuns: 100,
  })('every kb:// URI and offset in the batch survives, whether it comes as a transcript or as messages', async (references, asTranscript) => {
    const batch: ChatMessage[] = [
      { role: 'user', content: `Compare ${references.map(([uri]) => uri).join(' and ')} please` },
      {
        role: 'assistant',
        content: null,
        tool_calls: references.map(([uri, offset], i) => ({
          id: `c${i}`,
          type: 'function' as const,
          function: { name: 'read', arguments: JSON.stringify({ uri, offset }) },
        })),
      },
      ...references.map(([uri, offset], i): ChatMessage => ({
        role: 'tool',
        tool_call_id: `c${i}`,
        content: JSON.stringify({ uri, offset, next_offset: null, total: offset + 10, text: 'Some text. More text.' }),
      })),
      { role: 'assistant', content: `As ${references[0]![0]} (offset ${references[0]![1]}) says, more text.` },
    ]
    const messages = asTranscript ? compactionRequest(batch) : [...batch, { role: 'user' as const, content: COMPACTION_INSTRUCTION }]
    const { result } = await step(messages, { tools: undefined })
    for (const [uri, offset] of references) {
      const line = result.text.split('\n').find((l) => l.startsWith(`- ${uri} — `))
      expect(line, uri).toBeDefined()
      expect(line!.slice(`- ${uri} — `.length).split(', ').map(Number)).toContain(offset)
    }
  })

  propertyTest.prop(
    [
      fc.array(
        fc.oneof(
          fc.record({ role: fc.constant('user' as const), content: fc.string({ minLength: 1 }) }),
          fc.record({ role: fc.constant('assistant' as const), content: fc.string({ minLength: 1 }).filter((t) => !t.includes('[assistant called')) }),
          fc.record({ role: fc.constant('tool' as const), tool_call_id: fc.stringMatching(/^c[0-9]{1,3}$/), content: fc.json() }),
        ),
        { minLength: 1, maxLength: 8 },
      ),
    ],
    { numRuns: 200 },
  )('parseTranscript reads back what renderCompactionTranscript writes', (batch) => {
    const clean = batch.filter((m) => !/\n\n\[/u.test(m.content) && !m.content.startsWith('['))
    fc.pre(clean.length > 0)
    expect(parseTranscript(renderCompactionTranscript(clean))).toEqual(clean)
  })
})
