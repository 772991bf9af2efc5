// A streamed turn's admission in one statement on a real PostgreSQL (issue 10, "fast turn start"):
// the node as the store resolves it, the stream slot and the turn's `running` row, written only
// together, and nothing written for a path with no node or a full window.
import { randomUUID } from 'node:crypto'
import type { KyselyPlugin } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiTokenFor, createUser, type User } from '../../src/effects/auth/users.ts'
import { hashToken } from '../../src/effects/auth/tokens.ts'
import { admitTurn, type TurnAdmissionInput } from '../../src/effects/turn/turn-admission.ts'
import { findTurn } from '../../src/effects/turn/turn-records.ts'
import { resolveNode } from '../../src/effects/workspace/resolve.ts'
import type { Db } from '../../src/effects/db/schema.ts'
import { openTestDatabase, synchronousCommitAround, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'
import { putText } from '../support/text-file.ts'

const SECRET = 'test-secret-for-token-hashes-0123456789'
let database: TestDatabase
let alice: User
beforeAll(async () => {
  database = await openTestDatabase('postgres')
  alice = await createUser(database.db, { login: 'alice', password: 'alice-password-123', hashCost: TEST_PASSWORD_COST })
  const text = '# Plan\nShip it.'
  await putText(database.db, { owner: alice, segments: ['docs', 'plan.md'], text })
})
afterAll(async () => {
  await database?.close()
})

/** Counts the statements run through it. */
function counting(): { readonly plugin: KyselyPlugin; count: () => number } {
  let statements = 0
  return {
    count: () => statements,
    plugin: {
      transformQuery: ({ node }) => {
        statements += 1
        return node
      },
      transformResult: async ({ result }) => result,
    },
  }
}

const hitsOf = async (key: string): Promise<number> => {
  const row = await database.db.selectFrom('rate_limit_hits').select('hits').where('key', '=', key).executeTakeFirst()
  return row?.hits.length ?? 0
}

function admission(overrides: { path?: string; key?: string; limit?: number; now?: number; turnId?: string } = {}): TurnAdmissionInput {
  return {
    caller: alice,
    path: overrides.path ?? 'docs/plan.md',
    turn: { id: overrides.turnId ?? randomUUID(), uri: 'kb://me/docs/plan.md', modelId: 'local', instanceId: null },
    slot: { key: overrides.key ?? `stream:${randomUUID()}`, limit: overrides.limit ?? 5, windowMs: 60_000, now: overrides.now ?? 1_000_000 },
  }
}

describe('a turn admitted in one statement', () => {
  it('returns the node as the store resolves it, takes the slot and records the turn running, in one statement', async () => {
    const log = counting()
    const input = admission()
    const result = await admitTurn(database.db.withPlugin(log.plugin) as Db, input)
    expect(log.count()).toBe(1)
    const { node } = await resolveNode(database.db, { caller: alice, uri: 'kb://me/docs/plan.md' })
    expect(result).toEqual({ kind: 'admitted', node })
    expect(node).toMatchObject({ kind: 'file', uri: 'kb://users/alice/docs/plan.md', mime: 'text/markdown', size: 15 })
    expect(await findTurn(database.db, input.turn.id)).toMatchObject({ status: 'running', user_id: alice.id, uri: 'kb://me/docs/plan.md', model_id: 'local', instance_id: null })
    expect(await hitsOf(input.slot.key)).toBe(1)
  })

  it("the caller's root and a directory resolve as the store resolves them", async () => {
    for (const [path, uri] of [['', 'kb://me/'], ['docs', 'kb://me/docs/']] as const) {
      const result = await admitTurn(database.db, { ...admission({ path }) })
      expect(result).toEqual({ kind: 'admitted', node: (await resolveNode(database.db, { caller: alice, uri })).node })
    }
  })

  it('records the server instance that runs the turn', async () => {
    const instanceId = randomUUID()
    const input = admission()
    await admitTurn(database.db, { ...input, turn: { ...input.turn, instanceId } })
    expect(await findTurn(database.db, input.turn.id)).toMatchObject({ instance_id: instanceId })
  })

  it('a path with no node writes nothing: no slot taken, no turn', async () => {
    const input = admission({ path: 'docs/missing.md' })
    expect(await admitTurn(database.db, input)).toEqual({ kind: 'no-node' })
    expect(await hitsOf(input.slot.key)).toBe(0)
    expect(await findTurn(database.db, input.turn.id)).toBeUndefined()
  })

  it('another user\'s node of the same path is not found', async () => {
    const bob = await createUser(database.db, { login: 'bob', password: 'bob-password-1234', hashCost: TEST_PASSWORD_COST })
    const input = admission()
    expect(await admitTurn(database.db, { ...input, caller: bob })).toEqual({ kind: 'no-node' })
    expect(await findTurn(database.db, input.turn.id)).toBeUndefined()
  })

  it('a full window writes no turn and no hit, and says how long until a slot frees', async () => {
    const key = `stream:${randomUUID()}`
    expect((await admitTurn(database.db, admission({ key, limit: 2, now: 2_000_000 }))).kind).toBe('admitted')
    expect((await admitTurn(database.db, admission({ key, limit: 2, now: 2_010_000 }))).kind).toBe('admitted')
    const refused = admission({ key, limit: 2, now: 2_020_000 })
    expect(await admitTurn(database.db, refused)).toEqual({ kind: 'limited', waitMs: 40_000 })
    expect(await findTurn(database.db, refused.turn.id)).toBeUndefined()
    expect(await hitsOf(key)).toBe(2)
    // the first hit leaves the window: a slot again
    expect((await admitTurn(database.db, admission({ key, limit: 2, now: 2_060_000 }))).kind).toBe('admitted')
  })

  it('of many concurrent admissions exactly `limit` are admitted, each with its row', async () => {
    const key = `stream:${randomUUID()}`
    const inputs = Array.from({ length: 30 }, () => admission({ key, limit: 7, now: 3_000_000 }))
    const results = await Promise.all(inputs.map((input) => admitTurn(database.db, input)))
    const admitted = inputs.filter((_, i) => results[i]!.kind === 'admitted')
    expect(admitted).toHaveLength(7)
    expect(results.filter((r) => r.kind === 'limited')).toHaveLength(23)
    const rows = await database.db.selectFrom('turns').select('id').where('id', 'in', inputs.map((i) => i.turn.id)).execute()
    expect(rows.map((r) => r.id).sort()).toEqual(admitted.map((i) => i.turn.id).sort())
  })

  it("turns off waiting for the flush for its own transaction only: the connection's setting is unchanged after it", async () => {
    const settings = await synchronousCommitAround(database.db, async (db) => {
      expect((await admitTurn(db, admission())).kind).toBe('admitted')
    })
    expect(settings).toEqual(['on', 'on'])
  })

  it("with a bearer token nothing has checked yet, it writes only while the token is the caller's and live", async () => {
    const live = await createApiTokenFor(database.db, { secret: SECRET, login: 'alice' })
    const admitted = admission()
    expect((await admitTurn(database.db, { ...admitted, tokenHash: hashToken({ secret: SECRET, token: live }) })).kind).toBe('admitted')
    expect(await findTurn(database.db, admitted.turn.id)).toMatchObject({ status: 'running' })

    const carol = await createUser(database.db, { login: 'carol', password: 'carol-password-123', hashCost: TEST_PASSWORD_COST })
    const othersToken = hashToken({ secret: SECRET, token: await createApiTokenFor(database.db, { secret: SECRET, login: 'carol' }) })
    const revoked = await createApiTokenFor(database.db, { secret: SECRET, login: 'alice' })
    await database.db.updateTable('api_tokens').set({ revoked_at: new Date() }).where('token_hash', '=', hashToken({ secret: SECRET, token: revoked })).execute()
    for (const tokenHash of [hashToken({ secret: SECRET, token: revoked }), othersToken, hashToken({ secret: SECRET, token: 'ka_never_issued' })]) {
      const refused = admission()
      expect(await admitTurn(database.db, { ...refused, tokenHash })).toEqual({ kind: 'bad-token' })
      expect(await findTurn(database.db, refused.turn.id)).toBeUndefined()
      expect(await hitsOf(refused.slot.key)).toBe(0)
    }
    expect(carol.id).not.toBe(alice.id)
  })

  it('a turn id already recorded fails the whole statement: the slot is not taken', async () => {
    const first = admission()
    await admitTurn(database.db, first)
    const again = admission({ turnId: first.turn.id })
    await expect(admitTurn(database.db, again)).rejects.toThrow(/duplicate key/)
    expect(await hitsOf(again.slot.key)).toBe(0)
  })
})
