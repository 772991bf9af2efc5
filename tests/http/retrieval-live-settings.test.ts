// The server-wide Bailian connection settings change while the servers run (issue 33, item 6):
// `knowagent retrieval set` stores endpointHost, agentVersion or chatTimeoutMs in PostgreSQL and
// NOTIFYs every process, and the next call of either server (two "processes" on one database) uses
// the new value. Before, they were read from the config file at start-up: a change took a restart
// of every server. A bad value is refused with a message and the last good one stays in force.
import * as Effect from 'effect/Effect'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import type { AppConfig } from '../../src/effects/config/app-config.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { type FakeBailian, type FakeService, stalledChat, startFakeBailian } from '../support/fake-bailian.ts'
import { addUserWithToken, startTestServer, TEST_SECRET, type TestServer } from '../support/test-server.ts'
import { waitUntil } from '../support/wait-until.ts'

const KEY = 'sk-live-settings-7b7b'
const WORKSPACE = 'ws-live'
const SERVICES: FakeService[] = [
  { agent_id: 'search-docs', agent_name: 'Docs search', scene: 'search' },
  { agent_id: 'chat-docs', agent_name: 'Docs Q&A', scene: 'chat' },
]

describe('retrieval connection settings without a restart', () => {
  let before: FakeBailian
  let after: FakeBailian
  let first: TestServer
  let second: TestServer
  let alice: Awaited<ReturnType<typeof addUserWithToken>>

  /** `knowagent …` as an operator runs it, against the servers' database. */
  const cli = async (...argv: string[]) => {
    const out: string[] = []
    const err: string[] = []
    const env = { DATABASE_URL: first.database.url, KNOWAGENT_SECRET: TEST_SECRET, KNOWAGENT_DATA_DIR: '/nonexistent' }
    const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line), env })
    return { code, out: out.join('\n'), err: err.join('\n') }
  }
  const retrieval = (server: TestServer) => server.ctx.retrieval!
  const inForce = (server: TestServer) => retrieval(server).settings.resolve(alice.user.id)
  const search = (server: TestServer) => Effect.runPromise(retrieval(server).calls.search({ caller: alice.user, query: 'queue', agentId: 'search-docs' }))
  const searchBodies = (fake: FakeBailian) => fake.requestsFor('search').map((request) => request.body as Record<string, unknown>)

  beforeAll(async () => {
    before = await startFakeBailian({ workspaces: { [WORKSPACE]: { apiKey: KEY, services: SERVICES } } })
    after = await startFakeBailian({ workspaces: { [WORKSPACE]: { apiKey: KEY, services: SERVICES } } })
    const configure = (config: AppConfig): AppConfig => ({ ...config, retrievalBailian: resolveBailianConfig({ endpointHost: before.endpointHost }) })
    first = await startTestServer({ retrieval: true, configure })
    second = await startTestServer({ retrieval: true, configure, databaseUrl: first.database.url })
    alice = await addUserWithToken(first, 'alice')
    await retrieval(first).settings.setApiKey(alice.user.id, KEY)
    await retrieval(first).settings.saveSettings(alice.user.id, { workspaceId: WORKSPACE })
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
    await after?.close()
    await before?.close()
  })

  it('a value set while both servers run is used by the next call of each', async () => {
    await search(first)
    await search(second)
    expect(searchBodies(before)).toHaveLength(2)
    expect(searchBodies(before).filter((body) => 'agent_version' in body)).toEqual([])

    const setHost = await cli('retrieval', 'set', 'endpointHost', after.endpointHost)
    expect(setHost).toMatchObject({ code: 0, err: '' })
    expect(setHost.out).toContain(`endpointHost = ${JSON.stringify(after.endpointHost)}  [stored in the database]`)
    expect((await cli('retrieval', 'set', 'agentVersion', 'beta')).code).toBe(0)
    for (const server of [first, second]) {
      await waitUntil(async () => {
        const settings = await inForce(server)
        return settings.endpointHost === after.endpointHost && settings.agentVersion === 'beta'
      }, 'the NOTIFY of the change to reach the server')
    }

    await search(second)
    await search(first)
    expect(searchBodies(before)).toHaveLength(2) // nothing more went to the old endpoint
    expect(searchBodies(after).map((body) => body['agent_version'])).toEqual(['beta', 'beta'])
  })

  it('refuses a bad value with a clear message; the last good value stays in force', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['endpointHost', 'ftp://files.example/{workspaceId}'], /endpointHost must be an http\(s\) address/],
      [['endpointHost', 'bad host/{workspaceId}'], /endpointHost must not contain spaces/],
      [['chatTimeoutMs', 'soon'], /chatTimeoutMs must be a whole number of milliseconds from 1000 to 3600000/],
      [['chatTimeoutMs', '0'], /chatTimeoutMs must be a whole number/],
      [['colour', 'red'], /unknown setting "colour"; the settings are workspaceId, endpointHost, agentVersion, chatTimeoutMs/],
    ]
    for (const [args, message] of cases) {
      const refused = await cli('retrieval', 'set', ...args)
      expect(refused.code, args.join(' ')).toBe(1)
      expect(refused.err).toMatch(message)
      expect(refused.err).toContain('nothing was changed')
    }
    expect((await cli('retrieval', 'show')).out).toContain(`endpointHost = ${JSON.stringify(after.endpointHost)}`)

    // a document edited by hand in SQL is decoded too: refused (and logged), the last good values stay
    const { db } = first.database
    await sql`update retrieval_server_settings set document = '{"endpointHost": "ftp://x/{workspaceId}", "chatTimeoutMs": -1}'::jsonb`.execute(db)
    await sql`select pg_notify('knowagent_retrieval_settings', '*server')`.execute(db)
    await waitUntil(async () => {
      await inForce(first)
      return first.logLines.some((line) => line.includes('the stored retrieval server settings are invalid'))
    }, 'the invalid document to be read and refused')
    expect(await inForce(first)).toMatchObject({ endpointHost: after.endpointHost, agentVersion: 'beta', chatTimeoutMs: 300_000 })
    await search(first)
    expect(searchBodies(after)).toHaveLength(3)

    // the operator's next write repairs it: the invalid keys are dropped, the new value applies
    expect((await cli('retrieval', 'set', 'endpointHost', after.endpointHost)).code).toBe(0)
    const shown = (await cli('retrieval', 'show')).out
    expect(shown).toContain('chatTimeoutMs = 300000  [built-in default]')
  })

  it('a shorter kb_chat time limit ends the next chat call; unset returns to the config file', async () => {
    expect((await cli('retrieval', 'set', 'chatTimeoutMs', '1000')).code).toBe(0)
    await waitUntil(async () => (await inForce(second)).chatTimeoutMs === 1000, 'the new chat time limit')
    after.enqueue('chat', stalledChat())
    const exit = await Effect.runPromiseExit(retrieval(second).calls.ask({ caller: alice.user, question: 'How do retries work?', agentId: 'chat-docs' }))
    expect(JSON.stringify(exit)).toContain('retrieval.timeout')

    expect((await cli('retrieval', 'unset', 'endpointHost')).code).toBe(0)
    await waitUntil(async () => (await inForce(second)).endpointHost === before.endpointHost, 'the config file value back in force')
    await search(second)
    expect(searchBodies(before)).toHaveLength(3)
  })
})
