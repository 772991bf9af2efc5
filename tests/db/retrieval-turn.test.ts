// The catalog through real turns: the turn machine places the `retrieval-catalog` block after the
// system prompt before every step (once, never duplicated), the model calls kb_search with an id
// from it, and the next turn — whose history carries no system messages — gets it again.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { silentLogger } from '../../src/effects/logging/logger.ts'
import { resolveBailianConfig } from '../../src/effects/retrieval/bailian-config.ts'
import { makeRetrievalFeature, type RetrievalFeature } from '../../src/effects/retrieval/retrieval-feature.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { composePreStepHooks } from '../../src/effects/turn/pre-step-hooks.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { type ChatMessage, readContextBlock, type TurnEmitted } from '../../src/machines/index.ts'
import { type FakeBailian, startFakeBailian } from '../support/fake-bailian.ts'
import { createScriptedModel, textResult, toolCall, toolCallsResult } from '../support/scripted-model.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

const SECRET = 'retrieval-turn-secret-0123456789'
const KEY = 'sk-turn-bailian-key'
let database: TestDatabase
let fake: FakeBailian
let user: User
let feature: RetrievalFeature

beforeAll(async () => {
  database = await openTestDatabase('postgres')
  fake = await startFakeBailian({
    workspaces: {
      'ws-turn': {
        apiKey: KEY,
        services: [
          { agent_id: 'search-hr', agent_name: 'HR handbook search', scene: 'search' },
          { agent_id: 'chat-hr', agent_name: 'HR Q&A', scene: 'chat' },
        ],
      },
    },
  })
  user = await createUser(database.db, { login: 'tess', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
  feature = makeRetrievalFeature({
    config: resolveBailianConfig({ endpointHost: fake.endpointHost }),
    db: database.db,
    secret: SECRET,
    env: {},
    logger: silentLogger,
    listenConnection: { connectionString: database.url },
    blConfigPath: null,
  })!
  await feature.settings.setApiKey(user.id, KEY)
  await feature.settings.saveSettings(user.id, { workspaceId: 'ws-turn' })
  expect(await feature.refresher.refresh({ userId: user.id, workspaceId: 'ws-turn', reason: 'force' })).toEqual({ ok: true })
})
afterAll(async () => {
  await feature?.close()
  await fake?.close()
  await database?.close()
})

const catalogBlocks = (messages: ReadonlyArray<ChatMessage>) =>
  messages.flatMap((message, index) => {
    const block = readContextBlock(message)
    return block?.source === 'retrieval-catalog' ? [{ index, content: block.content }] : []
  })

test('the model sees the catalog before every step, calls kb_search with an id from it, and the next turn sees it again', async () => {
  const seen: Array<ReadonlyArray<ChatMessage>> = []
  const model = createScriptedModel({
    script: (request, callIndex) => {
      seen.push(request.messages)
      if (callIndex === 0) return { kind: 'result', result: toolCallsResult([toolCall({ id: 'call_kb1', name: 'kb_search', args: { query: 'leave days', agent_id: 'search-hr', top_k: 2 } })]) }
      return { kind: 'result', deltas: ['Twenty days.'], result: textResult('Twenty days.') }
    },
  })
  const tools = makeToolRegistry([...WORKSPACE_TOOLS, ...feature.tools])
  const run = (history: ReadonlyArray<ChatMessage>, events: TurnEmitted[]) =>
    runTurn({
      db: database.db,
      caller: user,
      model,
      tools,
      turnId: randomUUID(),
      uri: 'kb://me/',
      question: 'How many days of leave?',
      history,
      onEvent: (event) => events.push(event),
      signal: new AbortController().signal,
      preStep: composePreStepHooks([feature.preStep]),
    })

  const events: TurnEmitted[] = []
  const first = await run([], events)
  expect(first.status).toBe('done')
  expect(seen).toHaveLength(2)
  for (const messages of seen) {
    const blocks = catalogBlocks(messages)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]!.index).toBe(1) // right after the system prompt, before the history
    expect(blocks[0]!.content).toContain('- search-hr: HR handbook search')
  }
  const toolEnd = events.find((event) => event.type === 'tool' && event.phase === 'end') as { ok: boolean; summary: string }
  expect(toolEnd).toMatchObject({ ok: true, summary: '2 passages from search-hr (best: doc-1.md)' })
  expect(fake.requestsFor('search').at(-1)?.body).toEqual({ agent_id: 'search-hr', query: 'leave days' })
  expect(catalogBlocks(first.messages)).toEqual([]) // the history carried on holds no block

  const second = await run(first.messages, [])
  expect(second.status).toBe('done')
  expect(catalogBlocks(seen[2]!)).toHaveLength(1)
  // The tool schemas the model got are static: no service id in them.
  expect(JSON.stringify(model.requests[0]!.tools)).not.toContain('search-hr')
})
