// Which server processes are alive, as PostgreSQL sees it. Each process registers an instance
// row and holds a session-level advisory lock on its key on a connection of its own; the lock
// goes when the process (or its connection) dies. It also renews a lease (`heartbeat_at`, every
// third of `leaseSeconds`): a host that froze or was cut off, whose connection PostgreSQL still
// believes in, is dead once its lease runs out. At registration and then with every heartbeat,
// the running turns of dead instances are closed as `turn.interrupted` (their clients get that
// terminal event), so several processes sharing one database only ever close dead ones' turns,
// within the lease of a death. An instance that finds its own lease lapsed or its lock lost (it
// froze; the others may have closed its turns meanwhile) registers again and then calls `onLapsed`, which ends the
// turns it still runs that were closed meanwhile (live-turns.ts `endClosedElsewhere`).
import pg from 'pg'
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type Kysely, sql } from 'kysely'
import type { Logger } from '../logging/logger.ts'
import type { DB } from '../db/schema.ts'
import { failTurnsOfDeadInstances, INSTANCE_LOCK_CLASS } from './turn-records.ts'

export interface InstanceRegistration {
  readonly instanceId: string
  /** Closes dead instances' running turns now (or joins the sweep under way); resolves to how many were closed. */
  readonly sweep: () => Promise<number>
  /** Stops the sweeps, forgets this instance and closes its lock connection (idempotent). */
  readonly release: () => Promise<void>
}

/** Inserts (or finds again) the instance row and takes its lock, in one transaction on `client`. */
async function lockInstance(
  client: pg.Client,
  { instanceId, host, pid, leaseSeconds, lockWaitMs }: { instanceId: string; host: string; pid: number; leaseSeconds: number; lockWaitMs: number },
): Promise<void> {
  // The row becomes visible together with a held lock: no other process can see it unlocked.
  await client.query('begin')
  try {
    const { rows } = await client.query<{ lock_key: number }>(
      `insert into instances (id, host, pid, lease_seconds) values ($1, $2, $3, $4)
       on conflict (id) do update set host = excluded.host, lease_seconds = excluded.lease_seconds, heartbeat_at = now() returning lock_key`,
      [instanceId, host.slice(0, 255), pid, leaseSeconds],
    )
    // Bounded: a lock still held (by this instance's own old backend, which PostgreSQL has not yet
    // noticed is gone) fails this sweep, and the next one tries again, instead of waiting for hours
    // with every later sweep and the release queued behind it.
    await client.query(`set local lock_timeout = '${Math.max(1, Math.floor(lockWaitMs))}ms'`)
    await client.query('select pg_advisory_lock($1::int, $2::int)', [INSTANCE_LOCK_CLASS, rows[0]!.lock_key])
    await client.query('commit')
  } catch (error) {
    await client.query('rollback').catch(() => {})
    throw error
  }
}

export async function registerInstance({
  db,
  connection,
  logger,
  onInterrupted,
  onLapsed,
  leaseSeconds = 15,
  sweepIntervalMs = Math.floor((leaseSeconds * 1000) / 3),
  lockWaitMs = 5_000,
  instanceId = randomUUID(),
  host = hostname(),
  pid = process.pid,
}: {
  db: Kysely<DB>
  /** Connection settings of the same database as `db` (`DatabaseHandle.connection`): the lock needs a connection outside the pool. */
  connection: pg.ClientConfig
  logger?: Logger | undefined
  /** The model ids of the dead instances' turns this instance closed as `turn.interrupted` (metrics). */
  onInterrupted?: ((modelIds: ReadonlyArray<string>) => void) | undefined
  /** Called once this instance, having found its lease lapsed, holds a new one (its failure is logged). */
  onLapsed?: (() => Promise<unknown>) | undefined
  /** `turns.leaseSeconds`: how long this instance counts as alive without a heartbeat. */
  leaseSeconds?: number
  /** The heartbeat and the sweep of dead instances' turns (default: a third of the lease). */
  sweepIntervalMs?: number
  /** How long taking this instance's lock may wait before the sweep fails (the next one tries again). */
  lockWaitMs?: number
  instanceId?: string
  host?: string
  pid?: number
}): Promise<InstanceRegistration> {
  let client: pg.Client | undefined
  let released = false
  /** The heartbeat found this instance's row gone, or its lock had to be taken again: `onLapsed` is due once it is registered again. */
  let lapsed = false

  const connect = async () => {
    // keep-alive: a connection whose peer vanished (a network cut) is found dead, not waited on for ever
    const next = new pg.Client({ ...connection, application_name: `knowagent instance ${instanceId}`, keepAlive: true, keepAliveInitialDelayMillis: 10_000 })
    const lost = (reason: string) => {
      if (client !== next) return
      client = undefined // locked no longer: take it again on the next sweep
      logger?.warn('instance lock connection lost', { instanceId, reason })
    }
    next.on('error', (error) => lost(error.message))
    next.on('end', () => lost('connection ended'))
    await next.connect()
    try {
      await lockInstance(next, { instanceId, host, pid, leaseSeconds, lockWaitMs })
    } catch (error) {
      await next.end().catch(() => {})
      throw error
    }
    client = next
  }

  /** Our lock is held only while its connection answers: check before judging anyone else. */
  const ensureLocked = async () => {
    const current = client
    if (current) {
      const alive = await current.query('select 1').then(
        () => true,
        () => false,
      )
      if (alive) return
      if (client === current) client = undefined
      await current.end().catch(() => {})
    }
    if (released) return
    await connect()
    // Without its lock for a while (a freeze PostgreSQL noticed), this instance may have been judged
    // dead and its turns closed, its row gone and written again by `connect` just now.
    lapsed = true
  }

  /** Renews the lease; a row swept meanwhile (this instance was judged dead) is registered again, with a new lock. */
  const heartbeat = async () => {
    const current = client
    if (!current) return
    const renewed = await db.updateTable('instances').set({ heartbeat_at: sql<Date>`now()` }).where('id', '=', instanceId).executeTakeFirst()
    if (Number(renewed.numUpdatedRows) > 0 || released) return
    logger?.warn('instance lease had lapsed; registering again', { instanceId })
    lapsed = true
    if (client === current) client = undefined
    await current.end().catch(() => {})
  }

  /** `onLapsed` while it runs: not awaited by the sweeps (its turns may take a while to end; the heartbeat must go on). */
  let endingLapsed: Promise<unknown> | undefined
  const sweepOnce = async () => {
    await ensureLocked()
    await heartbeat()
    await ensureLocked()
    if (lapsed && client !== undefined && endingLapsed === undefined && !released) {
      lapsed = false
      endingLapsed = Promise.resolve()
        .then(() => onLapsed?.())
        .catch((error: unknown) => logger?.warn('could not end the turns closed while the lease had lapsed', { instanceId, error: error instanceof Error ? error.message : String(error) }))
        .catch(() => undefined)
        .finally(() => (endingLapsed = undefined))
    }
    const closed = await failTurnsOfDeadInstances(db, { self: instanceId, onClosed: onInterrupted })
    if (closed > 0) logger?.warn('closed turns left running by a stopped process', { turns: closed })
    return closed
  }
  /**
   * One sweep at a time: a sweep slower than the interval (PostgreSQL slow to answer) is joined, not
   * run beside another — two at once could each find the lock connection gone and open one, and
   * the second would wait for ever on the lock the first holds.
   */
  let sweeping: Promise<number> | undefined
  const sweepOnly = () => (sweeping ??= sweepOnce().finally(() => (sweeping = undefined)))
  /** A sweep asked for (by the process or a test): it resolves once the turns closed meanwhile have ended too. */
  const sweep = async () => {
    const closed = await sweepOnly()
    await endingLapsed
    return closed
  }

  await connect()
  try {
    await sweepOnly()
  } catch (error) {
    await client?.end().catch(() => {})
    throw error
  }

  const timer = setInterval(() => {
    if (sweeping !== undefined) return // the last one is still running: this tick is skipped
    sweepOnly().catch((error: Error) => logger?.warn('instance sweep failed', { instanceId, error: error.message }))
  }, sweepIntervalMs)
  timer.unref()

  let releasing: Promise<void> | undefined
  const release = () =>
    (releasing ??= (async () => {
      released = true
      clearInterval(timer)
      await sweeping?.catch(() => undefined) // a tick's sweep is the one under way, if any
      await endingLapsed
      const last = client
      client = undefined
      if (!last) return
      // Forgetting the row first: turns still marked running are then someone else's to close.
      await last.query('delete from instances where id = $1', [instanceId]).catch(() => {})
      await last.end().catch(() => {})
    })())

  return { instanceId, sweep, release }
}
