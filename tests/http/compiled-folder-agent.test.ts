// Proof that the compiled layers help (issue 35): the same question about the same eight files, once
// in a compiled folder and once in a folder never compiled, answered through the real app by the
// scripted OpenAI-compatible provider playing a simple, honest agent. Its policy decides only from
// what the tools returned:
//   - first, ls the scope;
//   - if the listing carries the folder's abstract or names a fresh overview, read the overview,
//     then the one file its text points to for the question's words;
//   - otherwise read every file listed;
//   - then answer with the sentence of a file read that shares the most words with the question.
// The tool calls are counted from the SSE `tool` events. Plus the faces of the layer rule: Ctrl+K's
// JSON and HTML, and `search` through POST command, on the same folder.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RecordedRequest } from '../../src/testing/scripted-provider.ts'
import { writeCompiledFolder } from '../support/compiled-folder.ts'
import { readSseEvents } from '../support/sse-frames.ts'
import { type ScriptedProvider, textAnswerSse, toolCallsSse } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, signIn, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const FILES: Record<string, string> = {
  'pager.md': '# Pager\n\nThe pager app stays silent at night unless critical alerts are allowed.\n',
  'hotels.md': '# Hotels\n\nThe hotel cap is 220 EUR per night in London and 190 EUR per night in Paris.\n',
  'onboarding.md': '# Onboarding\n\nNew people get a laptop and a badge on their first day.\n',
  'expenses.md': '# Expenses\n\nSubmit receipts within thirty days; meals are capped at 60 EUR.\n',
  'security.md': '# Security\n\nRotate your passwords every year and use the hardware key.\n',
  'holidays.md': '# Holidays\n\nEveryone has 28 days of leave plus public holidays.\n',
  'laptops.md': '# Laptops\n\nLaptops are replaced every three years.\n',
  'meetings.md': '# Meetings\n\nNo meetings on Friday afternoons.\n',
}
const QUESTION = 'What is the hotel cap per night in London?'

interface Message {
  readonly role: string
  readonly content: string | null
  readonly tool_calls?: ReadonlyArray<{ readonly id: string; readonly function: { readonly name: string; readonly arguments: string } }>
  readonly tool_call_id?: string
}

const words = (text: string) => new Set((text.toLowerCase().match(/[a-z0-9]{4,}/g) ?? []).filter((word) => !['what', 'this', 'that', 'with', 'from'].includes(word)))
const shared = (a: Set<string>, text: string) => [...words(text)].filter((word) => a.has(word)).length

/** The scripted agent's next step, from the question and the tool results in the request alone. */
function policy(request: RecordedRequest): string {
  const messages = (request.body as { messages: Message[] }).messages
  const question = [...messages].reverse().find((m) => m.role === 'user')!.content!
  const asked = words(question)
  const calls = new Map(messages.flatMap((m) => (m.tool_calls ?? []).map((call) => [call.id, { name: call.function.name, args: JSON.parse(call.function.arguments) as Record<string, unknown> }] as const)))
  const results = messages.filter((m) => m.role === 'tool').map((m) => ({ ...calls.get(m.tool_call_id!)!, result: JSON.parse(m.content!) as Record<string, unknown> }))
  const step = messages.filter((m) => m.role === 'assistant').length
  const callTools = (list: Array<{ name: string; arguments: Record<string, unknown> }>) => toolCallsSse(list.map((call, i) => ({ id: `call_${step}_${i}`, ...call })))
  const listing = results.find((r) => r.name === 'ls')?.result as
    | { entries: Array<{ name: string; kind: string; uri: string }>; abstract?: { stale: boolean }; overview?: { uri: string; stale: boolean } }
    | undefined
  if (listing === undefined) return callTools([{ name: 'ls', arguments: {} }])
  const reads = results.filter((r) => r.name === 'read').map((r) => r.result as { uri: string; text: string; layer?: unknown })
  const sources = reads.filter((read) => read.layer === undefined)
  if (sources.length === 0) {
    const overviewUri = listing.overview !== undefined && !listing.overview.stale ? listing.overview.uri : undefined
    if (overviewUri !== undefined) {
      const overview = reads.find((read) => read.uri === overviewUri)
      if (overview === undefined) return callTools([{ name: 'read', arguments: { uri: overviewUri } }])
      // The one relevant file: named in the overview's sentence that shares most words with the question.
      const named = [...overview.text.matchAll(/^- [^:]+: (kb:\/\/\S+) \(summary:/gm)].map((match) => match[1]!)
      const sentences = overview.text.split(/(?<=[.!?])\s+|\n+/).sort((a, b) => shared(asked, b) - shared(asked, a))
      const target = sentences.flatMap((sentence) => named.filter((uri) => sentence.includes(uri.split('/').at(-1)!)))[0]
      if (target !== undefined) return callTools([{ name: 'read', arguments: { uri: target } }])
    }
    return callTools(listing.entries.filter((entry) => entry.kind === 'file').map((entry) => ({ name: 'read', arguments: { uri: entry.uri } })))
  }
  const best = sources
    .flatMap((read) => read.text.split(/(?<=[.!?])\s+|\n+/).map((sentence) => ({ sentence, uri: read.uri })))
    .sort((a, b) => shared(asked, b.sentence) - shared(asked, a.sentence))[0]!
  return textAnswerSse(`${best.sentence.trim()} (${best.uri})`)
}

describe('a compiled folder answers with fewer tool calls', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer())
    alice = await addUserWithToken(server, 'alice')
    for (const folder of ['compiled', 'plain']) {
      for (const [name, text] of Object.entries(FILES)) await putText(server.database.db, { owner: alice.user, segments: [folder, name], text })
    }
    await writeCompiledFolder(server.database.db, {
      owner: alice.user,
      folder: ['compiled'],
      summaries: {
        ...Object.fromEntries(Object.entries(FILES).map(([name, text]) => [name, text.split('\n\n')[1]!.trim()])),
        'expenses.md': 'Reimbursement deadlines and meal limits.', // words its source does not use
      },
      overview:
        'The team handbook. Hotel caps per night and city are in hotels.md. Receipts and meal caps are in expenses.md. The pager at night is pager.md. ' +
        'Leave is in holidays.md; first days in onboarding.md; laptop replacement in laptops.md; keys and passwords in security.md; meeting rules in meetings.md.',
      abstract: 'A team handbook: travel and hotel caps, expenses, the pager, leave, onboarding, laptops, security and meetings.',
    })
    provider.setHandler((request) => ({ kind: 'stream', chunks: [{ bytes: policy(request) }] }))
  })
  afterAll(() => close?.())

  const ask = async (folder: string) => {
    const response = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `kb://me/${folder}/`, model_id: 'remote', message: QUESTION }),
    })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    expect(events.at(-1)!.event).toBe('done')
    const starts = events.filter((event) => event.event === 'tool' && event.data['phase'] === 'start').map((event) => `${event.data['name']} ${JSON.stringify(event.data['arguments'])}`)
    const answer = events.filter((event) => event.event === 'delta').map((event) => event.data['text']).join('')
    return { starts, answer }
  }

  it('reaches the same answer with 3 tool calls instead of 9', async () => {
    const compiled = await ask('compiled')
    const plain = await ask('plain')
    expect(compiled.answer).toBe('The hotel cap is 220 EUR per night in London and 190 EUR per night in Paris. (kb://users/alice/compiled/hotels.md)')
    expect(plain.answer).toBe('The hotel cap is 220 EUR per night in London and 190 EUR per night in Paris. (kb://users/alice/plain/hotels.md)')
    expect(compiled.starts).toEqual(['ls {}', 'read {"uri":"kb://users/alice/compiled/.overview.md"}', 'read {"uri":"kb://users/alice/compiled/hotels.md"}'])
    expect(plain.starts).toHaveLength(1 + 8) // ls, then every file
    expect(compiled.starts.length).toBeLessThan(plain.starts.length)
  })

  it('search through POST command and Ctrl+K count and rank the sources first, one result per source', async () => {
    const command = await fetch(`${server.url}/api/v1/knowledge-agent/command`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'search', uri: 'kb://me/compiled/', query: 'hotel cap' }),
    })
    expect(command.status).toBe(200)
    const search = (await command.json()) as { result: { files_scanned: number; layer_pages_scanned: number; hits: Array<{ uri: string; layer?: { kind: string } }> } }
    expect(search.result.files_scanned).toBe(8)
    expect(search.result.layer_pages_scanned).toBe(10)
    expect(search.result.hits[0]!.uri).toBe('kb://users/alice/compiled/hotels.md')
    expect(search.result.hits.map((hit) => hit.uri)).not.toContain('kb://users/alice/compiled/summaries/hotels.md')

    const api = (await (await fetch(`${server.url}/api/v1/workspace/search?q=${encodeURIComponent('hotel caps')}`, { headers: { authorization: `Bearer ${alice.token}` } })).json()) as {
      hits: Array<{ uri: string; layer?: { kind: string; of: string } }>
    }
    const uris = api.hits.map((hit) => hit.uri)
    // hotels.md matches by name: its summary (which matches by name and text) is no result of its own.
    expect(uris.filter((uri) => uri.includes('hotels.md')).sort()).toEqual(['kb://users/alice/compiled/hotels.md', 'kb://users/alice/plain/hotels.md'])
    const layerAt = api.hits.findIndex((hit) => hit.layer !== undefined)
    expect(api.hits.slice(layerAt).every((hit) => hit.layer !== undefined)).toBe(true)
    expect(api.hits.find((hit) => hit.uri.endsWith('/compiled/.overview.md'))?.layer).toEqual({ kind: 'overview', of: 'kb://users/alice/compiled/' })

    const session = await signIn(server, 'alice', alice.password)
    const html = await (await fetch(`${server.url}/workspace/search?q=${encodeURIComponent('hotel caps')}`, { headers: { cookie: session.cookie, 'hx-request': 'true' } })).text()
    expect(html).toContain('overview of kb://users/alice/compiled/')
    expect(html.indexOf('overview of')).toBeGreaterThan(html.indexOf('kb://users/alice/plain/hotels.md'))
    // A summary whose source does not match stands in for it, shown as the summary of that source.
    const deadlines = await (await fetch(`${server.url}/workspace/search?q=${encodeURIComponent('reimbursement deadlines')}`, { headers: { cookie: session.cookie, 'hx-request': 'true' } })).text()
    expect(deadlines).toContain('summary of kb://users/alice/compiled/expenses.md')
  })
})
