// What one person may store (docs/security.md): every version of every file counts towards
// `limits.userStorageMb` — the files in the Trash too (trash.ts: emptying it frees the space), and the versions written in the last minute towards
// `limits.uploadMbPerMinute`, both read from `file_versions` itself — so they hold across server
// processes and need no counters of their own. An upload checks both inside its own transaction,
// after its versions are written and under a lock of the owner's (two uploads of one person are
// checked one after the other): over either, the transaction is rolled back and nothing is stored.
// An unchanged file (the bytes of its current version) adds nothing and so never fails them.
import * as Data from 'effect/Data'
import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'

const MIB = 1024 * 1024
/** The lock's class (first key): "quot" in ASCII, beside the tree lock's "know". */
const STORAGE_LOCK_CLASS = 0x71756f74
const RATE_WINDOW_SECONDS = 60

export interface StorageLimits {
  /** Every version of every file of one person, in MiB. */
  readonly userStorageMb: number
  /** Bytes of new versions one person may write in any 60 s, in MiB. */
  readonly uploadMbPerMinute: number
}

/** Over `limits.userStorageMb`. HTTP 413. */
export class StorageQuotaExceeded extends Data.TaggedError('StorageQuotaExceeded')<{ readonly usedBytes: number; readonly limitMb: number }> {
  readonly code = 'storage_quota_exceeded'
  readonly status = 413
  override get message() {
    return `this would make your files take ${formatMib(this.usedBytes)} MiB with every version, over your ${this.limitMb} MiB (limits.userStorageMb); nothing was stored — delete files and empty your Trash to make room`
  }
}

/** Over `limits.uploadMbPerMinute`. HTTP 429 with Retry-After. */
export class UploadRateLimited extends Data.TaggedError('UploadRateLimited')<{ readonly limitMb: number; readonly retryAfterSeconds: number }> {
  readonly code = 'upload_rate_limited'
  readonly status = 429
  override get message() {
    return `at most ${this.limitMb} MiB of new file versions a minute (limits.uploadMbPerMinute); nothing was stored — retry in ${this.retryAfterSeconds} s`
  }
  get headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) }
  }
}

const formatMib = (bytes: number) => (bytes / MIB).toFixed(1)

/** Bytes of every version of every file `ownerId` has, in the Trash too (what counts towards the quota). */
export async function storageUsedBytes(db: Db, ownerId: string): Promise<number> {
  const row = await db
    .selectFrom('file_versions')
    .innerJoin('all_nodes', 'all_nodes.id', 'file_versions.node_id')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('file_versions.size'), sql<string>`0`).as('bytes'))
    .where('all_nodes.owner_id', '=', ownerId)
    .executeTakeFirstOrThrow()
  return Number(row.bytes)
}

/**
 * Takes the owner's storage lock for the rest of `trx` and checks both limits with what `trx` has
 * written so far counted. Call it after writing, before commit; it throws StorageQuotaExceeded or
 * UploadRateLimited (the caller's transaction then rolls back).
 */
export async function checkStorageLimits(trx: Db, { ownerId, limits }: { ownerId: string; limits: StorageLimits }): Promise<void> {
  await sql`select pg_advisory_xact_lock(${STORAGE_LOCK_CLASS}::int4, hashtext(${ownerId}::text))`.execute(trx)
  const used = await storageUsedBytes(trx, ownerId)
  if (used > limits.userStorageMb * MIB) throw new StorageQuotaExceeded({ usedBytes: used, limitMb: limits.userStorageMb })
  const recent = await sql<{ bytes: string; oldest: Date | null }>`
    select coalesce(sum(v.size), 0) as bytes, min(v.created_at) as oldest
      from file_versions v join all_nodes n on n.id = v.node_id
     where n.owner_id = ${ownerId} and v.created_at > now() - make_interval(secs => ${RATE_WINDOW_SECONDS})`.execute(trx)
  const { bytes, oldest } = recent.rows[0]!
  if (Number(bytes) > limits.uploadMbPerMinute * MIB) {
    // the versions written by this transaction carry its start time: the window frees up as the oldest earlier ones leave it
    const waitMs = oldest === null ? RATE_WINDOW_SECONDS * 1000 : new Date(oldest).getTime() + RATE_WINDOW_SECONDS * 1000 - Date.now()
    throw new UploadRateLimited({ limitMb: limits.uploadMbPerMinute, retryAfterSeconds: Math.min(RATE_WINDOW_SECONDS, Math.max(1, Math.ceil(waitMs / 1000))) })
  }
}
