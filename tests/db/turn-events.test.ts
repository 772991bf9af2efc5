// A turn's events in PostgreSQL (issue 38): batched (one row per turn per flush, one statement per
// flush for every turn), the terminal stored with the turn's outcome, announced by NOTIFY to the
// instances that follow a turn, never held back by another turn's bad row, and kept for a bounded
// time and size once the turn ended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { createUser, type User } from '../../src/effects/auth/users.ts'
import { createTurnEventWriter, TURN_EVENTS_CHANNEL, type TurnEventWriter } from '../../src/effects/turn/turn-event-store.ts'
import { pruneTurnEvents, readTurnEvents, storedRange } from '../../src/effects/turn/stored-turn-events.ts'
import { type NumberedEvent, numberedEvent } from '../../src/effects/turn/turn-events.ts'
import { findTurn, recordTurnStarted } from '../../src/effects/turn/turn-records.ts'
import { openTestDatabase, type TestDatabase, TEST_PASSWORD_COST } from '../support/test-database.ts'

let database: TestDatabase
let user: User
beforeAll(async () => {
  database = await openTestDatabase()
  user = await createUser(database.db, { login: 'alice', password: 'a-long-password', hashCost: TEST_PASSWORD_COST })
})
afterAll(async () => {
  await database?.close()
})

async function startTurns(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID())
  await database.db
    .insertInto('turns')
    .values(ids.map((id) => ({ id, user_id: user.id, uri: 'kb://me/', model_id: 'local', status: 'running' as const })))
    .execute()
  return ids
}
const delta = (seq: number, text: string): NumberedEvent => numberedEvent({ seq, name: 'delta', json: JSON.stringify({ text }) })
const done = (seq: number, turnId: string): NumberedEvent => numberedEvent({ seq, name: 'done', json: JSON.stringify({ finish_reason: 'stop', turn_id: turnId, history: [] }) })
/** Removes the stored events of turns a test ended (pruneTurnEvents below counts every ended turn's). */
const forget = (ids: ReadonlyArray<string>) => database.db.deleteFrom('turn_event_batches').where('turn_id', 'in', ids).execute()
const flushed = (writer: TurnEventWriter) => new Promise<ReadonlySet<string>>((resolve) => { const stop = writer.onFlushed((ids) => { stop(); resolve(ids) }) })

describe('the turn event writer', () => {
  it('stores 300 turns × 10 events in one flush: one row per turn, every event back in order', async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    try {
      const ids = await startTurns(300)
      const stored = flushed(writer)
      for (let seq = 1; seq <= 10; seq++) for (const id of ids) writer.append(id, delta(seq, `${id.slice(0, 4)}:${seq} 知 😀 "\n`))
      expect((await stored).size).toBe(300) // one flush took every turn
      const rows = await database.db.selectFrom('turn_event_batches').select(['turn_id', 'first_seq', 'last_seq']).where('turn_id', 'in', ids).execute()
      expect(rows).toHaveLength(300)
      expect(rows.every((row) => row.first_seq === 1 && row.last_seq === 10)).toBe(true)
      const events = await readTurnEvents(database.db, { turnId: ids[7]!, after: 6 })
      expect(events.map((event) => event.seq)).toEqual([7, 8, 9, 10])
      expect(JSON.parse(events[0]!.json)).toEqual({ text: `${ids[7]!.slice(0, 4)}:7 知 😀 "\n` })
    } finally {
      await writer.close()
    }
  })

  it('writes a backlog past a megabyte in several flushes, each turn whole and in order', async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    try {
      const ids = await startTurns(4)
      const flushes: number[] = []
      const stop = writer.onFlushed((flushedIds) => flushes.push(flushedIds.size))
      const text = 'x'.repeat(600 * 1024)
      for (const id of ids) writer.append(id, delta(1, text))
      for (const id of ids) writer.append(id, delta(2, 'after'))
      await expect.poll(() => flushes.reduce((sum, n) => sum + n, 0)).toBe(4)
      stop()
      expect(flushes.length).toBeGreaterThan(1) // not one 2.4 MB statement
      for (const id of ids) expect((await readTurnEvents(database.db, { turnId: id, after: 0 })).map((event) => JSON.parse(event.json).text)).toEqual([text, 'after'])
    } finally {
      await writer.close()
    }
  })

  it('writes a storm of turn ends with a backlog past a megabyte in several flushes, each turn finished with its terminal', async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    try {
      const ids = await startTurns(4)
      const flushes: number[] = []
      const stop = writer.onFlushed((flushedIds) => flushes.push(flushedIds.size))
      const text = 'y'.repeat(600 * 1024)
      for (const id of ids) writer.append(id, delta(1, text))
      const ends = await Promise.all(ids.map((id) => writer.finish(id, done(2, id), { id, status: 'done' })))
      stop()
      expect(ends).toEqual([true, true, true, true])
      expect(flushes.length).toBeGreaterThan(1) // the ends too: not one 2.4 MB statement
      for (const id of ids) {
        expect((await findTurn(database.db, id))!.status).toBe('done')
        expect(await storedRange(database.db, id)).toEqual({ first: 1, terminal: 2 })
      }
      await forget(ids)
    } finally {
      await writer.close()
    }
  })

  it('keeps every byte of events that cross its chunks, multi-byte characters included, flush after flush', async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    try {
      const [id] = await startTurns(1)
      const texts = Array.from({ length: 1500 }, (_, i) => `${i} 知识 😀 `.repeat(1 + (i % 7)))
      for (const [index, text] of texts.slice(0, 700).entries()) writer.append(id!, delta(index + 1, text))
      await flushed(writer)
      for (const [index, text] of texts.slice(700).entries()) writer.append(id!, delta(index + 701, text))
      expect(await writer.finish(id!, done(1501, id!), { id: id!, status: 'done' })).toBe(true)
      const events = await readTurnEvents(database.db, { turnId: id!, after: 0 })
      expect(events.slice(0, -1).map((event) => JSON.parse(event.json).text)).toEqual(texts)
      expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 1501 }, (_, i) => i + 1))
      await forget([id!])
    } finally {
      await writer.close()
    }
  })

  it('stores a turn\'s terminal with its outcome row in one statement, and NOTIFYs only the turns another instance follows', async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    const listener = new pg.Client({ connectionString: database.url })
    await listener.connect()
    const payloads: string[] = []
    listener.on('notification', (message) => payloads.push(message.payload ?? ''))
    await listener.query(`LISTEN ${TURN_EVENTS_CHANNEL}`)
    try {
      const [followed, alone] = await startTurns(2)
      writer.announce(followed!, true)
      writer.append(followed!, delta(1, 'a'))
      writer.append(alone!, delta(1, 'b'))
      expect(await writer.finish(followed!, done(2, followed!), { id: followed!, status: 'done', finishReason: 'stop', usage: { total_tokens: 3 } })).toBe(true)
      expect(await findTurn(database.db, followed!)).toMatchObject({ status: 'done', finish_reason: 'stop', usage: { total_tokens: 3 } })
      expect(await storedRange(database.db, followed!)).toEqual({ first: 1, terminal: 2 })
      expect(await storedRange(database.db, alone!)).toEqual({ first: 1, terminal: undefined }) // stored in the same flush
      await expect.poll(() => payloads).toEqual([followed])
    } finally {
      await listener.end()
      await writer.close()
    }
  })

  it("a turn whose row is gone, or whose outcome the database refuses, does not hold back another turn's events", async () => {
    const writer = createTurnEventWriter({ db: database.db, flushMs: 20 })
    try {
      const [good, refused] = await startTurns(2)
      const gone = randomUUID() // its user was deleted meanwhile: no row
      writer.append(gone, delta(1, 'lost'))
      writer.append(good!, delta(1, 'kept'))
      writer.append(refused!, delta(1, 'refused'))
      const bad = { id: refused!, status: 'bogus' } as unknown as Parameters<TurnEventWriter['finish']>[2] // violates the status check
      expect(await writer.finish(refused!, done(2, refused!), bad)).toBe(false)
      await expect.poll(() => readTurnEvents(database.db, { turnId: good!, after: 0 })).toEqual([delta(1, 'kept')])
      expect(await readTurnEvents(database.db, { turnId: gone, after: 0 })).toEqual([])
      expect((await findTurn(database.db, refused!))!.status).toBe('running')
      // The next flush is whole again.
      writer.append(good!, delta(2, 'again'))
      expect(await writer.finish(good!, done(3, good!), { id: good!, status: 'done' })).toBe(true)
      expect((await readTurnEvents(database.db, { turnId: good!, after: 0 })).map((event) => event.seq)).toEqual([1, 2, 3])
    } finally {
      await writer.close()
    }
  })
})

describe('pruneTurnEvents', () => {
  it("removes ended turns' events past the retention time, then the oldest past the size limit; never a running turn's", async () => {
    const [old, recent, newest, running] = await startTurns(4)
    const batch = (turnId: string, terminal: boolean, bytes: number, age: string) =>
      database.db
        .insertInto('turn_event_batches')
        .values({ turn_id: turnId, first_seq: 1, last_seq: 1, events: numberedEvent({ seq: 1, name: 'delta', json: '{}' }).frame, bytes, terminal, created_at: new Date(Date.now() - Number(age)) })
        .execute()
    await batch(old!, true, 10, String(3_600_000)) // ended an hour ago
    await batch(recent!, true, 600, String(60_000)) // a minute ago
    await batch(newest!, true, 600, '0')
    await batch(running!, false, 5_000, String(3_600_000)) // still running: kept whatever its age or size
    expect(await pruneTurnEvents(database.db, { retentionSeconds: 600, maxBytes: 1_000 })).toBe(2)
    const left = await database.db.selectFrom('turn_event_batches').select('turn_id').where('turn_id', 'in', [old!, recent!, newest!, running!]).execute()
    expect(left.map((row) => row.turn_id).sort()).toEqual([newest!, running!].sort())
  })
})
