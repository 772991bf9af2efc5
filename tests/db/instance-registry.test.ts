// Turns left running by a dead server process are closed as `turn.interrupted`, each with its
// terminal event stored (issue 38); a live process's turns are never touched, even by a process
// starting beside it on the same database. An instance whose lease lapsed (a frozen host whose
// connection PostgreSQL still believes in) counts as dead, and registers again when it wakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { registerInstance } from '../../src/effects/turn/instance-registry.ts'
import { createLiveTurns, type TurnRunHost } from '../../src/effects/turn/live-turns.ts'
import { createLogger } from '../../src/effects/logging/logger.ts'
import type { TurnOutput } from '../../src/machines/index.ts'
import { waitUntil } from '../support/wait-until.ts'
import { findTurn, INSTANCE_LOCK_CLASS, recordTurnStarted } from '../../src/effects/turn/turn-records.ts'
import { readTurnEvents } from '../../src/effects/turn/stored-turn-events.ts'
import { INTERRUPTED_TERMINAL_SEQ, numberedEvent } from '../../src/effects/turn/turn-events.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

let database: TestDatabase
let user: User
beforeAll(async () => {
  database = await openTestDatabase('postgres')
  user = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
})
afterAll(async () => {
  await database?.close()
})

const register = () => registerInstance({ db: database.db, connection: { connectionString: database.url! }, sweepIntervalMs: 3_600_000 })

async function startTurn(instanceId: string | undefined): Promise<string> {
  const id = randomUUID()
  await recordTurnStarted(database.db, { id, userId: user.id, uri: 'kb://me/', modelId: 'local', instanceId })
  return id
}
const statusOf = async (id: string) => {
  const turn = await findTurn(database.db, id)
  return turn?.status === 'failed' ? `failed:${turn.error_code}` : turn?.status
}

/** What a crash looks like to PostgreSQL: the process's connections are gone. */
async function killLockConnection(instanceId: string): Promise<void> {
  await sql`
    select pg_terminate_backend(l.pid, 10000) from pg_locks l join instances i on l.objid = i.lock_key::oid
     where l.locktype = 'advisory' and l.classid = ${INSTANCE_LOCK_CLASS}::oid and l.objsubid = 2 and i.id = ${instanceId}`.execute(database.db)
}

const lockConnections = async () =>
  Number(
    (await sql<{ n: string }>`select count(*) as n from pg_stat_activity where application_name like 'knowagent instance %'`.execute(database.db)).rows[0]!.n,
  )

/** A model step that has said "Working" and goes on until stopped (`stops` gets `<turn>:<reason>`). */
const runUntilStoppedInto = (stops: string[], id: string) => ({ signal, onEvent, recordOutcome }: TurnRunHost): Promise<TurnOutput> =>
  new Promise((resolve) => {
    onEvent({ type: 'delta', text: 'Working' })
    signal.addEventListener('abort', () => {
      stops.push(`${id}:${String(signal.reason)}`)
      void recordOutcome({ id, status: 'cancelled', error: { code: 'cancelled', message: 'stopped' } }).then(() =>
        resolve({ status: 'cancelled', messages: [], error: { code: 'cancelled', message: 'the turn was stopped' }, counters: { modelSteps: 1, modelCalls: 1, toolCalls: 0, compactions: 0 }, usage: {} }),
      )
    })
  })
const quietLogger = createLogger({ level: 'error', write: () => undefined })

describe('instance registry', () => {
  it('a starting instance closes only dead instances\' turns; the live one\'s keep running', async () => {
    const a = await register()
    const b = await register()
    const turnOfA = await startTurn(a.instanceId)
    const turnOfB = await startTurn(b.instanceId)
    const turnOfNeverSeen = await startTurn(randomUUID())
    const embeddedTurn = await startTurn(undefined) // no instance: closed only once an hour old

    await killLockConnection(b.instanceId) // b crashed
    const interrupted: string[] = []
    const c = await registerInstance({ db: database.db, connection: { connectionString: database.url! }, sweepIntervalMs: 3_600_000, onInterrupted: (models) => interrupted.push(...models) }) // a process starting beside a
    expect(interrupted).toEqual(['local', 'local']) // what /metrics counts as turns ended `interrupted`, by model
    expect(await statusOf(turnOfB)).toBe('failed:turn.interrupted')
    expect(await statusOf(turnOfNeverSeen)).toBe('failed:turn.interrupted')
    expect(await statusOf(turnOfA)).toBe('running')
    expect(await statusOf(embeddedTurn)).toBe('running')
    expect(await a.sweep()).toBe(0)
    const instances = await database.db.selectFrom('instances').select('id').execute()
    expect(instances.map((i) => i.id).sort()).toEqual([a.instanceId, c.instanceId].sort())

    await a.release() // a stopped: its connection closed
    expect(await c.sweep()).toBe(1)
    expect(await statusOf(turnOfA)).toBe('failed:turn.interrupted')
    const turnOfC = await startTurn(c.instanceId)
    expect(await c.sweep()).toBe(0)
    expect(await statusOf(turnOfC)).toBe('running')

    await c.release()
    await b.release() // already dead: releasing again is harmless
    expect(await lockConnections()).toBe(0)
  })

  it('an instance whose lock connection dropped takes its lock again on the next sweep', async () => {
    const a = await register()
    const turn = await startTurn(a.instanceId)
    await killLockConnection(a.instanceId)
    await a.sweep() // reconnects and locks again before looking at anyone else
    const b = await register()
    expect(await statusOf(turn)).toBe('running')
    await a.release()
    await b.release()
    expect(await lockConnections()).toBe(0)
  })

  it("an instance whose lease lapsed is dead to the others: its turns end turn.interrupted with the partial text stored; awake again, it registers anew", async () => {
    const a = await register()
    const b = await register()
    const frozen = await startTurn(b.instanceId)
    const events = [
      numberedEvent({ seq: 1, name: 'context', json: '{"used":1}' }),
      numberedEvent({ seq: 2, name: 'delta', json: '{"text":"Half an "}' }),
      numberedEvent({ seq: 3, name: 'delta', json: '{"text":"answer"}' }),
    ]
    const text = events.map((event) => event.frame).join('')
    await database.db.insertInto('turn_event_batches').values({ turn_id: frozen, first_seq: 1, last_seq: 3, events: text, bytes: text.length }).execute()
    await database.db.updateTable('instances').set({ heartbeat_at: sql<Date>`now() - interval '1 hour'` }).where('id', '=', b.instanceId).execute() // b froze
    expect(await a.sweep()).toBe(1)
    expect(await statusOf(frozen)).toBe('failed:turn.interrupted')
    const stored = await readTurnEvents(database.db, { turnId: frozen, after: 3 })
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({ seq: INTERRUPTED_TERMINAL_SEQ, name: 'error' }) // past anything b may have sent unstored
    expect(JSON.parse(stored[0]!.json)).toEqual({
      code: 'turn.interrupted',
      message: 'the server running this turn stopped (or lost its lease) before the turn finished',
      partial: 'Half an answer',
      turn_id: frozen,
    })
    expect(await a.sweep()).toBe(0) // once
    expect(await readTurnEvents(database.db, { turnId: frozen, after: 0 })).toHaveLength(4)

    await b.sweep() // b wakes: its row is gone, so it registers again (and locks the new key)
    const turnOfB = await startTurn(b.instanceId)
    expect(await a.sweep()).toBe(0)
    expect(await statusOf(turnOfB)).toBe('running')
    await a.release()
    await b.release()
    expect(await lockConnections()).toBe(0)
  })

  it('awake again, a lapsed instance ends the turns the others closed meanwhile with the terminal they stored (its clients and a resumed one read the same end); its other turns run on', async () => {
    const liveB = createLiveTurns({ db: database.db, feed: undefined, logger: quietLogger, retention: { seconds: 3600, maxBytes: 1e9 }, pruneIntervalMs: 3_600_000, flushMs: 5 })
    const lapses: number[] = []
    const a = await register()
    const b = await registerInstance({ db: database.db, connection: { connectionString: database.url! }, sweepIntervalMs: 3_600_000, onLapsed: async () => void lapses.push(await liveB.endClosedElsewhere()) })
    const stops: string[] = []
    const runUntilStopped = (id: string) => runUntilStoppedInto(stops, id)
    const closedTurn = await startTurn(b.instanceId)
    const ends: Array<{ seq: number; code: unknown; partial: unknown }> = []
    const live = liveB.start({ turnId: closedTurn, graceMs: 60_000, run: runUntilStopped(closedTurn) })
    live.subscribe({ event: () => undefined, end: (numbered, terminal) => void ends.push({ seq: numbered.seq, code: terminal.type === 'error' ? terminal.code : 'done', partial: terminal.type === 'error' ? terminal.partial : undefined }) })
    await waitUntil(async () => (await readTurnEvents(database.db, { turnId: closedTurn, after: 0 })).length === 1, 'the delta stored') // "Working" is stored

    await database.db.updateTable('instances').set({ heartbeat_at: sql<Date>`now() - interval '1 hour'` }).where('id', '=', b.instanceId).execute() // b froze
    expect(await a.sweep()).toBe(1) // … and the others closed its turn
    const untouched = await startTurn(b.instanceId) // a turn b took while the others had not yet noticed
    const other = liveB.start({ turnId: untouched, graceMs: 60_000, run: runUntilStopped(untouched) })
    expect(stops).toEqual([])

    await b.sweep() // b wakes: registers again, then ends what was closed meanwhile
    expect(lapses).toEqual([1])
    expect(stops).toEqual([`${closedTurn}:shutdown`]) // its model call let go
    expect(ends).toEqual([{ seq: INTERRUPTED_TERMINAL_SEQ, code: 'turn.interrupted', partial: 'Working' }])
    const stored = await readTurnEvents(database.db, { turnId: closedTurn, after: 0 })
    expect(stored.map((event) => [event.seq, event.name])).toEqual([[1, 'delta'], [INTERRUPTED_TERMINAL_SEQ, 'error']]) // no second end stored
    expect(await statusOf(closedTurn)).toBe('failed:turn.interrupted')
    expect(liveB.get(untouched)).toBe(other)
    expect(await statusOf(untouched)).toBe('running')

    await b.sweep()
    expect(lapses).toEqual([1]) // once a lapse
    other.stop('user')
    await other.ended
    await liveB.close()
    await a.release()
    await b.release()
  })

  it('a frozen instance whose lock connection PostgreSQL dropped ends the same way once it locks again', async () => {
    const liveB = createLiveTurns({ db: database.db, feed: undefined, logger: quietLogger, retention: { seconds: 3600, maxBytes: 1e9 }, pruneIntervalMs: 3_600_000, flushMs: 5 })
    const a = await register()
    const b = await registerInstance({ db: database.db, connection: { connectionString: database.url! }, sweepIntervalMs: 3_600_000, onLapsed: () => liveB.endClosedElsewhere() })
    const stops: string[] = []
    const turn = await startTurn(b.instanceId)
    const ends: string[] = []
    const live = liveB.start({ turnId: turn, graceMs: 60_000, run: runUntilStoppedInto(stops, turn) })
    live.subscribe({ event: () => undefined, end: (numbered, terminal) => void ends.push(`${numbered.seq}:${terminal.type === 'error' ? terminal.code : 'done'}`) })
    await waitUntil(async () => (await readTurnEvents(database.db, { turnId: turn, after: 0 })).length === 1, 'the delta stored')

    await killLockConnection(b.instanceId) // b froze long enough for PostgreSQL to drop its connection
    expect(await a.sweep()).toBe(1)
    await b.sweep() // awake: its lock taken again (its row written anew), so its heartbeat finds nothing amiss
    expect(stops).toEqual([`${turn}:shutdown`])
    expect(ends).toEqual([`${INTERRUPTED_TERMINAL_SEQ}:turn.interrupted`])
    expect((await readTurnEvents(database.db, { turnId: turn, after: 0 })).map((event) => event.seq)).toEqual([1, INTERRUPTED_TERMINAL_SEQ])
    await liveB.close()
    await a.release()
    await b.release()
  })

  it('runs one sweep at a time: two that both find the lock connection gone open one lock connection, not two (the second waited for ever on the lock of the first)', async () => {
    const b = await register()
    await killLockConnection(b.instanceId)
    await waitUntil(async () => (await lockConnections()) === 0, 'the lock connection gone')
    await Promise.all([b.sweep(), b.sweep()]) // before, the second never resolved (the test timed out)
    expect(await lockConnections()).toBe(1)
    await b.release()
    expect(await lockConnections()).toBe(0)
  })

  it('keeps the heartbeat going while the turns closed during a lapse take their time to end, and waits for them on release', async () => {
    let openGate: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (openGate = resolve))
    let lapses = 0
    const b = await registerInstance({
      db: database.db,
      connection: { connectionString: database.url! },
      sweepIntervalMs: 20,
      onLapsed: async () => {
        lapses += 1
        await gate // a turn slow to honour its stop
      },
    })
    await killLockConnection(b.instanceId)
    await waitUntil(() => lapses === 1, 'the lapse noticed by a sweep of the timer')
    const heartbeatAt = async () => (await database.db.selectFrom('instances').select('heartbeat_at').where('id', '=', b.instanceId).executeTakeFirstOrThrow()).heartbeat_at.getTime()
    const before = await heartbeatAt()
    await waitUntil(async () => (await heartbeatAt()) > before, 'a heartbeat while the closed turns are still ending')
    const releasing = b.release().then(() => 'released')
    // Release alone is two statements and a disconnect: twenty round trips later it would be done.
    const roundTrips = (async () => {
      for (let i = 0; i < 20; i++) await sql`select 1`.execute(database.db)
      return 'twenty round trips'
    })()
    expect(await Promise.race([releasing, roundTrips])).toBe('twenty round trips') // it waits for the closed turns to end
    expect(await lockConnections()).toBe(1)
    openGate()
    expect(await releasing).toBe('released')
    expect(await lockConnections()).toBe(0)
    expect(lapses).toBe(1)
  })

  it('fails a sweep whose lock is still held by a backend PostgreSQL has not let go (the next one takes it), where the sweep waited for hours', async () => {
    const b = await registerInstance({ db: database.db, connection: { connectionString: database.url! }, sweepIntervalMs: 3_600_000, lockWaitMs: 200 })
    const { lock_key: lockKey } = await database.db.selectFrom('instances').select('lock_key').where('id', '=', b.instanceId).executeTakeFirstOrThrow()
    await killLockConnection(b.instanceId)
    await waitUntil(async () => (await lockConnections()) === 0, 'the lock connection gone')
    const stale = new pg.Client({ connectionString: database.url! }) // the old backend, still holding the lock
    await stale.connect()
    try {
      await stale.query('select pg_advisory_lock($1::int, $2::int)', [INSTANCE_LOCK_CLASS, lockKey])
      await expect(b.sweep()).rejects.toThrow(/lock timeout/)
      await stale.query('select pg_advisory_unlock($1::int, $2::int)', [INSTANCE_LOCK_CLASS, lockKey])
      await b.sweep()
      expect(await lockConnections()).toBe(1)
    } finally {
      await stale.end()
    }
    await b.release()
  })
})
