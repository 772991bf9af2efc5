// The pre-step slot end to end: a hook registered in the app runs before every model step of a
// streamed turn; its source-tagged block reaches the provider right after the system prompt, is
// replaced in place when it changes, never enters a compaction request, and is still in place
// after compaction. The hook sees the caller.
import * as Effect from 'effect/Effect'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isCompactionRequest, type ChatMessage, type PreStepInput } from '../../src/machines/index.ts'
import type { PreStepHook } from '../../src/effects/turn/pre-step-hooks.ts'
import { readSseEvents, terminalEvents } from '../support/sse-frames.ts'
import { streamScript, textAnswerSse, toolCallsSse, type ScriptedProvider, scriptedModel } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

const BLOCK_HEADER = '[knowagent:context source="test-catalog"]'

describe('the pre-step slot over HTTP', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let token: string
  const seen: Array<{ login: string; input: PreStepInput }> = []
  const hook: PreStepHook = ({ caller, input }) =>
    Effect.sync(() => {
      seen.push({ login: caller.login, input })
      const content = `services for ${caller.login}: ${input.step < 3 ? 'v1' : 'v2'}`
      const visible = input.visibleBlocks.find((block) => block.source === 'test-catalog')
      return visible?.content === content ? {} : { blocks: [{ source: 'test-catalog', content }] }
    })

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer({
      preStep: hook,
      // a small window: every tool result of 2,000 characters pushes the input over it
      models: (provider) => [scriptedModel(provider, { id: 'small', name: 'Small', contextWindow: 9_600, maxOutputTokens: 1_000 })],
    }))
    token = (await addUserWithToken(server, 'rhea')).token
    const { findUserByLogin } = await import('../../src/effects/auth/users.ts')
    const rhea = (await findUserByLogin(server.database.db, 'rhea'))!
    const text = 'evidence '.repeat(230)
    for (const n of [1, 2, 3]) await putText(server.database.db, { owner: rhea, segments: ['docs', `f${n}.md`], text })
  })
  afterAll(() => close?.())

  it('places, replaces and keeps its block across compaction', async () => {
    let step = 0
    provider.setHandler((request) => {
      const messages = (request.body as { messages: ChatMessage[] }).messages
      if (isCompactionRequest(messages)) return streamScript(textAnswerSse('Read f1, f2 and f3 in kb://users/rhea/docs/.'))
      step++
      return step <= 3
        ? streamScript(toolCallsSse([{ id: `call_${step}`, name: 'read', arguments: { uri: `kb://me/docs/f${step}.md` } }]))
        : streamScript(textAnswerSse('done reading'))
    })
    const res = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/docs/', model_id: 'small', message: 'Read the three files.' }),
    })
    const { events } = await readSseEvents(res)
    expect(terminalEvents(events).map((e) => e.event), JSON.stringify(events.at(-1))).toEqual(['done'])

    const requests = provider.requests.map((r) => (r.body as { messages: ChatMessage[] }).messages)
    const compactions = requests.filter((messages) => isCompactionRequest(messages))
    const steps = requests.filter((messages) => !isCompactionRequest(messages))
    expect(compactions.length).toBeGreaterThan(0)
    expect(steps).toHaveLength(4)
    for (const messages of compactions) expect(JSON.stringify(messages)).not.toContain('test-catalog')
    steps.forEach((messages, index) => {
      expect(messages[0]!.role).toBe('system')
      expect(messages[1]).toEqual({ role: 'system', content: `${BLOCK_HEADER}\nservices for rhea: ${index < 2 ? 'v1' : 'v2'}` })
      expect(messages.filter((m) => m.role === 'system' && m.content.startsWith('[knowagent:context')).length).toBe(1)
    })
    expect(seen.map((s) => s.login)).toEqual(['rhea', 'rhea', 'rhea', 'rhea'])
    expect(seen.map((s) => s.input.step)).toEqual([1, 2, 3, 4])
    expect(seen[0]!.input.visibleBlocks).toEqual([])
  })
})
