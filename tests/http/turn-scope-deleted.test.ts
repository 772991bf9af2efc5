// A turn whose scope is deleted while it runs (issue 14): the next tool call re-reads the scope and
// gets the "target deleted" tool error (`not_found`), never the content that was there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSseEvents } from '../support/sse-frames.ts'
import { textAnswerSse, toolCallsSse, type ScriptedProvider } from '../support/scripted-provider.ts'
import { startScriptedServer } from '../support/scripted-server.ts'
import { addUserWithToken, type TestServer } from '../support/test-server.ts'
import { putText } from '../support/text-file.ts'

describe('a turn whose scope is deleted', () => {
  let provider: ScriptedProvider
  let server: TestServer
  let close: (() => Promise<void>) | undefined
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  beforeAll(async () => {
    ;({ server, provider, close } = await startScriptedServer())
    alice = await addUserWithToken(server, 'alice')
    await putText(server.database.db, { owner: alice.user, segments: ['doomed', 'secret.md'], text: 'stale content' })
  })
  afterAll(() => close?.())

  it('ends the tool call with not_found once the folder is deleted mid-turn', async () => {
    let release!: () => void
    const deleted = new Promise<void>((resolve) => (release = resolve))
    let arrived!: () => void
    const modelCalled = new Promise<void>((resolve) => (arrived = resolve))
    // The model's first step asks to read the file, but only after the test has deleted its folder.
    provider.setHandler((request) => {
      if (request.index === 0) {
        arrived()
        return { kind: 'stream', chunks: [{ bytes: toolCallsSse([{ id: 'call_1', name: 'read', arguments: { uri: 'kb://me/doomed/secret.md' } }]), after: deleted }] }
      }
      return { kind: 'stream', chunks: [{ bytes: textAnswerSse('The folder is gone.') }] }
    })
    const response = await fetch(`${server.url}/api/v1/knowledge-agent/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'kb://me/doomed/', model_id: 'remote', message: 'What is in the secret file?' }),
    })
    expect(response.status).toBe(200)
    const reading = readSseEvents(response)
    await modelCalled
    const removal = await fetch(`${server.url}/api/v1/workspace/node?uri=${encodeURIComponent('kb://me/doomed/')}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${alice.token}` },
    })
    expect(removal.status).toBe(200)
    release()
    const { events } = await reading
    const toolEnd = events.find((event) => event.event === 'tool' && (event.data as { phase: string }).phase === 'end')!.data as { ok: boolean; summary: string }
    expect(toolEnd.ok).toBe(false)
    expect(toolEnd.summary).toMatch(/not_found|does not exist/)
    const done = events.at(-1)!
    expect(done.event).toBe('done')
    const history = (done.data as { history: Array<{ role: string; content: string | null }> }).history
    const toolMessage = history.find((message) => message.role === 'tool')!
    expect(JSON.parse(toolMessage.content!)).toMatchObject({ error: { code: 'not_found' } })
    expect(JSON.stringify(events)).not.toContain('stale content')
    // The second model call saw the error, not the file.
    expect(JSON.stringify(provider.requests[1]!.body)).toContain('not_found')
  })
})
