// A turn's start on a real PostgreSQL (issue 10, "fast turn start"): the queries before the
// model is asked, the turn's row written beside the model call yet always before its outcome,
// and a turn whose row cannot be written failing as a crash.
import { randomUUID } from 'node:crypto'
import type { KyselyPlugin, RootOperationNode } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { runTurn } from '../../src/effects/turn/run-turn.ts'
import { findTurn, recordTurnStarted } from '../../src/effects/turn/turn-records.ts'
import { resolveNode } from '../../src/effects/workspace/resolve.ts'
import { makeToolRegistry } from '../../src/effects/tools/tool-registry.ts'
import { WORKSPACE_TOOLS } from '../../src/effects/tools/workspace-tools.ts'
import { createScriptedModel, textResult } from '../support/scripted-model.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

/** Records, in order, the kind and first table of every query run through it. */
function queryLog(): { readonly plugin: KyselyPlugin; readonly entries: string[] } {
  const entries: string[] = []
  const tableOf = (node: RootOperationNode): string => {
    const json = JSON.stringify(node)
    return /"TableNode".*?"IdentifierNode","name":"(\w+)"/.exec(json)?.[1] ?? '?'
  }
  return {
    entries,
    plugin: {
      transformQuery: ({ node }) => {
        entries.push(`${node.kind.replace('QueryNode', '').toLowerCase()} ${tableOf(node)}`)
        return node
      },
      transformResult: async ({ result }) => result,
    },
  }
}

const tools = makeToolRegistry(WORKSPACE_TOOLS)

describe('turn start (postgres)', () => {
  let database: TestDatabase
  let alice: User
  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    alice = await createUser(database.db, { login: 'alice', password: 'alice-password-123', hashCost: TEST_PASSWORD_COST })
  })
  afterAll(async () => {
    await database?.close()
  })

  const answer = () => createScriptedModel({ script: [{ kind: 'result', deltas: ['Hel', 'lo'], result: textResult('Hello') }] })

  it('resolving a user\'s root is one query (the root exists from the user\'s creation on)', async () => {
    const log = queryLog()
    const { node } = await resolveNode(database.db.withPlugin(log.plugin), { caller: alice, uri: 'kb://me/' })
    expect(node.uri).toBe('kb://users/alice/')
    expect(log.entries).toEqual(['select nodes'])
  })

  it('with the scope the host admitted, the turn resolves nothing again: before the model only its row is written', async () => {
    const log = queryLog()
    const db = database.db.withPlugin(log.plugin)
    const { node } = await resolveNode(database.db, { caller: alice, uri: 'kb://me/' })
    const model = createScriptedModel({
      script: (request) => {
        log.entries.push('model')
        expect(request.messages[0]!.content).toContain('The selected directory is kb://users/alice/')
        return { kind: 'result', deltas: ['Hel', 'lo'], result: textResult('Hello') }
      },
    })
    const turnId = randomUUID()
    const output = await runTurn({ db, caller: alice, model, tools, turnId, uri: 'kb://me/', scope: node, question: 'hi', history: [], onEvent: () => undefined, signal: new AbortController().signal })
    expect(output.status).toBe('done')
    expect(log.entries).toEqual(['insert turns', 'model', 'update turns'])
    expect(await findTurn(database.db, turnId)).toMatchObject({ status: 'done', user_id: alice.id, uri: 'kb://me/' })
  })

  it('without it, prepare resolves the URI itself', async () => {
    const log = queryLog()
    const output = await runTurn({ db: database.db.withPlugin(log.plugin), caller: alice, model: answer(), tools, turnId: randomUUID(), uri: 'kb://me/', question: 'hi', history: [], onEvent: () => undefined, signal: new AbortController().signal })
    expect(output.status).toBe('done')
    expect(log.entries.filter((entry) => entry === 'select nodes')).toHaveLength(1)
  })

  it('a turn whose row cannot be written fails with that error (a crash for the stream) and leaves the existing row alone', async () => {
    const turnId = randomUUID()
    await recordTurnStarted(database.db, { id: turnId, userId: alice.id, uri: 'kb://me/other', modelId: 'earlier' })
    await expect(
      runTurn({ db: database.db, caller: alice, model: answer(), tools, turnId, uri: 'kb://me/', question: 'hi', history: [], onEvent: () => undefined, signal: new AbortController().signal }),
    ).rejects.toThrow(/duplicate key/)
    expect(await findTurn(database.db, turnId)).toMatchObject({ status: 'running', uri: 'kb://me/other', model_id: 'earlier' })
  })
})
