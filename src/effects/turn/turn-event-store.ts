// A turn's events in PostgreSQL, where a client that reconnects to any instance can read them
// (migrations/20261208300000_turn_events.ts). One writer per process batches the events of every
// turn it runs: a flush every `flushMs` (and at once when a turn ends) is ONE statement that
// inserts a batch row per turn with new events, closes the turns that ended — their terminal
// event and their `turns` row together, so a turn is never finished without its terminal nor the
// reverse — and NOTIFYs the turns that another instance follows. 300 streams are one insert per
// flush, not one per delta. Batches are kept for the turn's life and then for a bounded retention
// (`pruneTurnEvents` in stored-turn-events.ts: time since the turn ended, and a total size).
import { type CompiledQuery, sql } from 'kysely'
import { registerNamedStatement } from '../db/named-statements.ts'
import type { Db } from '../db/schema.ts'
import type { Logger } from '../logging/logger.ts'
import type { NumberedEvent } from './turn-events.ts'

/** NOTIFY channel of stored events; the payload is the ids of the turns with new events, comma-separated. */
export const TURN_EVENTS_CHANNEL = 'knowagent_turn_events'

/** A NOTIFY payload is at most 8000 bytes: ids are split over several. */
const NOTIFY_PAYLOAD_BYTES = 7900

/** How a turn's row is finished, as `recordTurnFinished` writes it. */
export interface TurnFinishRecord {
  readonly id: string
  readonly status: 'done' | 'failed' | 'cancelled'
  readonly finishReason?: string | undefined
  readonly error?: { readonly code: string; readonly message: string } | undefined
  readonly counters?: unknown
  readonly usage?: unknown
}

/**
 * A turn's events waiting for the next flush, as UTF-8 bytes: each frame is copied in as it is
 * appended, so the strings die young (a burst of streams would otherwise hold every frame in the
 * JavaScript heap until its flush, and promote them: measured, +70 MB and seconds of GC). The
 * bytes go into fixed-size chunks of the writer's pool, given back once written, rather than a
 * buffer per batch that doubles as it grows: those live past a flush (so they are promoted) and
 * only a full GC frees them.
 */
interface PendingBatch {
  firstSeq: number
  lastSeq: number
  readonly chunks: Buffer[]
  /** Bytes used in each chunk (every chunk but the last may end short after a put-back). */
  readonly used: number[]
  /** Bytes in all. */
  bytes: number
}

const CHUNK_BYTES = 16 * 1024
/** Chunks kept for reuse at most (4 MB); more are left to the garbage collector. */
const MAX_FREE_CHUNKS = 256
/**
 * About how much one flush writes at most (its turns' whole batches: one may be larger). pg copies
 * the flush's parameter twice more on its way out, into buffers it does not reuse: at 1 MB a
 * flush, 100 burst streams held 41–46 MB of array buffers at their peak, at 256 KB 23 MB (without
 * storing events: 8 MB).
 */
const FLUSH_BYTES = 256 * 1024

/** The writer's chunks: taken for pending bytes, given back once they are written. */
class ChunkPool {
  private readonly free: Buffer[] = []
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES)
  }
  give(chunks: ReadonlyArray<Buffer>): void {
    for (const chunk of chunks) if (this.free.length < MAX_FREE_CHUNKS) this.free.push(chunk)
  }
}

function appendBytes(pool: ChunkPool, batch: PendingBatch, text: string): void {
  const last = batch.chunks.length - 1
  const room = CHUNK_BYTES - batch.used[last]!
  if (text.length * 3 <= room) {
    // UTF-8 bytes of a UTF-16 string at most: it fits
    const written = batch.chunks[last]!.write(text, batch.used[last]!)
    batch.used[last]! += written
    batch.bytes += written
    return
  }
  copyIn(pool, batch, Buffer.from(text, 'utf8')) // a long frame, or one at a chunk's end
}

function copyIn(pool: ChunkPool, batch: PendingBatch, bytes: Buffer): void {
  for (let at = 0; at < bytes.length; ) {
    let last = batch.chunks.length - 1
    if (batch.used[last] === CHUNK_BYTES) {
      batch.chunks.push(pool.take())
      batch.used.push(0)
      last += 1
    }
    const count = Math.min(bytes.length - at, CHUNK_BYTES - batch.used[last]!)
    bytes.copy(batch.chunks[last]!, batch.used[last]!, at, at + count)
    batch.used[last]! += count
    batch.bytes += count
    at += count
  }
}

function newBatch(pool: ChunkPool, seq: number, text: string): PendingBatch {
  const batch: PendingBatch = { firstSeq: seq, lastSeq: seq, chunks: [pool.take()], used: [0], bytes: 0 }
  appendBytes(pool, batch, text)
  return batch
}

export interface TurnEventWriter {
  /** Queues one event of a running turn (numbered by the caller, in order). */
  readonly append: (turnId: string, event: NumberedEvent) => void
  /**
   * Stores what is queued for the turn, its terminal event and its outcome in one statement (with
   * the other turns' queued events). Resolves true once written, false if the database refused
   * (logged; the events stay queued and the next flush tries again).
   */
  readonly finish: (turnId: string, terminal: NumberedEvent, outcome: TurnFinishRecord) => Promise<boolean>
  /** Whether the turn's flushes NOTIFY (another instance follows it). */
  readonly announce: (turnId: string, on: boolean) => void
  /** NOTIFYs the turn now (an instance that just started following it reads what it missed). */
  readonly announceNow: (turnId: string) => void
  /** Called after each flush that stored events, with the ids of the turns it stored. */
  readonly onFlushed: (listener: (turnIds: ReadonlySet<string>) => void) => () => void
  /** Writes what is queued and stops. */
  readonly close: () => Promise<void>
}

/** Failed flushes `close` tries before it gives up on what is left. */
const CLOSE_TRIES = 3

/** Separators of the flush's one parameter: control characters JSON never holds raw. */
const FIELD = '\x1f'
const RECORD = Buffer.from('\x1e')

/**
 * The flush: one statement, one shape whatever the number of turns, so it is compiled once. The
 * batches travel as ONE binary parameter (UTF-8; a record per turn: id, first, last, terminal,
 * frames), decoded and split by PostgreSQL: no string built, escaped or copied event by event here.
 */
function flushQuery(
  db: Db,
  rows: {
    batches: Buffer
    finishes: { ids: string[]; statuses: string[]; reasons: (string | null)[]; codes: (string | null)[]; messages: (string | null)[]; counters: (string | null)[]; usages: (string | null)[] }
    payloads: string[]
  },
): CompiledQuery<{ written: number; finished: string[] }> {
  const { finishes: f } = rows
  return sql<{ written: number; finished: string[] }>`
    with commit_mode as (
      -- events alone are not waited for on disk (a crash of PostgreSQL itself may lose their last
      -- moment, as of admissions); a flush that finishes a turn is, as every outcome is
      select set_config('synchronous_commit', case when cardinality(${f.ids}::uuid[]) = 0 then 'off' else 'on' end, true)
    ), incoming as (
      select split_part(r, E'\x1f', 1)::uuid as turn_id, split_part(r, E'\x1f', 2)::int as first_seq, split_part(r, E'\x1f', 3)::int as last_seq,
        split_part(r, E'\x1f', 4)::bool as terminal, split_part(r, E'\x1f', 5) as events
      from string_to_table(convert_from(${rows.batches}::bytea, 'UTF8'), E'\x1e') r where r <> ''
    ), written as (
      insert into turn_event_batches (turn_id, first_seq, last_seq, events, bytes, terminal)
      select i.turn_id, i.first_seq, i.last_seq, i.events, octet_length(i.events), i.terminal from incoming i
      -- a turn deleted meanwhile (its user was) must not fail the others; one closed elsewhere (its
      -- instance's lease lapsed) has its end stored already: nothing more of it, but its own end
      where exists (select 1 from turns t where t.id = i.turn_id and (t.status = 'running' or i.terminal))
      on conflict do nothing
      returning 1
    ), finished as (
      update turns t set status = f.status, finish_reason = f.finish_reason, error_code = f.error_code, error_message = f.error_message,
        counters = f.counters::jsonb, usage = f.usage::jsonb, finished_at = now()
      from unnest(${f.ids}::uuid[], ${f.statuses}::text[], ${f.reasons}::text[], ${f.codes}::text[], ${f.messages}::text[], ${f.counters}::text[], ${f.usages}::text[])
        as f(id, status, finish_reason, error_code, error_message, counters, usage)
      where t.id = f.id and t.status = 'running'
      returning t.id
    )
    select (select count(*) from commit_mode)::int as commit_mode, (select count(*) from written)::int as written,
      array(select id::text from finished) as finished,
      (select count(pg_notify(${TURN_EVENTS_CHANNEL}, p)) from unnest(${rows.payloads}::text[]) p)::int as notified`.compile(db)
}

let flushSqlRegistered = false

/** Comma-separated ids, each payload under the NOTIFY limit. */
export function notifyPayloads(turnIds: Iterable<string>): string[] {
  const payloads: string[] = []
  let current = ''
  for (const id of turnIds) {
    if (current !== '' && current.length + 1 + id.length > NOTIFY_PAYLOAD_BYTES) {
      payloads.push(current)
      current = ''
    }
    current = current === '' ? id : `${current},${id}`
  }
  if (current !== '') payloads.push(current)
  return payloads
}

/** What one turn has for a flush: events, its end, a NOTIFY. */
interface Unit {
  readonly turnId: string
  readonly batch: PendingBatch | undefined
  readonly finish: { readonly terminal: NumberedEvent; readonly outcome: TurnFinishRecord; readonly done: Array<(ok: boolean) => void> } | undefined
  readonly notify: boolean
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint): the rows are at fault, not the connection. */
const isDataError = (error: unknown): boolean => /^2[23]/.test(String((error as { code?: unknown } | null)?.code ?? ''))

export function createTurnEventWriter({ db, logger, flushMs = 40 }: { db: Db; logger?: Logger | undefined; flushMs?: number }): TurnEventWriter {
  let pending = new Map<string, PendingBatch>()
  const pool = new ChunkPool()
  /** The flush's one parameter, reused from flush to flush (one flush at a time). */
  let flushBuffer = Buffer.allocUnsafe(FLUSH_BYTES + CHUNK_BYTES)
  let finishes = new Map<string, NonNullable<Unit['finish']>>()
  const announced = new Set<string>()
  let announceOnce = new Set<string>()
  const listeners = new Set<(turnIds: ReadonlySet<string>) => void>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let flushing: Promise<void> | undefined
  let again = false
  let closed = false
  let failures = 0
  /** After a data error, the next flush writes each turn on its own: one turn's bad row cannot hold back the others. */
  let isolate = false

  const schedule = (delayMs: number) => {
    if (closed) return // close() writes what is left itself
    if (flushing) {
      if (delayMs === 0) again = true
      return
    }
    if (timer !== undefined) {
      if (delayMs > 0) return
      clearTimeout(timer)
    }
    timer = setTimeout(() => {
      timer = undefined
      flushing = flush().finally(() => {
        flushing = undefined
        if (again || (finishes.size > 0 && failures === 0)) {
          again = false
          schedule(0)
        } else if (pending.size > 0 || finishes.size > 0 || announceOnce.size > 0) schedule(retryDelay())
      })
    }, delayMs)
  }
  const retryDelay = () => (failures === 0 ? flushMs : Math.min(5_000, flushMs * 2 ** Math.min(failures, 7)))

  const append = (turnId: string, event: NumberedEvent, terminal = false): void => {
    const batch = pending.get(turnId)
    if (batch === undefined) {
      pending.set(turnId, newBatch(pool, event.seq, event.frame))
      if (!terminal) schedule(flushMs)
      return
    }
    batch.lastSeq = event.seq
    appendBytes(pool, batch, event.frame)
  }

  /**
   * Takes what is queued as one unit per turn — the turns that end first, then the others — while
   * the flush holds less than FLUSH_BYTES (the rest goes in the next flush, at once): a flush
   * after a slow one does not copy the whole backlog into one statement, nor does a storm of turn
   * ends (100 burst streams ending together put every turn's backlog in one statement).
   */
  const takeUnits = (): Unit[] => {
    const ids = [...new Set([...finishes.keys(), ...announceOnce, ...pending.keys()])]
    const units: Unit[] = []
    let bytes = 0
    for (const turnId of ids) {
      const batch = pending.get(turnId)
      const finish = finishes.get(turnId)
      if (units.length > 0 && bytes >= FLUSH_BYTES) break
      units.push({ turnId, batch, finish, notify: announceOnce.has(turnId) || (batch !== undefined && announced.has(turnId)) })
      bytes += batch?.bytes ?? 0
      pending.delete(turnId)
      finishes.delete(turnId)
      announceOnce.delete(turnId)
    }
    if (pending.size > 0 || finishes.size > 0 || announceOnce.size > 0) again = true
    return units
  }

  /** Puts units back in front of what arrived meanwhile: order is kept, nothing is lost. */
  const putBack = (units: ReadonlyArray<Unit>) => {
    for (const unit of units) {
      if (unit.batch) {
        const later = pending.get(unit.turnId)
        if (later) {
          unit.batch.lastSeq = later.lastSeq
          unit.batch.chunks.push(...later.chunks)
          unit.batch.used.push(...later.used)
          unit.batch.bytes += later.bytes
        }
        pending.set(unit.turnId, unit.batch)
      }
      if (unit.finish && !finishes.has(unit.turnId)) finishes.set(unit.turnId, unit.finish)
      if (unit.notify) announceOnce.add(unit.turnId)
    }
  }

  const write = async (units: ReadonlyArray<Unit>): Promise<void> => {
    const heads = units.map(({ turnId, batch, finish }) =>
      batch ? turnId + FIELD + batch.firstSeq + FIELD + batch.lastSeq + FIELD + (finish?.terminal.seq === batch.lastSeq ? 't' : 'f') + FIELD : '',
    )
    // Each head is ASCII: its length is its bytes.
    const size = units.reduce((sum, unit, index) => sum + (unit.batch ? heads[index]!.length + unit.batch.bytes + RECORD.length : 0), 0)
    if (flushBuffer.length < size) flushBuffer = Buffer.allocUnsafe(size)
    let at = 0
    const rows = { ids: [] as string[], statuses: [] as string[], reasons: [] as (string | null)[], codes: [] as (string | null)[], messages: [] as (string | null)[], counters: [] as (string | null)[], usages: [] as (string | null)[] }
    for (const [index, { batch, finish }] of units.entries()) {
      if (batch) {
        at += flushBuffer.write(heads[index]!, at, 'latin1')
        for (const [chunk, part] of batch.chunks.entries()) at += part.copy(flushBuffer, at, 0, batch.used[chunk]!)
        at += RECORD.copy(flushBuffer, at)
      }
      if (finish) {
        const { outcome } = finish
        rows.ids.push(outcome.id)
        rows.statuses.push(outcome.status)
        rows.reasons.push(outcome.finishReason ?? null)
        rows.codes.push(outcome.error?.code ?? null)
        rows.messages.push(outcome.error?.message?.slice(0, 2000) ?? null)
        rows.counters.push(outcome.counters === undefined ? null : JSON.stringify(outcome.counters))
        rows.usages.push(outcome.usage === undefined ? null : JSON.stringify(outcome.usage))
      }
    }
    const query = flushQuery(db, { batches: flushBuffer.subarray(0, at), finishes: rows, payloads: notifyPayloads(units.filter((unit) => unit.notify).map((unit) => unit.turnId)) })
    if (!flushSqlRegistered) {
      registerNamedStatement(query.sql) // one shape: parsed once per connection
      flushSqlRegistered = true
    }
    try {
      await db.executeQuery(query)
    } finally {
      // A flush of one huge turn does not keep its buffer for ever.
      if (flushBuffer.length > 4 * FLUSH_BYTES) flushBuffer = Buffer.allocUnsafe(FLUSH_BYTES + CHUNK_BYTES)
    }
  }

  const written = (units: ReadonlyArray<Unit>) => {
    for (const unit of units) {
      if (unit.batch) pool.give(unit.batch.chunks)
      for (const done of unit.finish?.done.splice(0) ?? []) done(true)
      if (unit.finish) announced.delete(unit.turnId)
    }
    const ids = new Set(units.filter((unit) => unit.batch).map((unit) => unit.turnId))
    if (ids.size > 0) for (const listener of [...listeners]) listener(ids)
  }

  /** A turn whose rows the database refuses on their own: its events are lost (logged), its outcome is still recorded. */
  const refused = async (unit: Unit, error: unknown) => {
    logger?.error('turn events refused by the database; dropped', { turnId: unit.turnId, error: error instanceof Error ? error.message : String(error) })
    if (unit.batch) pool.give(unit.batch.chunks)
    if (unit.finish) {
      const ok = await recordOutcome(db, unit.finish.outcome).catch(() => false)
      for (const done of unit.finish.done.splice(0)) done(ok)
    }
  }

  async function flush(): Promise<void> {
    const units = takeUnits()
    if (units.length === 0) return
    if (!isolate) {
      try {
        await write(units)
        failures = 0
        written(units)
      } catch (error) {
        failures += 1
        again = false // retried after the backoff, not at once
        isolate = isDataError(error) && units.length > 1
        if (isDataError(error) && units.length === 1) return void (await refused(units[0]!, error))
        putBack(units)
        for (const unit of units) for (const done of unit.finish?.done.splice(0) ?? []) done(false)
        if (failures === 1 || failures % 20 === 0) logger?.warn('could not store turn events; retrying', { failures, error: error instanceof Error ? error.message : String(error) })
      }
      return
    }
    isolate = false
    const failed: Unit[] = []
    for (const unit of units) {
      try {
        await write([unit])
        written([unit])
      } catch (error) {
        if (isDataError(error)) await refused(unit, error)
        else failed.push(unit)
      }
    }
    failures = failed.length === 0 ? 0 : failures + 1
    if (failed.length > 0) again = false
    putBack(failed)
  }

  return {
    append: (turnId, event) => {
      if (!closed) append(turnId, event)
    },
    finish: (turnId, terminal, outcome) =>
      new Promise<boolean>((resolve) => {
        append(turnId, terminal, true)
        const queued = finishes.get(turnId)
        finishes.set(turnId, { terminal, outcome, done: [...(queued?.done ?? []), resolve] })
        schedule(0)
      }),
    announce: (turnId, on) => {
      if (on) announced.add(turnId)
      else announced.delete(turnId)
    },
    announceNow: (turnId) => {
      announceOnce.add(turnId)
      schedule(0)
    },
    onFlushed: (listener) => {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    close: async () => {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      await flushing
      // One flush at a time (they share their parameter's buffer), until all is written: a flush
      // takes at most FLUSH_BYTES. A database that keeps refusing ends it after a few tries.
      for (let tries = 0; (pending.size > 0 || finishes.size > 0) && tries < CLOSE_TRIES; tries += failures === 0 ? 0 : 1) {
        flushing = flush()
        await flushing
      }
      flushing = undefined
    },
  }
}

/** A turn's outcome row alone (its events could not be stored). */
async function recordOutcome(db: Db, outcome: TurnFinishRecord): Promise<boolean> {
  const result = await db
    .updateTable('turns')
    .set({
      status: outcome.status,
      finish_reason: outcome.finishReason ?? null,
      error_code: outcome.error?.code ?? null,
      error_message: outcome.error?.message?.slice(0, 2000) ?? null,
      finished_at: sql<Date>`now()`,
    })
    .where('id', '=', outcome.id)
    .where('status', '=', 'running')
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}
